package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/distill-rag/distill/data"
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
	// skipped. Without Resume, Out must be empty or absent.
	Resume bool
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
	// those an earlier one wrote (skipped).
	Total       int
	AlreadyDone int
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

// Errors that callers branch on.
var (
	// ErrOptions is the cause of errors about bad Options.
	ErrOptions = errors.New("bad run options")
	// ErrOutExists is returned when Out is not empty and Resume is not set.
	ErrOutExists = errors.New("output directory is not empty")
	// ErrNotRun is returned when Resume finds a directory that is not a
	// run's output.
	ErrNotRun = errors.New("not the output directory of a rollout")
)

// Run runs the loop over the questions with Workers goroutines and writes
// every state to Out, as the package documentation describes.
//
// A question whose loop returned a *rollout.RoleError is written as a
// failure row (rollout.FailedState) and counted; the run goes on. Any other
// error is systemic: a cancelled context, a retriever that fails, refused
// credentials, an output that cannot be written. It ends the run, and Run
// returns it with the Summary so far; what was checkpointed stays in Out,
// and Resume continues from there.
func Run(ctx context.Context, opts Options) (Summary, error) {
	r, err := newRun(opts)
	if err != nil {
		return Summary{}, err
	}
	return r.run(ctx)
}

// run is the state of one invocation.
type run struct {
	opts   Options
	log    *slog.Logger
	parts  string
	start  time.Time
	report Report
	// fresh is set when the output directory was empty or absent, and
	// created when Run created it.
	fresh, created bool
	// todo holds the ids of the questions this invocation runs.
	todo map[string]struct{}
	pw   *data.PartWriter[data.State]
	prog Progress
	// prevUsage is the usage that earlier invocations recorded.
	prevUsage []llm.Stats
	// out is trajectories.parquet being written: the rows of the earlier
	// parts, then each question's as it is written to its part. tally
	// counts them, src being the part they go to.
	out   *data.ParquetWriter[data.State]
	tally *tally
	src   int
}

func newRun(o Options) (*run, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrOptions)
	}
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
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.CheckpointQuestions == 0 {
		o.CheckpointQuestions = DefaultCheckpointQuestions
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &run{opts: o, log: log, parts: filepath.Join(o.Out, PartsDir)}
	r.pw = data.NewPartWriter[data.State](r.parts, data.KindTrajectories, 0)
	r.report = Report{
		Status:  StatusRunning,
		Version: o.Info.Version,
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

func configured(r Role) Role { return Role{Name: r.Name, Model: r.Model, BaseURL: r.BaseURL} }

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

func (r *run) run(ctx context.Context) (Summary, error) {
	r.start = time.Now()
	r.report.StartedAt = r.start.UTC()
	if err := r.begin(ctx); err != nil {
		if r.out != nil {
			r.out.Abort()
		}
		if r.fresh {
			// Leave nothing behind that would need --resume.
			os.Remove(r.parts)
			if r.created {
				os.Remove(r.opts.Out)
			}
		}
		return Summary{Report: r.report}, err
	}
	defer r.out.Abort() // unless finish closed it
	c := &r.report.Counts
	r.log.Info("rollout starting", "out", r.opts.Out, "selected", c.Selected, "already_done", c.AlreadyDone,
		"to_run", len(r.todo), "workers", r.opts.Workers, "shard", r.opts.Shard.String(), "limit", r.opts.Limit)
	r.progress()

	if err := r.pipeline(ctx); err != nil {
		return r.interrupted(err)
	}
	return r.finish()
}

// begin prepares the output directory, reads what earlier invocations
// wrote, selects the questions to run and writes the first run.json.
func (r *run) begin(ctx context.Context) error {
	if err := r.prepare(); err != nil {
		return err
	}
	if err := r.openOutput(ctx); err != nil {
		return err
	}
	if err := r.selectQuestions(); err != nil {
		return err
	}
	// Stamped, so that a kill before the first checkpoint keeps the usage
	// of the earlier invocations.
	r.stamp(false)
	return writeReport(r.opts.Out, r.report)
}

// prepare checks the output directory, and for a resumed run reads what
// the earlier invocations wrote.
func (r *run) prepare() error {
	out := r.opts.Out
	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("output directory: %w", err)
	}
	r.fresh, r.created = len(entries) == 0, errors.Is(err, os.ErrNotExist)
	if !r.fresh {
		if !r.opts.Resume {
			return fmt.Errorf("%s: %w", out, ErrOutExists)
		}
		prev, err := ReadReport(out)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s has no %s: %w", out, ReportFile, ErrNotRun)
		}
		if err != nil {
			return err
		}
		if err := sameRows(prev, r.report, true); err != nil {
			return fmt.Errorf("resume %s: %w", out, err)
		}
		r.report.Resumes = prev.Resumes + 1
		r.prevUsage = prev.Usage
	}
	removed, err := data.PrepareParts(out, r.parts)
	for _, path := range removed {
		r.log.Info("removed the leftover of an interrupted write", "file", path)
	}
	if err != nil {
		return err
	}
	return nil
}

// openOutput starts trajectories.parquet with the rows of the parts that
// earlier invocations wrote, in order, counting them.
func (r *run) openOutput(ctx context.Context) error {
	parts, err := data.ListParts(r.parts)
	if err != nil {
		return err
	}
	w, err := data.CreateParquet[data.State](filepath.Join(r.opts.Out, TrajectoriesFile), data.KindTrajectories)
	if err != nil {
		return err
	}
	r.out, r.tally = w, newTally()
	for _, p := range parts {
		src := r.tally.source(filepath.Join(PartsDir, filepath.Base(p.Path)))
		err := data.EachRow(ctx, p.Path, data.KindTrajectories, func(rows []data.State) error {
			for i := range rows {
				if err := r.tally.add(src, &rows[i]); err != nil {
					return err
				}
			}
			return w.Write(rows)
		})
		if err == nil {
			err = r.tally.endSource()
		}
		if err != nil {
			return fmt.Errorf("read checkpoint: %w", err)
		}
	}
	if len(parts) > 0 {
		r.pw = data.NewPartWriter[data.State](r.parts, data.KindTrajectories, parts[len(parts)-1].N+1)
	}
	r.prog.Parts = len(parts)
	return nil
}

// selectQuestions reads the ids of the questions, keeps those of the run
// (the first Limit unique ids that the shard holds) and, of those, the ones
// no part holds yet: the questions to run now.
func (r *run) selectQuestions() error {
	done := r.tally.seen
	c := &r.report.Counts
	seen := make(map[string]struct{})
	r.todo = make(map[string]struct{})
	i := 0
	for q, err := range r.opts.Questions {
		if err != nil {
			return fmt.Errorf("read questions: %w", err)
		}
		if r.opts.Limit > 0 && len(seen) == r.opts.Limit {
			break
		}
		i++
		if q.ID == "" {
			return fmt.Errorf("read questions: question %d has no id", i)
		}
		if _, dup := seen[q.ID]; dup {
			c.DuplicateIDs++
			continue
		}
		seen[q.ID] = struct{}{}
		if !r.opts.Shard.Holds(q.ID) {
			continue
		}
		c.Selected++
		if _, ok := done[q.ID]; ok {
			c.AlreadyDone++
			continue
		}
		r.todo[q.ID] = struct{}{}
	}
	c.InputQuestions = len(seen) + c.DuplicateIDs
	if extra := len(done) - c.AlreadyDone; extra > 0 {
		return fmt.Errorf("resume %s: its parts hold %d questions that this run does not select (different questions file?): %w", r.opts.Out, extra, ErrMismatch)
	}
	if c.DuplicateIDs > 0 {
		r.log.Warn("questions with a repeated id skipped", "count", c.DuplicateIDs)
	}
	r.prog.Total, r.prog.AlreadyDone = len(r.todo), c.AlreadyDone
	return nil
}

// result is one question's rows, from a worker to the writer.
type result struct {
	id      string
	states  []data.State
	failure string
}

// pipeline runs the questions: a producer hands them to at most Workers
// goroutines, which send their rows to the one goroutine that writes the
// parts. It returns when every question is written or the run fails.
func (r *run) pipeline(ctx context.Context) error {
	if len(r.todo) == 0 {
		return nil
	}
	g, ctx := errgroup.WithContext(ctx)
	results := make(chan result, r.opts.Workers)
	g.Go(func() error { return r.write(results) })
	g.Go(func() error {
		defer close(results) // ends the writer, once every worker is done
		return r.dispatch(ctx, results)
	})
	return g.Wait()
}

// dispatch reads the questions again and runs those to do, Workers at a
// time. It returns when every worker has returned.
func (r *run) dispatch(ctx context.Context, results chan<- result) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.opts.Workers)
	var readErr error
	for q, err := range r.opts.Questions {
		if err != nil {
			readErr = fmt.Errorf("read questions: %w", err)
			break
		}
		if ctx.Err() != nil || len(r.todo) == 0 {
			break
		}
		if _, ok := r.todo[q.ID]; !ok {
			continue
		}
		delete(r.todo, q.ID) // a repeated id runs once
		g.Go(func() error { return r.runOne(ctx, q, results) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if readErr == nil && len(r.todo) > 0 && ctx.Err() == nil {
		readErr = fmt.Errorf("read questions: %d selected questions were not there the second time (did the input change?)", len(r.todo))
	}
	return readErr
}

// runOne runs the loop on one question and sends its rows to the writer.
func (r *run) runOne(ctx context.Context, q data.Question, results chan<- result) error {
	tr, err := rollout.Run(ctx, q, r.opts.Roles, r.opts.Loop)
	res := result{id: q.ID, states: tr.States}
	var roleErr *rollout.RoleError
	switch {
	case errors.Is(err, llm.ErrAuth):
		// Refused credentials fail every question: systemic.
		return fmt.Errorf("question %s: %w", q.ID, err)
	case errors.As(err, &roleErr):
		res = result{id: q.ID, states: []data.State{rollout.FailedState(q, err)}, failure: err.Error()}
	case err != nil:
		return fmt.Errorf("question %s: %w", q.ID, err)
	case len(tr.States) == 0 || !tr.States[len(tr.States)-1].IsFinal:
		return fmt.Errorf("question %s: the loop returned no final state", q.ID)
	}
	select {
	case results <- res:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write is the one goroutine that writes the output: it adds each
// question's rows to the current part and to trajectories.parquet, and
// commits the part after CheckpointQuestions questions or
// CheckpointInterval, and when results is closed. It returns when results
// is closed or a write fails.
func (r *run) write(results <-chan result) error {
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
		case res, ok := <-results:
			if !ok {
				if err := commit(); err != nil {
					return err
				}
				r.progress()
				return nil
			}
			opening := !r.pw.Open()
			if err := r.record(res); err != nil {
				return err
			}
			if opening {
				timer = time.NewTimer(r.opts.CheckpointInterval)
				deadline = timer.C
			}
			if r.pw.Units() >= r.opts.CheckpointQuestions {
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

// record writes one question's rows to the current part (starting one if
// needed) and to trajectories.parquet, and counts them.
func (r *run) record(res result) error {
	if !r.pw.Open() {
		r.src = r.tally.source(filepath.Join(PartsDir, data.PartName(r.pw.Next())))
	}
	if err := r.pw.Write(res.states); err != nil {
		return err
	}
	for i := range res.states {
		if err := r.tally.add(r.src, &res.states[i]); err != nil {
			return err
		}
	}
	if err := r.out.Write(res.states); err != nil {
		return err
	}
	if res.failure != "" {
		r.prog.Failed++
		r.log.Warn("question failed", "question", res.id, "reason", res.failure)
	} else {
		r.prog.Done++
		r.prog.States += int64(len(res.states))
	}
	return nil
}

// commit commits the current part, if one is open, and writes out the rows
// trajectories.parquet buffers, so memory stays flat between checkpoints.
func (r *run) commit() error {
	name, questions, rows, err := r.pw.Commit()
	if err != nil || name == "" {
		return err
	}
	if err := r.out.Flush(); err != nil {
		return err
	}
	r.prog.Parts++
	r.log.Info("checkpoint", "part", name, "questions", questions, "rows", rows,
		"done", r.prog.Done, "failed", r.prog.Failed, "of", r.prog.Total)
	// Keep run.json current, so that a resumed run knows the usage so far.
	r.stamp(false)
	r.report.Counts.Output.Parts = r.prog.Parts
	return writeReport(r.opts.Out, r.report)
}

func (r *run) progress() {
	if r.opts.Progress != nil {
		r.opts.Progress(r.prog)
	}
}

// stamp fills in the times, counts and usage of the report; ended says
// whether the invocation has ended.
func (r *run) stamp(ended bool) {
	now := time.Now()
	rep := &r.report
	if ended {
		rep.FinishedAt = now.UTC()
	}
	wall := now.Sub(r.start)
	rep.WallSeconds = wall.Seconds()
	c := &rep.Counts
	c.Run = RunCounts{Done: r.prog.Done, Failed: r.prog.Failed, States: r.prog.States}
	if wall > 0 {
		rep.QuestionsPerSecond = float64(c.Run.Done+c.Run.Failed) / wall.Seconds()
	}
	rep.Usage = slices.Clone(r.prevUsage)
	if r.opts.Usage != nil {
		rep.Usage = llm.AddStats(rep.Usage, r.opts.Usage())
	}
	rep.CostUSD = 0
	for _, s := range rep.Usage {
		rep.CostUSD += s.CostUSD
	}
}

// interrupted records in run.json that the run ended early, and returns err.
func (r *run) interrupted(err error) (Summary, error) {
	r.stamp(true)
	r.report.Status, r.report.Error = StatusInterrupted, err.Error()
	r.report.Counts.Output.Parts = r.prog.Parts
	if werr := writeReport(r.opts.Out, r.report); werr != nil {
		r.log.Warn("could not record the interruption", "err", werr)
	}
	return Summary{Report: r.report}, err
}

// finish commits trajectories.parquet, once it holds every selected
// question, and writes run.json.
func (r *run) finish() (Summary, error) {
	out, err := r.tally.done()
	if err == nil && out.Questions != r.report.Counts.Selected {
		err = fmt.Errorf("the parts hold %d questions, want %d", out.Questions, r.report.Counts.Selected)
	}
	if err == nil {
		err = r.out.Close()
	}
	if err != nil {
		return r.interrupted(fmt.Errorf("write %s: %w", TrajectoriesFile, err))
	}
	out.Parts = r.prog.Parts
	r.stamp(true)
	rep := &r.report
	rep.Status = StatusDone
	rep.Counts.Output = out
	rep.Roles.Judge.Seen, rep.Roles.Extractor.Seen, rep.Roles.Reader.Seen = seenOf(r.tally.judge), seenOf(r.tally.extractor), seenOf(r.tally.reader)
	if err := writeReport(r.opts.Out, *rep); err != nil {
		return Summary{Report: *rep}, err
	}
	r.log.Info("rollout done", "questions", out.Questions, "failed", out.Failed, "rows", out.Rows,
		"seconds", rep.WallSeconds, "questions_per_second", rep.QuestionsPerSecond)
	return Summary{Report: *rep, Trajectories: filepath.Join(r.opts.Out, TrajectoriesFile)}, nil
}
