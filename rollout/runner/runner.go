package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout"
)

// Defaults of Options.
const (
	DefaultWorkers             = 16
	DefaultCheckpointQuestions = 256
	DefaultCheckpointInterval  = 30 * time.Second
)

// Options configure Run.
type Options struct {
	// Questions are the questions to run (Slice, QuestionsFile).
	Questions Questions
	// Roles are the judge, extractor, reader and retriever of the loop,
	// shared by every worker; Loop the loop's options.
	Roles rollout.Roles
	Loop  rollout.Options
	// Out is the output directory.
	Out string
	// Workers is the number of questions run at once (default 16).
	Workers int
	// Limit, when positive, keeps the first Limit unique question ids of
	// the input (before sharding).
	Limit int
	// Shard keeps the questions of one shard (the zero Shard keeps all).
	Shard data.Shard
	// Resume continues the run in Out: questions that its parts hold are
	// skipped, but for the failed ones, which are run again unless
	// KeepFailed. Without Resume, Out must be empty or absent.
	Resume     bool
	KeepFailed bool
	// StopAfterFailures is how many questions in a row may fail before
	// the run stops with ErrFailing (a model server that cannot be
	// reached, or fails every request); zero means the default of
	// stage.Job, negative never.
	StopAfterFailures int
	// CheckpointQuestions and CheckpointInterval bound the questions and
	// the time between two checkpoints, the work a kill can lose
	// (defaults 256 and 30s).
	CheckpointQuestions int
	CheckpointInterval  time.Duration
	// Progress, when set, is called when the run starts, after each
	// question is written and after each checkpoint, never concurrently;
	// it must return quickly.
	Progress func(Progress)
	// Logger receives the run's log; nil discards it.
	Logger *slog.Logger
	// Info is recorded in run.json: the version of the program, the
	// sources, and the roles as configured.
	Info Info
	// Usage, when set, returns the model usage of each role so far; it is
	// recorded in run.json and must be safe to call from any goroutine.
	Usage func() []llm.Stats
}

// Info describes a run for its run.json.
type Info struct {
	Version string
	// Questions and Retriever name the sources (a path, "sample").
	Questions, Retriever string
	// The roles as configured; Name is what selects the implementation
	// ("lexical", "never", "llm", ...). Seen is filled in by Run.
	Judge, Extractor, Reader Role
}

// Progress is the state of a run, as Options.Progress sees it.
type Progress struct {
	// Total is the number of questions this invocation runs; AlreadyDone
	// those an earlier one wrote (skipped); Retry those of Total that an
	// earlier one recorded as failed.
	Total       int
	AlreadyDone int
	Retry       int
	// Done and Failed count the questions written so far, States their rows.
	Done, Failed int
	States       int64
	// Parts counts the parts committed, by earlier invocations too; a
	// question is safe from a kill once its part is committed.
	Parts int
}

// Summary is what Run did: the content of run.json and the output file.
type Summary struct {
	Report
	// Trajectories is the path of trajectories.parquet; empty when the
	// run did not finish.
	Trajectories string
}

// Errors that callers branch on: package stage's, the same values as
// package label's.
var (
	// ErrOptions is the cause of errors about bad Options.
	ErrOptions = stage.ErrOptions
	// ErrOutExists is returned when Out is not empty and Resume is not set.
	ErrOutExists = stage.ErrOutExists
	// ErrNotRun is returned when Resume finds a directory that is not a
	// run's output.
	ErrNotRun = stage.ErrNotRun
	// ErrMismatch is the cause of errors about runs that cannot be
	// continued or merged because they were configured differently.
	ErrMismatch = stage.ErrMismatch
	// ErrFailing is returned when too many questions in a row failed
	// (Options.StopAfterFailures), and ErrAllFailed when the output is
	// complete but every question in it failed.
	ErrFailing   = stage.ErrFailing
	ErrAllFailed = stage.ErrAllFailed
)

// Run runs the loop over the questions with Workers goroutines and writes
// every state to Out, as the package documentation describes.
//
// A question whose loop returned a *rollout.RoleError is written as the
// states it completed followed by a failure row (rollout.FailedState) and
// counted; the run goes on, unless StopAfterFailures questions in a row
// failed (ErrFailing). Any other error is systemic: a cancelled context, a
// retriever that fails, refused credentials, an output that cannot be
// written. It ends the run, and Run returns it with the Summary so far;
// what was checkpointed stays in Out, and Resume continues from there. A
// run whose every question failed writes its output and returns
// ErrAllFailed with the Summary.
func Run(ctx context.Context, opts Options) (Summary, error) {
	r, err := newRun(opts)
	if err != nil {
		return Summary{}, err
	}
	if err := stage.Run(ctx, r.job()); errors.Is(err, ErrAllFailed) {
		return Summary{Report: r.report, Trajectories: filepath.Join(r.opts.Out, TrajectoriesFile)}, err
	} else if err != nil {
		return Summary{Report: r.report}, err
	}
	out := r.report.Counts.Output
	r.log.Info("rollout done", "questions", out.Questions, "failed", out.Failed, "rows", out.Rows,
		"seconds", r.report.WallSeconds, "questions_per_second", r.report.QuestionsPerSecond)
	warnUnparsed(r.log, out)
	return Summary{Report: r.report, Trajectories: filepath.Join(r.opts.Out, TrajectoriesFile)}, nil
}

// run is what one invocation keeps beside the engine's state: the report
// and the counts of the rows written and read.
type run struct {
	opts   Options
	log    *slog.Logger
	report Report
	// failed and states count the failed questions and the states of the
	// others that this invocation wrote (the engine's writer goroutine
	// updates them).
	failed int
	states int64
	// tally counts the rows of trajectories.parquet as it is assembled.
	tally *tally
	// repeats are the rows of the input (from 0) whose id an earlier row
	// has, as the counting pass found them (counted says it ran).
	repeats []int
	counted bool
}

func newRun(o Options) (*run, error) {
	bad := stage.OptionsErrorf
	switch {
	case o.Out == "":
		return nil, bad("no output directory")
	case o.Questions == nil:
		return nil, bad("no questions")
	case o.Roles.Judge == nil || (o.Roles.Extractor == nil && o.Roles.Compressor == nil) || o.Roles.Reader == nil || o.Roles.Retriever == nil:
		return nil, fmt.Errorf("a role or the retriever is nil: %w", rollout.ErrMissingRole)
	case o.Workers < 0, o.Limit < 0, o.CheckpointQuestions < 0, o.CheckpointInterval < 0:
		return nil, bad("negative workers, limit or checkpoint bound")
	}
	if err := o.Shard.Check(); err != nil {
		return nil, err
	}
	if err := checkLoop(o.Loop); err != nil {
		return nil, err
	}
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.CheckpointQuestions = cmp.Or(o.CheckpointQuestions, DefaultCheckpointQuestions)
	o.CheckpointInterval = cmp.Or(o.CheckpointInterval, DefaultCheckpointInterval)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &run{opts: o, log: log, tally: newTally()}
	r.report = Report{
		Header: stage.Header{Version: o.Info.Version},
		Config: Config{
			Questions: o.Info.Questions, Retriever: o.Info.Retriever,
			Limit: o.Limit, Shard: o.Shard.String(), Workers: o.Workers,
			CheckpointQuestions: o.CheckpointQuestions, CheckpointSeconds: o.CheckpointInterval.Seconds(),
			Loop: loopConfig(o.Loop),
		},
		Roles: Roles{Judge: configured(o.Info.Judge), Extractor: configured(o.Info.Extractor), Reader: configured(o.Info.Reader)},
	}
	return r, nil
}

func configured(r Role) Role {
	return Role{Name: r.Name, Model: r.Model, BaseURL: r.BaseURL, Setting: r.Setting}
}

// checkLoop rejects loop options that rollout.Run would reject on every
// question, before anything is written.
func checkLoop(o rollout.Options) error {
	if o.MaxRetrievals < 0 || o.TopK < 0 || o.MaxEvidence < 0 || o.MaxSentences < 0 {
		return fmt.Errorf("negative loop option in %+v: %w", o, rollout.ErrOptions)
	}
	if _, err := rollout.ParsePolicy(o.Policy.String()); err != nil {
		return err
	}
	_, err := rollout.ParseDedup(o.Dedup.String())
	return err
}

// layout describes a rollout's output to the engine: trajectories, whose
// units are questions.
func layout(count func([]data.State) error) stage.Layout[string, data.State, *Report] {
	return stage.Layout[string, data.State, *Report]{
		File: TrajectoriesFile, ReportFile: ReportFile, Kind: data.KindTrajectories, Unit: "questions",
		Key:      func(s *data.State) string { return s.QuestionID },
		Describe: func(id string) string { return "question " + id },
		Failure:  func(rows []data.State) string { return rows[len(rows)-1].Failure },
		Count:    count,
		Read: func(dir string) (*Report, error) {
			rep, err := ReadReport(dir)
			return &rep, err
		},
		Same: func(a, b *Report, shard bool) error { return sameRows(*a, *b, shard) },
	}
}

// job is this invocation for the engine.
func (r *run) job() stage.Job[string, data.Question, data.State, *Report] {
	o := r.opts
	return stage.Job[string, data.Question, data.State, *Report]{
		Layout: layout(r.tally.question),
		Name:   "rollout", Report: &r.report, Out: o.Out, Resume: o.Resume, Input: "questions",
		KeepFailed: o.KeepFailed, StopAfterFailures: o.StopAfterFailures,
		Units:   r.questions,
		UnitKey: func(q data.Question) string { return q.ID },
		Work:    r.work,
		Workers: o.Workers, CheckpointUnits: o.CheckpointQuestions, CheckpointInterval: o.CheckpointInterval,
		Usage:    o.Usage,
		Wrote:    r.wrote,
		Stamp:    r.stamp,
		Finish:   r.finish,
		Progress: r.progress,
		Logger:   r.log, LogAttrs: []any{"shard", o.Shard.String(), "limit", o.Limit},
	}
}

// questions yields the questions of the run: the first Limit unique ids of
// the input that the Shard holds. With count it counts the input's
// questions and repeated ids into the report.
//
// A repeated id runs once. The counting pass, which the engine runs
// first, finds the rows whose id an earlier row has with a set of every
// id, and notes them; the pass that runs the questions skips those rows
// and holds no id.
func (r *run) questions(_ context.Context, count bool) iter.Seq2[data.Question, error] {
	return func(yield func(data.Question, error) bool) {
		var seen map[string]bool
		if count || !r.counted {
			seen = map[string]bool{}
		}
		var repeats []int // rows of this pass whose id came before
		distinct, row := 0, -1
		for q, err := range r.opts.Questions {
			if err != nil {
				yield(data.Question{}, fmt.Errorf("read questions: %w", err))
				return
			}
			if r.opts.Limit > 0 && distinct == r.opts.Limit {
				break
			}
			row++
			if q.ID == "" {
				yield(data.Question{}, fmt.Errorf("read questions: question %d has no id", row+1))
				return
			}
			var repeat bool
			if seen != nil {
				repeat = seen[q.ID]
				seen[q.ID] = true
			} else if len(repeats) < len(r.repeats) && r.repeats[len(repeats)] == row {
				repeat = true
			}
			if repeat {
				repeats = append(repeats, row)
				continue
			}
			distinct++
			if r.opts.Shard.Holds(q.ID) && !yield(q, nil) {
				return
			}
		}
		if count {
			r.repeats, r.counted = repeats, true
			c := &r.report.Counts
			c.InputQuestions, c.DuplicateIDs = distinct+len(repeats), len(repeats)
			if len(repeats) > 0 {
				r.log.Warn("questions with a repeated id skipped", "count", len(repeats))
			}
		}
	}
}

// work runs the loop on one question and returns its rows.
func (r *run) work(ctx context.Context, q data.Question) ([]data.State, error) {
	tr, err := rollout.Run(ctx, q, r.opts.Roles, r.opts.Loop)
	var roleErr *rollout.RoleError
	switch {
	case errors.Is(err, llm.ErrAuth):
		// Refused credentials fail every question: systemic.
		return nil, fmt.Errorf("question %s: %w", q.ID, err)
	case errors.As(err, &roleErr):
		// The states completed before the failure were real, and paid
		// for: they are kept, before the failure row that ends them.
		fail := rollout.FailedState(q, err)
		fail.Round = int32(len(tr.States))
		return append(tr.States, fail), nil
	case err != nil:
		return nil, fmt.Errorf("question %s: %w", q.ID, err)
	case len(tr.States) == 0 || !tr.States[len(tr.States)-1].IsFinal:
		return nil, fmt.Errorf("question %s: the loop returned no final state", q.ID)
	}
	return tr.States, nil
}

// wrote counts a question the engine wrote; a failed one is its one
// failure row.
func (r *run) wrote(rows []data.State) {
	if f := rows[len(rows)-1].Failure; f != "" {
		r.failed++
		r.log.Warn("question failed", "question", rows[0].QuestionID, "reason", f, "states_kept", len(rows)-1)
		return
	}
	r.states += int64(len(rows))
}

// stamp fills in the counts of the report.
func (r *run) stamp(p stage.Progress) {
	rep := &r.report
	c := &rep.Counts
	c.Selected, c.AlreadyDone = p.Selected, p.AlreadyDone
	c.Run = RunCounts{Done: p.Done - r.failed, Failed: r.failed, States: r.states}
	c.Output.Parts = p.Parts
	if rep.WallSeconds > 0 {
		rep.QuestionsPerSecond = float64(p.Done) / rep.WallSeconds
	}
}

// finish records what trajectories.parquet holds, once it is complete.
func (r *run) finish() {
	r.report.Counts.Output = r.tally.c
	r.tally.seen(&r.report.Roles)
}

func (r *run) progress(p stage.Progress) {
	if r.opts.Progress != nil {
		r.opts.Progress(Progress{Total: p.Total, AlreadyDone: p.AlreadyDone, Retry: p.Retry, Done: p.Done - r.failed, Failed: r.failed,
			States: r.states, Parts: p.Parts})
	}
}

// warnUnparsed warns when no output of the judge, or of the reader, could
// be parsed: the questions did not fail, yet the model does not answer in
// the form asked (a wrong model, template or server), and every verdict
// or answer is the fallback.
func warnUnparsed(log *slog.Logger, o OutputCounts) {
	judged := o.Rows - int64(o.Failed) // every other row is a judge call
	if judged > 0 && o.JudgeParseFailures == judged {
		log.Warn("no judge output could be parsed: every verdict is the fallback (insufficient, no gaps); check the judge's model and server",
			"judge_calls", judged)
	}
	if o.Done > 0 && o.ReaderParseFailures == int64(o.Done) {
		log.Warn("no reader output could be parsed: check the reader's model and server", "reader_calls", o.Done)
	}
}
