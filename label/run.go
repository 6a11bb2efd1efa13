package label

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

// Names of what a labelling run writes in its output directory.
const (
	LabelsFile = "labels.parquet"
	ReportFile = "label.json"
	PartsDir   = "parts"
)

// Defaults of Options.
const (
	DefaultWorkers            = 16
	DefaultCheckpointStates   = 512
	DefaultCheckpointInterval = 30 * time.Second
)

// Errors that callers branch on.
var (
	// ErrOptions is the cause of errors about bad Options.
	ErrOptions = errors.New("bad label options")
	// ErrOutExists is returned when Out is not empty and Resume is not set.
	ErrOutExists = errors.New("output directory is not empty")
	// ErrNotRun is returned when Resume finds a directory that is not a
	// labelling run's output.
	ErrNotRun = errors.New("not the output directory of a labelling run")
	// ErrMismatch is returned when Resume finds a run configured
	// differently.
	ErrMismatch = errors.New("labelling run configured differently")
	// ErrBudget is returned when the run stopped because its budget was
	// spent; what was labelled is checkpointed, and Resume with a larger
	// budget goes on.
	ErrBudget = errors.New("budget reached")
)

// Options configure Run.
type Options struct {
	// In is a rollout's trajectories.parquet.
	In string
	// Questions holds the questions of the states, by id: their gold titles
	// and answers are the retrieval truth recorded with every label.
	Questions map[string]data.Question
	// Teacher labels each state Samples times (default 1).
	Teacher Teacher
	Samples int
	// Out is the output directory.
	Out string
	// Resume continues the run in Out: states that its parts hold are
	// skipped. Without Resume, Out must be empty or absent.
	Resume bool
	// Workers is the number of states labelled at once (default 16).
	Workers int
	// Limit, when positive, labels only the first Limit states of In.
	Limit int
	// Shard keeps the states of the questions of one shard (by a hash of
	// the question id, as rollout shards; the zero Shard keeps all), so
	// that several machines label one rollout; Merge joins their outputs.
	Shard data.Shard
	// CheckpointStates and CheckpointInterval bound the states and the time
	// between two checkpoints (defaults 512 and 30s).
	CheckpointStates   int
	CheckpointInterval time.Duration
	// BudgetUSD, when positive, stops the run once Cost reaches it: no new
	// state is started, those in flight are finished and written, and Run
	// returns ErrBudget. The budget covers this invocation's spending.
	BudgetUSD float64
	// Cost returns what this invocation has spent so far (USD); it must be
	// safe to call from any goroutine. Required with BudgetUSD.
	Cost func() float64
	// Usage, when set, returns the teacher's model usage so far, for
	// label.json and the progress.
	Usage func() []llm.Stats
	// Batch, when set, labels through a batch API instead of calling the
	// Teacher (see BatchOptions).
	Batch *BatchOptions
	// Progress, when set, is called when the run starts and after each
	// state is written, never concurrently; it must return quickly.
	Progress func(Progress)
	// Logger receives the run's log; nil discards it.
	Logger *slog.Logger
	// Info describes the run for label.json.
	Info Info
}

// Progress is the state of a run, as Options.Progress sees it.
type Progress struct {
	// Total is the number of states this invocation labels; AlreadyDone
	// those an earlier one wrote.
	Total, AlreadyDone int
	// Done counts the states written so far, Failed those of them with no
	// usable sample; Samples the samples they hold.
	Done, Failed int
	Samples      int64
	// Parts counts the parts committed, by earlier invocations too.
	Parts int
	// Phase says what a batch run is doing ("submitting", "waiting for
	// batch_..."); empty otherwise.
	Phase string
}

// Summary is what Run did: the content of label.json and the output file.
type Summary struct {
	Report
	// Labels is the path of labels.parquet; empty when the run did not
	// finish.
	Labels string
}

// Run labels every state of In (the first Limit) with the Teacher and
// writes one data.Label per state to Out/labels.parquet, with Out/label.json.
//
// It works like a rollout (package rollout/runner): the states are
// labelled Workers at a time and written by one goroutine to checkpointed
// parts (Out/parts/part-NNNNN.parquet, whole states), so that after a kill
// Resume goes on where the last checkpoint was, losing and duplicating
// nothing. labels.parquet is assembled from the parts when every selected
// state is in them. Rows of failed questions (State.Failure) are not
// states: they are counted and skipped. A sample that cannot be used is
// recorded in its label; only systemic errors (cancellation, refused
// credentials, an output that cannot be written) end the run early, and
// then Run returns the error with the Summary so far.
func Run(ctx context.Context, opts Options) (Summary, error) {
	if opts.Out == "" {
		return Summary{}, fmt.Errorf("no output directory: %w", ErrOptions)
	}
	r, err := newRun(opts)
	if err != nil {
		return Summary{}, err
	}
	return r.run(ctx)
}

type run struct {
	opts  Options
	log   *slog.Logger
	parts string
	start time.Time
	rep   Report
	fresh bool
	// done holds the states the parts hold; todo counts those to label now.
	done map[data.StateKey]bool
	todo int
	pw   *data.PartWriter[data.Label]
	// mu guards prog, which the writer and a batch run's poller update,
	// and the calls of Options.Progress.
	mu   sync.Mutex
	prog Progress
	// prevUsage is what earlier invocations spent.
	prevUsage []llm.Stats
	// batchUsage is what the states a batch run wrote cost, and batches
	// its batches (both guarded by mu).
	batchUsage llm.Stats
	batches    []BatchRecord
}

func newRun(o Options) (*run, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrOptions)
	}
	switch {
	case o.In == "":
		return nil, bad("no input trajectories")
	case o.Teacher == nil && o.Batch == nil:
		return nil, bad("no teacher")
	case o.Questions == nil:
		return nil, bad("no questions (retrieval truth needs them)")
	case o.Samples < 0, o.Workers < 0, o.Limit < 0, o.CheckpointStates < 0, o.CheckpointInterval < 0, o.BudgetUSD < 0:
		return nil, bad("negative samples, workers, limit, checkpoint bound or budget")
	case o.BudgetUSD > 0 && o.Cost == nil && o.Batch == nil:
		return nil, bad("a budget needs a cost meter")
	}
	o.Samples = cmpOr(o.Samples, 1)
	o.Workers = cmpOr(o.Workers, DefaultWorkers)
	o.CheckpointStates = cmpOr(o.CheckpointStates, DefaultCheckpointStates)
	o.CheckpointInterval = cmpOr(o.CheckpointInterval, DefaultCheckpointInterval)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Without Out (a preflight), parts is "parts" relative to nothing
	// that is read: readDone finds none unless Out is set.
	r := &run{opts: o, log: log}
	if o.Out != "" {
		r.parts = filepath.Join(o.Out, PartsDir)
	}
	r.rep = Report{
		Status:  StatusRunning,
		Version: o.Info.Version,
		Config: Config{
			In: o.In, Questions: o.Info.Questions,
			Teacher: o.Info.Teacher, Model: o.Info.Model, BaseURL: o.Info.BaseURL, Template: o.Info.Template,
			Samples: o.Samples, Temperature: o.Info.Temperature, MaxTokens: o.Info.MaxTokens, SeedBase: o.Info.SeedBase,
			Workers: o.Workers, Limit: o.Limit, Shard: o.Shard.String(), BudgetUSD: o.BudgetUSD, Batch: o.Batch != nil,
		},
	}
	return r, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (r *run) run(ctx context.Context) (Summary, error) {
	r.start = time.Now()
	r.rep.StartedAt = r.start.UTC()
	if err := r.begin(ctx); err != nil {
		if r.fresh {
			os.Remove(r.parts)
		}
		return Summary{Report: r.rep}, err
	}
	c := r.rep.Counts
	r.log.Info("labelling starting", "out", r.opts.Out, "states", c.Selected, "already_done", c.AlreadyDone,
		"to_label", r.todo, "samples", r.opts.Samples, "workers", r.opts.Workers)
	r.progress()
	err := r.pipeline(ctx)
	if err != nil {
		return r.interrupted(err)
	}
	return r.finish(ctx)
}

// begin prepares the output directory, reads what earlier invocations
// wrote, selects the states and writes the first label.json.
func (r *run) begin(ctx context.Context) error {
	out := r.opts.Out
	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("output directory: %w", err)
	}
	r.fresh = len(entries) == 0
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
		if err := sameLabels(prev.Config, r.rep.Config); err != nil {
			return fmt.Errorf("resume %s: %w", out, err)
		}
		r.rep.Resumes = prev.Resumes + 1
		r.prevUsage = prev.Usage
	}
	removed, err := data.PrepareParts(out, r.parts)
	for _, path := range removed {
		r.log.Info("removed the leftover of an interrupted write", "file", path)
	}
	if err != nil {
		return err
	}
	if err := r.readDone(ctx); err != nil {
		return err
	}
	if err := r.selectStates(ctx); err != nil {
		return err
	}
	// Stamped, so that a kill before the first checkpoint keeps the usage
	// of the earlier invocations.
	r.stamp(false)
	return writeReport(out, r.rep)
}

// readDone reads the states that the parts of earlier invocations hold and
// readies the part writer to go on after them.
func (r *run) readDone(ctx context.Context) error {
	r.done = make(map[data.StateKey]bool)
	if r.parts == "" {
		return nil
	}
	parts, err := data.ListParts(r.parts)
	if err != nil {
		return err
	}
	for _, p := range parts {
		err := data.EachRow(ctx, p.Path, data.KindLabels, func(rows []data.Label) error {
			for _, l := range rows {
				if r.done[l.Key()] {
					return fmt.Errorf("%s: state %s round %d is in two parts", p.Path, l.QuestionID, l.Round)
				}
				r.done[l.Key()] = true
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read checkpoint: %w", err)
		}
	}
	next := 0
	if len(parts) > 0 {
		next = parts[len(parts)-1].N + 1
	}
	r.pw = data.NewPartWriter[data.Label](r.parts, data.KindLabels, next)
	r.prog.Parts = len(parts)
	return nil
}

// selectStates reads the input once: it counts its rows, checks that every
// state is there once with its question, and counts the states to label.
func (r *run) selectStates(ctx context.Context) error {
	c := &r.rep.Counts
	seen := make(map[data.StateKey]bool)
	missing := map[string]bool{}
	for s, err := range r.states(ctx) {
		if err != nil {
			return err
		}
		c.InputRows++
		if s.Failure != "" {
			c.FailedQuestionRows++
			continue
		}
		if !r.opts.Shard.Holds(s.QuestionID) {
			c.OtherShards++
			continue
		}
		if r.opts.Limit > 0 && c.Selected == r.opts.Limit {
			continue
		}
		k := s.Key()
		if seen[k] {
			return fmt.Errorf("%s: state %s round %d appears twice (merge shards with distill merge)", r.opts.In, s.QuestionID, s.Round)
		}
		seen[k] = true
		if _, ok := r.opts.Questions[s.QuestionID]; !ok {
			missing[s.QuestionID] = true
			continue
		}
		c.Selected++
		if r.done[k] {
			c.AlreadyDone++
		}
	}
	if len(missing) > 0 {
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range missing {
				if !yield(id) {
					return
				}
			}
		})
		return fmt.Errorf("%d questions of %s are not in the questions given (wrong --questions?), e.g. %q: %w",
			len(ids), r.opts.In, ids[0], ErrOptions)
	}
	if extra := len(r.done) - c.AlreadyDone; extra > 0 {
		return fmt.Errorf("resume %s: its parts hold %d states that this run does not select (different input?): %w", r.opts.Out, extra, ErrMismatch)
	}
	r.todo = c.Selected - c.AlreadyDone
	r.prog.Total, r.prog.AlreadyDone = r.todo, c.AlreadyDone
	return nil
}

// states streams the rows of the input.
func (r *run) states(ctx context.Context) iter.Seq2[data.State, error] {
	return func(yield func(data.State, error) bool) {
		stop := errors.New("stop")
		err := data.EachRow(ctx, r.opts.In, data.KindTrajectories, func(rows []data.State) error {
			for _, s := range rows {
				if !yield(s, nil) {
					return stop
				}
			}
			return nil
		})
		if err != nil && err != stop {
			yield(data.State{}, fmt.Errorf("read %s: %w", r.opts.In, err))
		}
	}
}

// todoItems yields the items to label now, in input order.
func (r *run) todoItems(ctx context.Context) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		selected, left, row := 0, r.todo, -1
		for s, err := range r.states(ctx) {
			if err != nil {
				yield(Item{}, err)
				return
			}
			row++
			if s.Failure != "" || !r.opts.Shard.Holds(s.QuestionID) {
				continue
			}
			if left == 0 || (r.opts.Limit > 0 && selected == r.opts.Limit) {
				return
			}
			selected++
			if r.done[s.Key()] {
				continue
			}
			left--
			if !yield(Item{State: s, Question: r.opts.Questions[s.QuestionID], Row: row}, nil) {
				return
			}
		}
		if left > 0 {
			yield(Item{}, fmt.Errorf("read %s: %d selected states were not there the second time (did the input change?)", r.opts.In, left))
		}
	}
}

// pipeline labels the states to do and writes them. The producer (the
// teacher's workers, or the batch path) sends each state's label to the
// one goroutine that writes the parts.
func (r *run) pipeline(ctx context.Context) error {
	if r.todo == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	labels := make(chan data.Label, r.opts.Workers)
	g.Go(func() error { return r.write(labels) })
	g.Go(func() error {
		defer close(labels)
		emit := func(l data.Label) error {
			select {
			case labels <- l:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		if r.opts.Batch != nil {
			return r.batch(gctx, emit)
		}
		return r.dispatch(gctx, emit)
	})
	return g.Wait()
}

// errBudgetStop marks the end of dispatching because of the budget.
var errBudgetStop = errors.New("budget stop")

// dispatch labels the states with the teacher, Workers at a time, and
// stops starting new ones once the budget is spent.
func (r *run) dispatch(ctx context.Context, emit func(data.Label) error) error {
	g, gctx := errgroup.WithContext(ctx)
	// A slot is taken before the budget is checked, so that a state starts
	// only if the budget was not spent when its slot came free: at most the
	// states in flight then run past the budget.
	slots := make(chan struct{}, r.opts.Workers)
	var err error
	budget := false
	for it, ierr := range r.todoItems(gctx) {
		if ierr != nil {
			err = ierr
			break
		}
		select {
		case slots <- struct{}{}:
		case <-gctx.Done():
		}
		if gctx.Err() != nil {
			break
		}
		if r.overBudget() {
			<-slots
			budget = true
			break
		}
		g.Go(func() error {
			defer func() { <-slots }()
			l, err := r.labelOne(gctx, it)
			if err != nil {
				return err
			}
			return emit(l)
		})
	}
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if budget {
		return errBudgetStop
	}
	return nil
}

// cost returns what this invocation has spent.
func (r *run) cost() float64 {
	if r.opts.Cost != nil {
		return r.opts.Cost()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batchUsage.CostUSD
}

// overBudget reports whether this invocation has spent its budget.
func (r *run) overBudget() bool {
	return r.opts.BudgetUSD > 0 && r.cost() >= r.opts.BudgetUSD
}

// labelOne asks the teacher for every sample of one state and aggregates
// them.
func (r *run) labelOne(ctx context.Context, it Item) (data.Label, error) {
	l := NewLabel(it, r.opts.Info.Teacher, r.opts.Info.Model, r.opts.Info.Template)
	l.Samples = make([]data.LabelSample, 0, r.opts.Samples)
	for k := range r.opts.Samples {
		s, err := r.opts.Teacher.Label(ctx, it, k)
		if err != nil {
			return data.Label{}, fmt.Errorf("label state %s round %d: %w", it.State.QuestionID, it.State.Round, err)
		}
		l.Samples = append(l.Samples, s)
	}
	Aggregate(&l)
	return l, nil
}

// write is the one goroutine that writes the parts: it commits the current
// part after CheckpointStates states or CheckpointInterval, and when labels
// is closed. It returns when labels is closed or a write fails.
func (r *run) write(labels <-chan data.Label) error {
	defer r.pw.Abort()
	var (
		timer    *time.Timer
		deadline <-chan time.Time
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
		case l, ok := <-labels:
			if !ok {
				err := commit()
				r.progress()
				return err
			}
			opening := !r.pw.Open()
			if err := r.pw.Write([]data.Label{l}); err != nil {
				return err
			}
			if opening {
				timer = time.NewTimer(r.opts.CheckpointInterval)
				deadline = timer.C
			}
			r.mu.Lock()
			r.prog.Done++
			r.prog.Samples += int64(len(l.Samples))
			if l.Failure != "" {
				r.prog.Failed++
			}
			r.mu.Unlock()
			if l.Failure != "" {
				r.log.Warn("no usable teacher sample", "question", l.QuestionID, "round", l.Round, "reason", l.Failure)
			}
			if r.pw.Units() >= r.opts.CheckpointStates {
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

// commit commits the current part, if any, and keeps label.json current.
func (r *run) commit() error {
	name, states, _, err := r.pw.Commit()
	if err != nil || name == "" {
		return err
	}
	r.mu.Lock()
	r.prog.Parts++
	r.mu.Unlock()
	r.log.Info("checkpoint", "part", name, "states", states, "done", r.prog.Done, "of", r.prog.Total)
	r.stamp(false)
	return writeReport(r.opts.Out, r.rep)
}

func (r *run) progress() {
	r.update(func(*Progress) {})
}

// update changes the progress under the lock and reports it.
func (r *run) update(change func(*Progress)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.prog)
	if r.opts.Progress != nil {
		r.opts.Progress(r.prog)
	}
}

// addBatchUsage counts the usage of a label written by a batch run, at the
// batch price.
func (r *run) addBatchUsage(l data.Label, price llm.Price, model string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := &r.batchUsage
	u.Role, u.Model = "teacher (batch)", model
	for _, s := range l.Samples {
		u.Requests++
		if s.Error != "" {
			u.Failures++
			continue
		}
		u.PromptTokens += s.PromptTokens
		u.CompletionTokens += s.CompletionTokens
		u.CostUSD += price.Cost(llm.Usage{PromptTokens: int(s.PromptTokens), CompletionTokens: int(s.CompletionTokens)})
	}
}

// setBatches records the batches of a batch run for label.json.
func (r *run) setBatches(b []BatchRecord) {
	r.mu.Lock()
	r.batches = slices.Clone(b)
	r.mu.Unlock()
}

// setPhase reports what a batch run is doing.
func (r *run) setPhase(phase string) {
	r.update(func(p *Progress) { p.Phase = phase })
}

// stamp fills in the times, counts and usage of the report.
func (r *run) stamp(ended bool) {
	now := time.Now()
	if ended {
		r.rep.FinishedAt = now.UTC()
	}
	r.rep.WallSeconds = now.Sub(r.start).Seconds()
	r.rep.Counts.Run = RunCounts{States: r.prog.Done, Failed: r.prog.Failed, Samples: r.prog.Samples}
	r.rep.Counts.Parts = r.prog.Parts
	r.rep.Usage = slices.Clone(r.prevUsage)
	if r.opts.Usage != nil {
		r.rep.Usage = llm.AddStats(r.rep.Usage, r.opts.Usage())
	}
	r.mu.Lock()
	if r.batchUsage.Requests > 0 {
		r.rep.Usage = llm.AddStats(r.rep.Usage, []llm.Stats{r.batchUsage})
	}
	if r.batches != nil {
		r.rep.Batches = slices.Clone(r.batches)
	}
	r.mu.Unlock()
	r.rep.CostUSD = 0
	for _, s := range r.rep.Usage {
		r.rep.CostUSD += s.CostUSD
	}
}

// interrupted records in label.json that the run ended early, and returns
// err (ErrBudget for a budget stop).
func (r *run) interrupted(err error) (Summary, error) {
	r.stamp(true)
	r.rep.Status, r.rep.Error = StatusInterrupted, err.Error()
	if errors.Is(err, errBudgetStop) {
		r.rep.BudgetReached = true
		r.rep.Status, r.rep.Error = StatusBudget, ""
		err = fmt.Errorf("%w: $%.4f spent of $%.4f after %d of %d states (%d labelled before); resume with a larger budget to go on",
			ErrBudget, r.cost(), r.opts.BudgetUSD, r.prog.Done, r.prog.Total, r.prog.AlreadyDone)
	}
	if werr := writeReport(r.opts.Out, r.rep); werr != nil {
		r.log.Warn("could not record the interruption", "err", werr)
	}
	return Summary{Report: r.rep}, err
}

// finish assembles labels.parquet from the parts, once they hold every
// selected state exactly once, and writes label.json.
func (r *run) finish(ctx context.Context) (Summary, error) {
	out, err := r.assemble(ctx)
	if err != nil {
		return r.interrupted(fmt.Errorf("write %s: %w", LabelsFile, err))
	}
	r.stamp(true)
	r.rep.Status = StatusDone
	r.rep.Counts.Output = out
	if err := writeReport(r.opts.Out, r.rep); err != nil {
		return Summary{Report: r.rep}, err
	}
	r.log.Info("labelling done", "states", out.States, "failed", out.Failed, "seconds", r.rep.WallSeconds)
	return Summary{Report: r.rep, Labels: filepath.Join(r.opts.Out, LabelsFile)}, nil
}

// assemble copies the rows of the parts, in order, into labels.parquet and
// counts them.
func (r *run) assemble(ctx context.Context) (OutputCounts, error) {
	parts, err := data.ListParts(r.parts)
	if err != nil {
		return OutputCounts{}, err
	}
	w, err := data.CreateParquet[data.Label](filepath.Join(r.opts.Out, LabelsFile), data.KindLabels)
	if err != nil {
		return OutputCounts{}, err
	}
	defer w.Abort()
	t := newTally()
	for _, p := range parts {
		err := data.EachRow(ctx, p.Path, data.KindLabels, func(rows []data.Label) error {
			for i := range rows {
				if err := t.add(&rows[i]); err != nil {
					return fmt.Errorf("%s: %w", p.Path, err)
				}
			}
			return w.Write(rows)
		})
		if err != nil {
			return OutputCounts{}, err
		}
	}
	if t.out.States != r.rep.Counts.Selected {
		return OutputCounts{}, fmt.Errorf("the parts hold %d states, want %d", t.out.States, r.rep.Counts.Selected)
	}
	if err := w.Close(); err != nil {
		return OutputCounts{}, err
	}
	return t.out, nil
}
