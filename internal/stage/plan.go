package stage

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
)

// Plan is the work of a run: the units it selects and, of those, the ones
// that the committed parts already hold.
type Plan[K comparable, U any] struct {
	// Selected counts the units the run selects, AlreadyDone those the
	// parts hold (a failure counts only when the job keeps failures), Todo
	// the others; Retry counts those of Todo whose last record in the
	// parts is a failure, done again.
	Selected, AlreadyDone, Todo, Retry int
	// Parts counts the committed parts, Next is the number of the next.
	Parts, Next int

	// last is each unit's last record in the parts; keep says failures
	// are kept (done), not retried; finished says the one part is the
	// output file of a finished run (no parts beside it).
	last     keyMap[K, unitRecord]
	finished bool
	keep     bool
	units    func(ctx context.Context, count bool) iter.Seq2[U, error]
	key      func(U) K
	unit     string
	input    string
}

// unitRecord is where a unit's last record is: the number of its part,
// and whether it is a failure.
type unitRecord struct {
	part   int
	failed bool
}

// Select reads the keys of the units that the parts in the directory
// parts hold (none when parts is ""; the output file of a finished run
// when the directory holds no part), then ranges over the job's units
// once, with count set, to count the selected ones, those done and those
// whose last record failed. A unit recorded twice in the parts, but for
// failures done again, or units the run does not select (another input,
// another limit), are errors. It writes nothing, so that a preflight can
// use it as Run does.
func Select[K comparable, U, R any, P Report](ctx context.Context, j Job[K, U, R, P], parts string) (*Plan[K, U], error) {
	p := &Plan[K, U]{keep: j.KeepFailed, units: j.Units, key: j.UnitKey, unit: j.Unit, input: j.Input}
	if parts != "" {
		if err := readParts(ctx, p, j.Layout, parts, filepath.Join(j.Out, j.File)); err != nil {
			return nil, fmt.Errorf("read checkpoint: %w", err)
		}
	}
	for u, err := range j.Units(ctx, true) {
		if err != nil {
			return nil, err
		}
		p.Selected++
		switch rec, ok := p.last.get(j.UnitKey(u)); {
		case !ok:
		case rec.failed && !p.keep:
			p.Retry++
		default:
			p.AlreadyDone++
		}
	}
	if extra := p.last.len() - p.AlreadyDone - p.Retry; extra > 0 {
		return nil, fmt.Errorf("resume %s: its parts hold %d %s that this run does not select (different input?): %w", j.Out, extra, j.Unit, ErrMismatch)
	}
	p.Todo = p.Selected - p.AlreadyDone
	return p, nil
}

// done says whether the parts hold unit k, done (a failure only when the
// job keeps failures).
func (p *Plan[K, U]) done(k K) bool {
	rec, ok := p.last.get(k)
	return ok && (!rec.failed || p.keep)
}

// readParts reads the keys of the units of the committed parts in dir,
// and which of them failed. A unit may be in more than one part only when
// all its records but the last are failures: the failure of an earlier
// invocation, done again by a later one. When dir holds no part, the
// output file of a finished run (output) is the one part, as Run makes it
// when it resumes.
func readParts[K comparable, U, R any, P Report](ctx context.Context, p *Plan[K, U], l Layout[K, R, P], dir, output string) error {
	parts, err := data.ListParts(dir)
	if err != nil {
		return err
	}
	where := partPath
	if len(parts) == 0 {
		if _, err := os.Stat(output); err == nil {
			parts = []data.Part{{N: 0, Path: output}}
			where = func(int) string { return filepath.Base(output) }
			p.finished = true
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	for _, part := range parts {
		err := eachUnit(ctx, part.Path, l.Kind, l.Key, func(k K, rows []R) error {
			if prev, ok := p.last.get(k); ok && (prev.part == part.N || !prev.failed) {
				return fmt.Errorf("%s appears twice (in %s and %s)", l.Describe(k), where(prev.part), where(part.N))
			}
			p.last.set(k, unitRecord{part: part.N, failed: l.failure(rows) != ""})
			return nil
		})
		if err != nil {
			return err
		}
	}
	p.Parts = len(parts)
	if len(parts) > 0 {
		p.Next = parts[len(parts)-1].N + 1
	}
	return nil
}

// Left yields the units to do, in input order: the selected ones that no
// part holds. It is an error for fewer to come than Todo (the input
// changed since Select).
func (p *Plan[K, U]) Left(ctx context.Context) iter.Seq2[U, error] {
	return func(yield func(U, error) bool) {
		left := p.Todo
		if left == 0 {
			return
		}
		for u, err := range p.units(ctx, false) {
			if err != nil {
				var zero U
				yield(zero, err)
				return
			}
			if p.done(p.key(u)) {
				continue
			}
			left--
			if !yield(u, nil) || left == 0 {
				return
			}
		}
		if ctx.Err() == nil {
			var zero U
			yield(zero, fmt.Errorf("read %s: %d selected %s were not there the second time (did the input change?)", p.input, left, p.unit))
		}
	}
}

// partPath names part n in messages, relative to the output directory.
func partPath(n int) string { return filepath.Join(PartsDir, data.PartName(n)) }

// eachUnit calls fn with the key and the rows of each unit of a parquet
// file, in order: the runs of rows that share a key. fn must not keep the
// slice.
func eachUnit[K comparable, R any](ctx context.Context, path string, kind data.Kind, key func(*R) K, fn func(K, []R) error) error {
	var (
		unit []R
		cur  K
	)
	err := data.EachRow(ctx, path, kind, func(rows []R) error {
		for i := range rows {
			k := key(&rows[i])
			if len(unit) > 0 && k != cur {
				if err := fn(cur, unit); err != nil {
					return err
				}
				unit = unit[:0]
			}
			cur = k
			unit = append(unit, rows[i])
		}
		return nil
	})
	if err == nil && len(unit) > 0 {
		err = fn(cur, unit)
	}
	return err
}

// seen checks, as rows stream past, that no unit appears twice, and names
// the sources (parts, merged inputs) where one did. Memory grows with the
// number of units only (see keyMap).
type seen[K comparable] struct {
	where    keyMap[K, int]
	sources  []string
	describe func(K) string
}

func newSeen[K comparable](describe func(K) string) *seen[K] {
	return &seen[K]{describe: describe}
}

// source registers a source of rows and returns its number for add.
func (s *seen[K]) source(name string) int {
	s.sources = append(s.sources, name)
	return len(s.sources) - 1
}

// add records unit k, read from source src.
func (s *seen[K]) add(k K, src int) error {
	if prev, dup := s.where.get(k); dup {
		return fmt.Errorf("%s appears twice (in %s and %s)", s.describe(k), s.sources[prev], s.sources[src])
	}
	s.where.set(k, src)
	return nil
}

// createOutput starts writing an output file, long and written once: its
// pages wait on disk until their row group is written out
// (data.SpillPages), and row groups are cut by size alone (a few thousand
// states), so that the metadata the writer keeps for each until it closes
// the file, and a reader decodes when it opens it, stays small.
func createOutput[R any](path string, kind data.Kind) (*data.ParquetWriter[R], error) {
	return data.CreateParquet[R](path, kind, data.SpillPages())
}
