package benchfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
)

func TestWriteAndDirSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a": "12345", "sub/b": "678"} {
		err := Write(filepath.Join(dir, name), func(w *bufio.Writer) error {
			_, err := w.WriteString(text)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := DirSize(dir)
	if err != nil || got != 8 {
		t.Errorf("DirSize = %d, %v; want 8, nil", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub/b")); string(b) != "678" {
		t.Errorf("sub/b holds %q, want %q", b, "678")
	}
}

func TestWriteReturnsFillError(t *testing.T) {
	want := errors.New("fill failed")
	err := Write(filepath.Join(t.TempDir(), "f"), func(*bufio.Writer) error { return want })
	if !errors.Is(err, want) {
		t.Errorf("Write = %v, want %v", err, want)
	}
	if _, err := DirSize(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("DirSize of a missing directory: no error")
	}
}

// TestWriteCorpus writes passages that distill's corpus reader reads back,
// and passes on the source's error.
func TestWriteCorpus(t *testing.T) {
	passages := []data.Passage{{ID: "a", Title: "A", Text: "alpha text"}, {ID: "b", Title: "B", Text: "beta \"quoted\""}}
	next := func(ps []data.Passage, end error) func() (data.Passage, error) {
		return func() (data.Passage, error) {
			if len(ps) == 0 {
				return data.Passage{}, end
			}
			p := ps[0]
			ps = ps[1:]
			return p, nil
		}
	}
	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	n, err := WriteCorpus(path, next(passages, io.EOF))
	if err != nil || n != 2 {
		t.Fatalf("wrote %d, %v; want 2", n, err)
	}
	r, err := data.OpenCorpus(path, data.CorpusJSONL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, want := range passages {
		got, err := r.Next()
		if err != nil || got.ID != want.ID || got.Title != want.Title || got.Text != want.Text {
			t.Errorf("read %+v, %v; want %+v", got, err, want)
		}
	}
	boom := errors.New("boom")
	if _, err := WriteCorpus(path, next(passages, boom)); !errors.Is(err, boom) {
		t.Errorf("got %v, want the source's error", err)
	}
}
