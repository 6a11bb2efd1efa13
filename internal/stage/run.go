package stage

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/llm"
)

// Run runs a job as the package documentation describes: it prepares the
// output directory, selects the units, does those not done yet Workers at
// a time, checkpoints them into parts, and assembles the output file once
// every selected unit is in a part, keeping the report current all along.
//
// A systemic error (one that Work or Produce returned, a write that
// failed, a cancelled context) ends the run: Run records it in the report
// (status interrupted) and returns it; what was checkpointed stays, and a
// resumed run goes on from there. A budget stop is recorded as status
// budget-reached and returned as ErrBudget.
func Run[K comparable, U, R any, P Report](ctx context.Context, j Job[K, U, R, P]) error {
	if err := j.check(); err != nil {
		return err
	}
	log := j.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &run[K, U, R, P]{j: j, h: j.Report.header(), log: log, parts: filepath.Join(j.Out, PartsDir)}
	return r.run(ctx)
}

// run is the state of one invocation.
type run[K comparable, U, R any, P Report] struct {
	j     Job[K, U, R, P]
	h     *Header
	log   *slog.Logger
	parts string
	start time.Time
	// dir is the output directory, held while the run runs.
	dir  *outdir.Dir
	plan *Plan[K, U]
	pw   *data.PartWriter[R]
	prog Progress
	// written is the part of each unit this invocation did again (a
	// failure of an earlier one: the only units recorded twice); streak
	// counts the failed units written in a row, the last one's failure
	// and key in lastFailure and lastFailed.
	written     map[K]int
	streak      int
	lastFailure string
	lastFailed  K
	// prevUsage is the usage that earlier invocations recorded, and
	// prevRetried the units they retried.
	prevUsage   []llm.Stats
	prevRetried int
}

func (r *run[K, U, R, P]) run(ctx context.Context) error {
	r.start = time.Now()
	r.h.Status, r.h.StartedAt = StatusRunning, r.start.UTC()
	if err := r.begin(ctx); err != nil {
		// A fresh start leaves nothing behind that would need resuming.
		r.dir.Abandon()
		return err
	}
	defer r.dir.Close()
	p := r.prog
	r.log.Info(r.j.Name+" starting", append([]any{"out", r.j.Out, "selected", p.Selected, "already_done", p.AlreadyDone,
		"to_do", p.Total, "workers", r.j.Workers}, r.j.LogAttrs...)...)
	r.progress()
	if err := r.pipeline(ctx); err != nil {
		return r.interrupted(err)
	}
	return r.finish(ctx)
}

// begin prepares the output directory, reads what earlier invocations
// wrote, selects the units and writes the first report.
func (r *run[K, U, R, P]) begin(ctx context.Context) error {
	if err := r.prepare(ctx); err != nil {
		return err
	}
	plan, err := Select(ctx, r.j, r.parts)
	if err != nil {
		return err
	}
	if plan.finished {
		// A finished output holds its rows once, in its file: that file
		// becomes the first part, the checkpoint the run goes on from.
		if _, err := data.AdoptOutput(filepath.Join(r.j.Out, r.j.File), r.parts); err != nil {
			return err
		}
		r.log.Info("resuming a finished output: its file is the first part", "file", r.j.File, "part", partPath(0))
	}
	r.plan = plan
	r.pw = data.NewPartWriter[R](r.parts, r.j.Kind, plan.Next)
	r.written = make(map[K]int)
	r.prog = Progress{Selected: plan.Selected, AlreadyDone: plan.AlreadyDone, Total: plan.Todo, Retry: plan.Retry, Parts: plan.Parts}
	if plan.Retry > 0 {
		r.log.Info("doing again what failed before", r.j.Unit, plan.Retry)
	}
	// Stamped, so that a kill before the first checkpoint keeps the usage
	// of the earlier invocations.
	r.stamp(false)
	return r.writeReport()
}

// prepare claims the output directory (ErrBusy when another writer holds
// it), reads the report of the run it continues, and removes the
// leftovers of interrupted writes.
func (r *run[K, U, R, P]) prepare(ctx context.Context) error {
	out := r.j.Out
	mode := outdir.New
	if r.j.Resume {
		mode = outdir.Resume
	}
	dir, err := outdir.Claim(ctx, out, mode)
	if err != nil {
		return err
	}
	r.dir = dir
	if !dir.Fresh() {
		prev, err := r.j.Read(out)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s has no %s: %w", out, r.j.ReportFile, ErrNotRun)
		}
		if err != nil {
			return err
		}
		if err := r.j.Same(prev, r.j.Report, true); err != nil {
			return fmt.Errorf("resume %s: %w", out, err)
		}
		r.h.Resumes = prev.header().Resumes + 1
		r.prevUsage = prev.header().Usage
		r.prevRetried = prev.header().Retried
	}
	removed, err := data.PrepareParts(out, r.parts)
	for _, path := range removed {
		r.log.Info("removed the leftover of an interrupted write", "file", path)
	}
	return err
}

// pipeline does the units left: a producer (the workers, or the job's
// Produce) sends the rows of each unit to the one goroutine that writes
// the parts. It returns when every unit is written or the run fails.
func (r *run[K, U, R, P]) pipeline(ctx context.Context) error {
	if r.plan.Todo == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	units := make(chan []R, r.j.Workers)
	g.Go(func() error { return r.write(units) })
	g.Go(func() error {
		defer close(units) // ends the writer, once the producer is done
		emit := func(rows []R) error {
			select {
			case units <- rows:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		todo := r.plan.Left(gctx)
		if r.j.Produce != nil {
			return r.j.Produce(gctx, todo, emit)
		}
		return r.dispatch(gctx, todo, emit)
	})
	return g.Wait()
}

// dispatch does the units of todo with Work, Workers at a time, and stops
// starting new ones once the budget is spent. It returns when every unit
// it started has returned.
func (r *run[K, U, R, P]) dispatch(ctx context.Context, todo iter.Seq2[U, error], emit func([]R) error) error {
	g, gctx := errgroup.WithContext(ctx)
	// A failed unit cancels stop before its slot comes free, so that no
	// unit starts after a failure (errgroup cancels gctx only once the
	// function has returned, after its deferred calls).
	gctx, stop := context.WithCancelCause(gctx)
	defer stop(nil)
	// A slot is taken before the budget is checked, so that a unit starts
	// only if the budget was not spent when its slot came free: at most the
	// units in flight then run past the budget.
	slots := semaphore.NewWeighted(int64(r.j.Workers))
	var err error
	for u, ierr := range todo {
		if ierr != nil {
			err = ierr
			break
		}
		// Acquire may succeed on a done context: checked again after.
		if slots.Acquire(gctx, 1) != nil || gctx.Err() != nil {
			break // a worker failed, or ctx is done
		}
		if r.j.Budget > 0 && r.j.Spent() >= r.j.Budget {
			slots.Release(1)
			err = ErrBudget
			break
		}
		g.Go(func() error {
			rows, err := r.j.Work(gctx, u)
			if err == nil {
				err = emit(rows)
			}
			if err != nil {
				stop(err)
			}
			slots.Release(1)
			return err
		})
	}
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if err == nil {
		// Cancelled from outside between two units: the workers all
		// returned nil, yet the run did not end.
		err = ctx.Err()
	}
	return err
}

// write is the one goroutine that writes the parts: it adds each unit's
// rows to the current part and commits it after CheckpointUnits units or
// CheckpointInterval, and when units is closed. It returns when units is
// closed or a write fails.
func (r *run[K, U, R, P]) write(units <-chan []R) error {
	defer r.pw.Abort() // an uncommitted part of a failed run is dropped
	var (
		timer    *time.Timer
		deadline <-chan time.Time // nil while no part is open
	)
	commit := func() error {
		if timer != nil {
			timer.Stop()
			timer, deadline = nil, nil
		}
		return r.commit()
	}
	for {
		select {
		case rows, ok := <-units:
			if !ok {
				err := commit()
				r.progress()
				return err
			}
			opening := !r.pw.Open()
			if err := r.wrote(rows); err != nil {
				return err
			}
			if opening {
				timer = time.NewTimer(r.j.CheckpointInterval)
				deadline = timer.C
			}
			if r.j.Wrote != nil {
				r.j.Wrote(rows)
			}
			if err := r.failing(); err != nil {
				// What was done so far is kept, for a resumed run.
				if cerr := commit(); cerr != nil {
					return cerr
				}
				r.progress()
				return err
			}
			if r.pw.Units() >= r.j.CheckpointUnits {
				if err := commit(); err != nil {
					return err
				}
			}
			r.progress()
		case <-deadline:
			timer, deadline = nil, nil
			if err := commit(); err != nil {
				return err
			}
			r.progress()
		}
	}
}

// wrote adds a unit's rows to the current part and counts them.
func (r *run[K, U, R, P]) wrote(rows []R) error {
	k := r.j.Key(&rows[0])
	_, retry := r.plan.last.get(k)
	if _, dup := r.written[k]; dup {
		return fmt.Errorf("%s was done twice", r.j.Describe(k))
	}
	if err := r.pw.Write(rows); err != nil {
		return err
	}
	r.prog.Done++
	r.prog.Rows += int64(len(rows))
	if retry {
		// Only these need a note of their part, which memory holds: every
		// other unit has one record.
		r.written[k] = r.pw.Next()
		r.prog.Retried++
	}
	if reason := r.j.failure(rows); reason != "" {
		r.prog.Failed++
		r.streak++
		r.lastFailure, r.lastFailed = reason, k
	} else {
		r.streak = 0
	}
	return nil
}

// failing returns ErrFailing once StopAfterFailures units in a row have
// failed.
func (r *run[K, U, R, P]) failing() error {
	limit := r.j.StopAfterFailures
	if limit == 0 {
		limit = max(DefaultStopAfterFailures, 2*r.j.Workers)
	}
	if limit < 0 || r.streak < limit {
		return nil
	}
	return fmt.Errorf("%w: the last %d %s failed, the last one (%s) with: %s", ErrFailing, r.streak, r.j.Unit,
		r.j.Describe(r.lastFailed), r.lastFailure)
}

// commit commits the current part, if one is open, and rewrites the
// report, so that a resumed run knows the usage so far.
func (r *run[K, U, R, P]) commit() error {
	name, units, rows, err := r.pw.Commit()
	if err != nil || name == "" {
		return err
	}
	r.prog.Parts++
	r.log.Debug("checkpoint", "part", name, r.j.Unit, units, "rows", rows, "done", r.prog.Done, "of", r.prog.Total)
	r.stamp(false)
	return r.writeReport()
}

func (r *run[K, U, R, P]) progress() {
	if r.j.Progress != nil {
		r.j.Progress(r.prog)
	}
}

// stamp fills in the times and usage of the header, and has the stage fill
// in its counts; ended says whether the invocation has ended.
func (r *run[K, U, R, P]) stamp(ended bool) {
	now := time.Now()
	if ended {
		r.h.FinishedAt = now.UTC()
	}
	r.h.WallSeconds = now.Sub(r.start).Seconds()
	r.h.Retried = r.prevRetried + r.prog.Retried
	// Cloned: AddStats adds into its first argument.
	r.h.Usage = slices.Clone(r.prevUsage)
	if r.j.Usage != nil {
		r.h.Usage = llm.AddStats(r.h.Usage, r.j.Usage())
	}
	r.h.CostUSD = 0
	for _, s := range r.h.Usage {
		r.h.CostUSD += s.CostUSD
	}
	if r.j.Stamp != nil {
		r.j.Stamp(r.prog)
	}
}

func (r *run[K, U, R, P]) writeReport() error {
	return WriteReport(r.j.Out, r.j.ReportFile, r.j.Report)
}

// interrupted records in the report that the run ended early, and returns
// err, or for a budget stop ErrBudget with what was spent and done.
func (r *run[K, U, R, P]) interrupted(err error) error {
	r.stamp(true)
	r.h.Status, r.h.Error = StatusInterrupted, err.Error()
	if errors.Is(err, ErrBudget) {
		r.h.Status, r.h.Error, r.h.BudgetReached = StatusBudget, "", true
		err = fmt.Errorf("%w: $%.4f spent of $%.4f after %d of %d %s (%d done before); resume with a larger budget to go on",
			ErrBudget, r.j.Spent(), r.j.Budget, r.prog.Done, r.prog.Total, r.j.Unit, r.prog.AlreadyDone)
	}
	if werr := r.writeReport(); werr != nil {
		r.log.Warn("could not record the interruption", "err", werr)
	}
	return err
}

// finish assembles the output file, once the parts hold every selected
// unit exactly once, and writes the final report.
func (r *run[K, U, R, P]) finish(ctx context.Context) error {
	failed, err := r.assemble(ctx)
	if err != nil {
		return r.interrupted(fmt.Errorf("write %s: %w", r.j.File, err))
	}
	if r.j.Finish != nil {
		r.j.Finish()
	}
	r.stamp(true)
	r.h.Status = StatusDone
	if err := r.writeReport(); err != nil {
		return err
	}
	// The output file holds every unit's last record: the parts are not
	// kept beside it (a resumed run makes the file its first part).
	if err := data.DropParts(r.parts); err != nil {
		return err
	}
	if n := r.prog.Selected; n > 0 && failed.n == n {
		return fmt.Errorf("%w: %d of %d %s, the first (%s) with: %s", ErrAllFailed, n, n, r.j.Unit, r.j.Describe(failed.first), failed.reason)
	}
	return nil
}

// failures are the failed units of an output: how many, and the first.
type failures[K comparable] struct {
	n      int
	first  K
	reason string
}

// assemble copies the last record of each unit in the parts, in the
// parts' order, into the output file (the failures that a later part did
// again are left out), and has the stage count them. It returns the
// failed units of the output.
func (r *run[K, U, R, P]) assemble(ctx context.Context) (failures[K], error) {
	var failed failures[K]
	parts, err := data.ListParts(r.parts)
	if err != nil {
		return failed, err
	}
	w, err := createOutput[R](filepath.Join(r.j.Out, r.j.File), r.j.Kind)
	if err != nil {
		return failed, err
	}
	defer w.Abort() // unless closed
	units := 0
	for _, p := range parts {
		err := eachUnit(ctx, p.Path, r.j.Kind, r.j.Key, func(k K, rows []R) error {
			if n, ok := r.lastPart(k); ok && n != p.N {
				return nil // a failure done again in a later part
			}
			units++
			if reason := r.j.failure(rows); reason != "" {
				if failed.n == 0 {
					failed.first, failed.reason = k, reason
				}
				failed.n++
			}
			if r.j.Count != nil {
				if err := r.j.Count(rows); err != nil {
					return fmt.Errorf("%s: %w", partPath(p.N), err)
				}
			}
			return w.Write(rows)
		})
		if err != nil {
			return failed, err
		}
	}
	if units != r.prog.Selected {
		return failed, fmt.Errorf("the parts hold %d %s, want %d", units, r.j.Unit, r.prog.Selected)
	}
	return failed, w.Close()
}

// lastPart returns the number of the part that holds the last record of
// unit k when the parts may hold more than one: one this invocation wrote
// again, else one of the earlier ones. A unit that only this invocation
// wrote has one record (ok false).
func (r *run[K, U, R, P]) lastPart(k K) (n int, ok bool) {
	if n, ok := r.written[k]; ok {
		return n, true
	}
	if rec, ok := r.plan.last.get(k); ok {
		return rec.part, true
	}
	return 0, false
}
