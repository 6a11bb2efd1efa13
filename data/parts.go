package data

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Checkpointed output. A long job (a rollout, a labelling run) appends its
// rows to numbered part files, DIR/part-NNNNN.parquet, numbered from 0 in
// the order they were written, each holding whole units of work (the rows
// of whole questions, whole states). A part is written to a temporary name
// (CreateParquet: ".part-NNNNN.parquet.tmp-*") and renamed into place once
// synced, so a part that exists is complete: a kill at any moment loses at
// most the part being written and leaves at most a temporary file, which
// RemoveTemps removes when the job resumes.

// RelativePath returns path relative to the directory dir (with ".."
// where it lies outside it), for records that dir holds, so that the two
// can move together; path as it is when it is empty or cannot be made so.
func RelativePath(dir, path string) string {
	if path == "" {
		return ""
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return path
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(d, p)
	if err != nil {
		return path
	}
	return rel
}

// TmpMarker is in the name of every temporary file that CreateParquet,
// WriteFileAtomic and WriteAtomic create: "." + name + ".tmp-" + random,
// and of a parts directory being removed (DropParts).
const TmpMarker = ".tmp-"

// Numbered is a family of numbered files in one directory: Prefix, the
// number in at least five digits, then Suffix ("part-00003.parquet").
type Numbered struct {
	Prefix, Suffix string
}

// Name returns the file name of number n.
func (f Numbered) Name(n int) string { return fmt.Sprintf("%s%05d%s", f.Prefix, n, f.Suffix) }

// List returns the regular files of the family in dir, in order of number;
// none when dir does not exist. Names that only look alike (another
// prefix or suffix, a number that is not a whole number from 0) are passed
// over.
func (f Numbered) List(dir string) ([]Part, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var parts []Part
	for _, e := range entries {
		num, ok := strings.CutPrefix(e.Name(), f.Prefix)
		num, ok2 := strings.CutSuffix(num, f.Suffix)
		if !ok || !ok2 || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			continue
		}
		parts = append(parts, Part{N: n, Path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(parts, func(a, b Part) int { return a.N - b.N })
	return parts, nil
}

// partFiles are the committed parts of a job.
var partFiles = Numbered{Prefix: "part-", Suffix: ".parquet"}

// PartName returns the file name of part n.
func PartName(n int) string { return partFiles.Name(n) }

// Part is one file of a Numbered family: for ListParts, one committed part
// file.
type Part struct {
	N    int
	Path string
}

// ListParts returns the parts in dir, in order; none when dir does not exist.
func ListParts(dir string) ([]Part, error) {
	parts, err := partFiles.List(dir)
	if err != nil {
		return nil, fmt.Errorf("list parts: %w", err)
	}
	return parts, nil
}

// RemoveTemps removes the temporary files that interrupted writes left in
// dir, and the parts directories that an interrupted DropParts left, and
// returns their names.
func RemoveTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean %s: %w", dir, err)
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !strings.Contains(e.Name(), TmpMarker) {
			continue
		}
		remove := os.Remove
		switch {
		case e.IsDir() && strings.HasSuffix(e.Name(), dropSuffix):
			remove = os.RemoveAll
		case !e.Type().IsRegular():
			continue
		}
		if err := remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("clean %s: %w", dir, err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// PrepareParts makes the parts directory of a job's output directory out
// and removes the temporary files that interrupted writes left in both. It
// returns the paths removed.
func PrepareParts(out, parts string) (removed []string, err error) {
	if err := os.MkdirAll(parts, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	for _, dir := range []string{out, parts} {
		names, err := RemoveTemps(dir)
		for _, name := range names {
			removed = append(removed, filepath.Join(dir, name))
		}
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// dropSuffix ends the name of a parts directory that DropParts is
// removing: "." + name + TmpMarker + "drop".
const dropSuffix = TmpMarker + "drop"

// DropParts removes the parts directory of a job whose output file holds
// everything the parts did, so that the rows are stored once. The
// directory is first renamed (atomically) beside itself to a temporary
// name that RemoveTemps recognises: a kill leaves either the parts whole
// or a leftover that the next PrepareParts removes, never some parts
// without the others.
func DropParts(parts string) error {
	gone := filepath.Join(filepath.Dir(parts), "."+filepath.Base(parts)+dropSuffix)
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove parts: %w", err)
	}
	if err := os.Rename(parts, gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove parts: %w", err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove parts: %w", err)
	}
	return nil
}

// AdoptOutput makes the output file of a finished job the first part of
// the job resumed: when the directory parts holds no part and output
// exists, output is renamed to part 0 (atomically: the rows are at one of
// the two places whenever the process is killed). It reports whether it
// did. The output must hold whole units in part order, as a job's
// assembly writes it.
func AdoptOutput(output, parts string) (bool, error) {
	have, err := ListParts(parts)
	if err != nil || len(have) > 0 {
		return false, err
	}
	if _, err := os.Stat(output); errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("resume from %s: %w", output, err)
	}
	if err := os.MkdirAll(parts, 0o755); err != nil {
		return false, fmt.Errorf("resume from %s: %w", output, err)
	}
	if err := os.Rename(output, filepath.Join(parts, PartName(0))); err != nil {
		return false, fmt.Errorf("resume from %s: %w", output, err)
	}
	syncDir(parts)
	syncDir(filepath.Dir(output))
	return true, nil
}

// EachRow calls fn with the rows of a parquet file of the given kind, in
// order, a batch at a time; fn must not keep the slice. It stops at the
// first error of fn or of the reading, and when ctx ends.
func EachRow[T any](ctx context.Context, path string, kind Kind, fn func([]T) error) error {
	got, err := ParquetKind(path)
	if err != nil {
		return err
	}
	if got != kind {
		return fmt.Errorf("%s holds %s, not %s", path, got, kind)
	}
	r, err := OpenParquet[T](path)
	if err != nil {
		return err
	}
	defer r.Close()
	buf := make([]T, 256)
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

// PartWriter writes units of rows into the current part of a directory and
// commits it. It is not safe for concurrent use: one goroutine owns it.
type PartWriter[T any] struct {
	dir  string
	kind Kind
	next int // number of the next part
	w    *ParquetWriter[T]
	// units and rows in the current part
	units int
	rows  int64
}

// NewPartWriter returns a writer of parts of the given kind in dir, the
// first it writes being number next (one past the last of ListParts).
func NewPartWriter[T any](dir string, kind Kind, next int) *PartWriter[T] {
	return &PartWriter[T]{dir: dir, kind: kind, next: next}
}

// Open reports whether a part is being written.
func (p *PartWriter[T]) Open() bool { return p.w != nil }

// Next returns the number of the part being written, or of the next one.
func (p *PartWriter[T]) Next() int { return p.next }

// Units returns the number of units in the current part.
func (p *PartWriter[T]) Units() int { return p.units }

// Write adds the rows of one unit to the current part, starting one if
// none is open.
func (p *PartWriter[T]) Write(rows []T) error {
	if p.w == nil {
		w, err := CreateParquet[T](filepath.Join(p.dir, PartName(p.next)), p.kind)
		if err != nil {
			return err
		}
		p.w = w
	}
	if err := p.w.Write(rows); err != nil {
		return err
	}
	p.units++
	p.rows += int64(len(rows))
	return nil
}

// Commit closes the current part, which renames it into place, and returns
// its name and size; it does nothing when no part is open.
func (p *PartWriter[T]) Commit() (name string, units int, rows int64, err error) {
	if p.w == nil {
		return "", 0, 0, nil
	}
	w := p.w
	p.w = nil
	units, rows = p.units, p.rows
	p.units, p.rows = 0, 0
	if err := w.Close(); err != nil {
		return "", 0, 0, err
	}
	name = PartName(p.next)
	p.next++
	return name, units, rows, nil
}

// Abort drops the current part, if any.
func (p *PartWriter[T]) Abort() {
	if p.w != nil {
		p.w.Abort()
		p.w = nil
		p.units, p.rows = 0, 0
	}
}

// WriteFileAtomic writes b to a temporary file beside path, syncs it and
// renames it into place.
func WriteFileAtomic(path string, b []byte) error {
	return writeAtomic(path, 0, func(w *bufio.Writer) error {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
}

// WriteAtomic writes a file through fill under a temporary name beside
// path (one that RemoveTemps recognises), syncs it and renames it into
// place; an error of fill is returned as it is. fill writes through a
// buffer of 1 MiB, whose write errors stick and are returned when it is
// flushed.
func WriteAtomic(path string, fill func(w *bufio.Writer) error) error {
	return writeAtomic(path, 1<<20, fill)
}

// writeAtomic is WriteAtomic with a buffer of size bytes (bufio's default
// when size is 0).
func writeAtomic(path string, size int, fill func(w *bufio.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+TmpMarker+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, size)
	if err = fill(w); err != nil {
		return err
	}
	if err = w.Flush(); err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}
