package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/data"
)

// A run's checkpoints are the files DIR/parts/part-NNNNN.parquet, numbered
// from 0 in the order they were written, each holding the rows of whole
// questions. A part is written to a temporary name (data.CreateParquet:
// ".part-NNNNN.parquet.tmp-*") and renamed into place once synced, so a
// part that exists is complete; the temporary files an interrupted write
// leaves behind are removed when the run is resumed.

// tmpMarker is in the name of every temporary file that data.CreateParquet
// and writeFileAtomic create: "." + name + ".tmp-" + random.
const tmpMarker = ".tmp-"

const (
	partPrefix = "part-"
	partSuffix = ".parquet"
)

func partName(n int) string { return fmt.Sprintf("%s%05d%s", partPrefix, n, partSuffix) }

// part is one committed part file.
type part struct {
	n    int
	path string
}

// listParts returns the parts in dir, in order.
func listParts(dir string) ([]part, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list parts: %w", err)
	}
	var parts []part
	for _, e := range entries {
		num, ok := strings.CutPrefix(e.Name(), partPrefix)
		num, ok2 := strings.CutSuffix(num, partSuffix)
		if !ok || !ok2 || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			continue
		}
		parts = append(parts, part{n: n, path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(parts, func(a, b part) int { return a.n - b.n })
	return parts, nil
}

// removeTemps removes the temporary files that interrupted writes left in
// dir and returns their names.
func removeTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean %s: %w", dir, err)
	}
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), ".") || !strings.Contains(e.Name(), tmpMarker) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("clean %s: %w", dir, err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// eachRows calls fn with the rows of a trajectories file, in order, a batch
// at a time; fn must not keep the slice.
func eachRows(ctx context.Context, path string, fn func([]data.State) error) error {
	kind, err := data.ParquetKind(path)
	if err != nil {
		return err
	}
	if kind != data.KindTrajectories {
		return fmt.Errorf("%s holds %s, not trajectories", path, kind)
	}
	r, err := data.OpenParquet[data.State](path)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]data.State, 256)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		clear(buf)
		n, err := r.Read(buf)
		if n > 0 {
			if ferr := fn(buf[:n]); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("read %s: no progress", path)
		}
	}
}

// partWriter writes questions into the current part and commits it. It is
// owned by the one goroutine that writes a run's output.
type partWriter struct {
	dir  string
	next int // number of the next part
	w    *data.ParquetWriter[data.State]
	// questions and rows in the current part
	questions int
	rows      int64
}

// open reports whether a part is being written.
func (p *partWriter) open() bool { return p.w != nil }

// write adds the rows of one question to the current part, starting one if
// none is open.
func (p *partWriter) write(states []data.State) error {
	if p.w == nil {
		w, err := data.CreateParquet[data.State](filepath.Join(p.dir, partName(p.next)), data.KindTrajectories)
		if err != nil {
			return err
		}
		p.w = w
	}
	if err := p.w.Write(states); err != nil {
		return err
	}
	p.questions++
	p.rows += int64(len(states))
	return nil
}

// commit closes the current part, which renames it into place, and returns
// its name and size; it does nothing when no part is open.
func (p *partWriter) commit() (name string, questions int, rows int64, err error) {
	if p.w == nil {
		return "", 0, 0, nil
	}
	w := p.w
	p.w = nil
	questions, rows = p.questions, p.rows
	p.questions, p.rows = 0, 0
	if err := w.Close(); err != nil {
		return "", 0, 0, err
	}
	name = partName(p.next)
	p.next++
	return name, questions, rows, nil
}

// abort drops the current part, if any.
func (p *partWriter) abort() {
	if p.w != nil {
		p.w.Abort()
		p.w = nil
		p.questions, p.rows = 0, 0
	}
}
