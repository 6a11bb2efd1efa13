package finetune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/filter"
	"github.com/distill-rag/distill/judge"
)

// RunOptions says what Run trains and where.
type RunOptions struct {
	// In is the output directory of filter (train.parquet, and
	// val.parquet when there is one) or a train file alone. A recorded job
	// that Run re-attaches to needs none.
	In string
	// Out is the job's directory: its export, its record (job.json), its
	// log and its hand-back. Job.Dir is set to it.
	Out string
	// Job is the job to submit, without its labels and files (Run exports
	// them).
	Job Job
	// Backend names the backend of a new job; BackendChosen says that the
	// user named it, so that a recorded job of another backend is refused
	// rather than re-attached to.
	Backend       string
	BackendChosen bool
	// Open returns the backend of a name.
	Open func(name string) (Backend, error)
	// Tokenizer counts the examples' tokens (ExportOptions.Tokenizer).
	Tokenizer string
	// Overwrite replaces what Out holds: a job that has ended, or files
	// that are no job. ExportOnly exports and submits nothing. Detach
	// submits and returns without following the job.
	Overwrite, ExportOnly, Detach bool
	// Logger receives what Run decides (default: none).
	Logger *slog.Logger
	// OnExport sees the export's summary before the job is submitted.
	OnExport func(ExportSummary) error
	// Follow says how the job is followed to its end.
	Follow FollowOptions
}

// RunResult is what Run did: the job and its last state, and for a job
// that succeeded its hand-back, written to Out.
type RunResult struct {
	Job      Job
	State    State
	Handback *judge.Handback
	// Reattached says that Out held the job, which Run followed.
	Reattached bool
}

// Why Run refuses an output directory (in a *RefusedError).
var (
	ErrHoldsJob      = errors.New("already holds a job")
	ErrJobNotEnded   = errors.New("holds a job that has not ended")
	ErrOtherBackend  = errors.New("holds a job of another backend")
	ErrJobDidNotEnd  = errors.New("holds a job that failed or was cancelled")
	ErrNotEmptyNoJob = errors.New("is not empty and holds no job")
	ErrNoInput       = errors.New("no labels to train on")
)

// RefusedError is an output directory that Run refuses: Reason is one of
// the errors above, Record the job recorded there (nil when none is).
type RefusedError struct {
	Out    string
	Reason error
	Record *Record
}

func (e *RefusedError) Error() string { return e.Out + " " + e.Reason.Error() }

func (e *RefusedError) Unwrap() error { return e.Reason }

// Run trains the judge in Out: it exports the labels of In, submits the
// job to its backend, follows it to its end and writes the hand-back of a
// job that succeeded. When Out records a job already, Run re-attaches to
// it (one that is still running or has succeeded), or replaces it with
// Overwrite once it has ended; what it cannot do is a *RefusedError. Out
// has one writer at a time, and a run that submitted nothing leaves
// nothing behind.
func Run(ctx context.Context, opts RunOptions) (RunResult, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// Held until the job is submitted and followed: one writer of its
	// export, its record and its hand-back.
	od, err := outdir.Claim(ctx, opts.Out, outdir.Resume)
	if err != nil {
		return RunResult{}, fmt.Errorf("train: %w", err)
	}
	res, err := run(ctx, od, opts)
	if err != nil {
		if _, rerr := LoadRecord(opts.Out); errors.Is(rerr, ErrNoJob) {
			od.Abandon() // nothing was submitted: a fresh start leaves nothing
		} else {
			od.Close()
		}
		return res, err
	}
	return res, od.Close()
}

func run(ctx context.Context, od *outdir.Dir, opts RunOptions) (RunResult, error) {
	out := od.Path()
	rec, err := LoadRecord(out)
	refuse := func(reason error) (RunResult, error) {
		return RunResult{}, &RefusedError{Out: out, Reason: reason, Record: &rec}
	}
	switch {
	case errors.Is(err, ErrNoJob):
	case err != nil:
		return RunResult{}, err
	case opts.ExportOnly:
		return refuse(ErrHoldsJob)
	case opts.Overwrite && !rec.State.Status.Terminal():
		return refuse(ErrJobNotEnded)
	case opts.Overwrite:
		opts.Logger.Info("replacing the recorded job", "backend", rec.State.Backend, "job", rec.State.ID, "status", rec.State.Status)
	case opts.BackendChosen && opts.Backend != rec.State.Backend:
		return refuse(ErrOtherBackend)
	case rec.State.Status == StatusFailed || rec.State.Status == StatusCancelled:
		return refuse(ErrJobDidNotEnd)
	default:
		b, err := opts.Open(rec.State.Backend)
		if err != nil {
			return RunResult{}, err
		}
		opts.Logger.Info("re-attaching to the recorded job", "backend", rec.State.Backend, "job", rec.State.ID, "status", rec.State.Status)
		res, err := follow(ctx, b, rec.Job, rec.State, opts.Follow)
		res.Reattached = true
		return res, err
	}
	if !od.Fresh() {
		if !opts.Overwrite {
			return RunResult{}, &RefusedError{Out: out, Reason: ErrNotEmptyNoJob}
		}
		if err := od.Empty(); err != nil {
			return RunResult{}, fmt.Errorf("train: %w", err)
		}
	}
	job, err := export(ctx, out, opts)
	if err != nil || opts.ExportOnly {
		return RunResult{Job: job}, err
	}
	b, err := opts.Open(opts.Backend)
	if err != nil {
		return RunResult{Job: job}, err
	}
	st, err := b.Submit(ctx, job)
	if err != nil {
		return RunResult{Job: job}, fmt.Errorf("train: submit to %s: %w", b.Name(), err)
	}
	if err := SaveRecord(out, Record{Job: job, State: st}); err != nil {
		return RunResult{Job: job, State: st}, err
	}
	opts.Logger.Info("job submitted", "backend", b.Name(), "job", st.ID, "status", st.Status)
	if opts.Detach {
		return RunResult{Job: job, State: st}, nil
	}
	return follow(ctx, b, job, st, opts.Follow)
}

// export writes the job's training data into out and returns the job
// that trains on it.
func export(ctx context.Context, out string, opts RunOptions) (Job, error) {
	job := opts.Job
	if opts.In == "" {
		return job, &RefusedError{Out: out, Reason: ErrNoInput}
	}
	train, val := opts.In, ""
	if fi, err := os.Stat(opts.In); err == nil && fi.IsDir() {
		train, val = filepath.Join(opts.In, filter.TrainFile), filepath.Join(opts.In, filter.ValFile)
		if _, err := os.Stat(val); err != nil {
			val = ""
		}
	}
	var err error
	if job.Dir, err = filepath.Abs(out); err != nil {
		return job, err
	}
	// Absolute: the job records them, and its hand-back names them
	// relative to its directory.
	if job.Labels.Train, err = filepath.Abs(train); err != nil {
		return job, err
	}
	if val != "" {
		if job.Labels.Val, err = filepath.Abs(val); err != nil {
			return job, err
		}
	}
	sum, err := Export(ctx, ExportOptions{Train: train, Val: val, Dir: out, MaxLength: job.Hyper.MaxLength, Tokenizer: opts.Tokenizer, TargetJSON: job.Hyper.TargetJSON})
	if err != nil {
		return job, err
	}
	job.Files = sum.Files
	if opts.OnExport != nil {
		if err := opts.OnExport(sum); err != nil {
			return job, err
		}
	}
	return job, nil
}

// follow follows the job to its end and hands back one that succeeded.
func follow(ctx context.Context, b Backend, job Job, st State, fo FollowOptions) (RunResult, error) {
	st, err := Follow(ctx, b, job, st, fo)
	res := RunResult{Job: job, State: st}
	if err != nil {
		return res, err
	}
	res.Handback, err = HandBack(job, st)
	return res, err
}

// HandBack writes the hand-back of a job that succeeded into its
// directory (judge.HandbackFile) and returns it; nil for any other job.
func HandBack(job Job, st State) (*judge.Handback, error) {
	if st.Status != StatusSucceeded {
		return nil, nil
	}
	h, err := NewHandback(job, st)
	if err != nil {
		return nil, err
	}
	if err := judge.WriteHandback(job.Dir, h); err != nil {
		return nil, err
	}
	return &h, nil
}
