// Package benchfile holds the file handling that the retrieval benchmarks
// (retrieve/bm25/scale, retrieve/peers) share: an index's size on disk,
// and corpus and query files written through a large buffer.
package benchfile

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
)

// DirSize returns the bytes of the regular files below dir.
func DirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// Write creates path and has fill write it through a 1 MiB buffer; the
// first error of fill, the flush or the close is returned.
func Write(path string, fill func(w *bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteCorpus writes the passages that next yields, until io.EOF, as a
// JSONL corpus file of {id, title, text} (distill's jsonl layout, which
// every engine's loader reads) at path, and returns how many it wrote.
func WriteCorpus(path string, next func() (data.Passage, error)) (int, error) {
	n := 0
	err := Write(path, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		for {
			p, err := next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			n++
			if err := enc.Encode(struct {
				ID    string `json:"id"`
				Title string `json:"title"`
				Text  string `json:"text"`
			}{p.ID, p.Title, p.Text}); err != nil {
				return err
			}
		}
	})
	return n, err
}
