package label

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/llm"
)

// Names of what a labelling run writes in its output directory.
const (
	LabelsFile = "labels.parquet"
	ReportFile = "label.json"
	PartsDir   = stage.PartsDir
)

// Defaults of Options.
const (
	DefaultWorkers            = 16
	DefaultCheckpointStates   = 512
	DefaultCheckpointInterval = 30 * time.Second
)

// Errors that callers branch on: package stage's, the same values as
// package runner's.
var (
	// ErrOptions is the cause of errors about bad Options.
	ErrOptions = stage.ErrOptions
	// ErrOutExists is returned when Out is not empty and Resume is not set.
	ErrOutExists = stage.ErrOutExists
	// ErrNotRun is returned when Resume finds a directory that is not a
	// labelling run's output.
	ErrNotRun = stage.ErrNotRun
	// ErrMismatch is returned when Resume finds a run configured
	// differently, or Merge inputs that do not go together.
	ErrMismatch = stage.ErrMismatch
	// ErrBudget is returned when the run stopped because its budget was
	// spent; what was labelled is checkpointed, and Resume with a larger
	// budget goes on.
	ErrBudget = stage.ErrBudget
	// ErrFailing is returned when too many states in a row got no usable
	// sample (Options.StopAfterFailures), and ErrAllFailed when the output
	// is complete but no state in it got one.
	ErrFailing   = stage.ErrFailing
	ErrAllFailed = stage.ErrAllFailed
)

// Options configure Run.
type Options struct {
	// In is a rollout's trajectories.parquet.
	In string
	// Questions finds the questions of the states by id: their gold titles
	// and answers are the retrieval truth recorded with every label.
	Questions Questions
	// Teacher labels each state Samples times (default 1).
	Teacher Teacher
	Samples int
	// Out is the output directory.
	Out string
	// Resume continues the run in Out: states that its parts hold are
	// skipped, but for those with no usable sample, which are labelled
	// again unless KeepFailed. Without Resume, Out must be empty or absent.
	Resume     bool
	KeepFailed bool
	// StopAfterFailures is how many states in a row may get no usable
	// sample before the run stops with ErrFailing (a teacher server that
	// cannot be reached, or fails every request); zero means the default
	// of stage.Job, negative never.
	StopAfterFailures int
	// Workers is the number of states labelled at once (default 16).
	Workers int
	// Limit, when positive, labels only the first Limit states of In.
	Limit int
	// SkipEmpty leaves the states with no evidence (each question's first,
	// before any retrieval) unlabelled, as the authors' code does; they
	// are counted (Counts.EmptyStates).
	SkipEmpty bool
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

// Questions finds questions by id: a data.QuestionStore, which holds them on
// disk so that memory does not grow with them, or a data.QuestionMap. An
// error is systemic (the store cannot be read) and ends the run.
type Questions interface {
	Question(id string) (data.Question, bool, error)
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
// It runs on the engine of package stage, as a rollout does: the states
// are labelled Workers at a time and written by one goroutine to
// checkpointed parts (Out/parts/part-NNNNN.parquet, whole states), so that
// after a kill Resume goes on where the last checkpoint was, losing and
// duplicating nothing. labels.parquet is assembled from the parts when
// every selected state is in them. Rows of failed questions
// (State.Failure) are not states: they are counted and skipped. A sample
// that cannot be used is recorded in its label; only systemic errors
// (cancellation, refused credentials, an output that cannot be written)
// end the run early, and then Run returns the error with the Summary so
// far.
func Run(ctx context.Context, opts Options) (Summary, error) {
	if opts.Out == "" {
		return Summary{}, fmt.Errorf("no output directory: %w", ErrOptions)
	}
	r, err := newRun(opts)
	if err != nil {
		return Summary{}, err
	}
	if err := stage.Run(ctx, r.job()); errors.Is(err, ErrAllFailed) {
		return Summary{Report: r.rep, Labels: filepath.Join(r.opts.Out, LabelsFile)}, err
	} else if err != nil {
		return Summary{Report: r.rep}, err
	}
	out := r.rep.Counts.Output
	r.log.Info("labelling done", "states", out.States, "failed", out.Failed, "seconds", r.rep.WallSeconds)
	return Summary{Report: r.rep, Labels: filepath.Join(r.opts.Out, LabelsFile)}, nil
}

// run is what one invocation keeps beside the engine's state.
type run struct {
	opts  Options
	log   *slog.Logger
	rep   Report
	tally *tally
	// mu guards prog, which the engine's writer and a batch run's poller
	// update, and the calls of Options.Progress.
	mu   sync.Mutex
	prog Progress
	// batchUsage is what the states a batch run wrote cost, and batches
	// its batches (both guarded by mu).
	batchUsage llm.Stats
	batches    []BatchRecord
}

func newRun(o Options) (*run, error) {
	bad := stage.OptionsErrorf
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
	o.Samples = cmp.Or(o.Samples, 1)
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.CheckpointStates = cmp.Or(o.CheckpointStates, DefaultCheckpointStates)
	o.CheckpointInterval = cmp.Or(o.CheckpointInterval, DefaultCheckpointInterval)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &run{opts: o, log: log, tally: &tally{}}
	r.rep = Report{
		Header: stage.Header{Version: o.Info.Version},
		Config: Config{
			In: o.In, Questions: o.Info.Questions,
			Teacher: o.Info.Teacher, Model: o.Info.Model, BaseURL: o.Info.BaseURL, Template: o.Info.Template,
			Samples: o.Samples, Temperature: o.Info.Temperature, MaxTokens: o.Info.MaxTokens, SeedBase: o.Info.SeedBase,
			Workers: o.Workers, Limit: o.Limit, SkipEmpty: o.SkipEmpty, Shard: o.Shard.String(), BudgetUSD: o.BudgetUSD, Batch: o.Batch != nil,
		},
	}
	return r, nil
}

// job is this invocation for the engine: the teacher's workers, or the
// batch path.
func (r *run) job() stage.Job[data.StateKey, Item, data.Label, *Report] {
	o := r.opts
	j := stage.Job[data.StateKey, Item, data.Label, *Report]{
		Layout: layout(r.tally.state),
		Name:   "labelling", Report: &r.rep, Out: o.Out, Resume: o.Resume, Input: o.In,
		KeepFailed: o.KeepFailed, StopAfterFailures: o.StopAfterFailures,
		Units:   r.items,
		UnitKey: func(it Item) data.StateKey { return it.State.Key() },
		Work: func(ctx context.Context, it Item) ([]data.Label, error) {
			l, err := r.labelOne(ctx, it)
			if err != nil {
				return nil, err
			}
			return []data.Label{l}, nil
		},
		Workers: o.Workers, CheckpointUnits: o.CheckpointStates, CheckpointInterval: o.CheckpointInterval,
		Budget: o.BudgetUSD, Spent: r.cost,
		Usage:    r.usage,
		Wrote:    r.wrote,
		Stamp:    r.stamp,
		Finish:   func() { r.rep.Counts.Output = r.tally.out },
		Progress: r.progress,
		Logger:   r.log, LogAttrs: []any{"samples", o.Samples},
	}
	if o.Batch != nil {
		j.Work, j.Produce = nil, r.batch
		// A batch's unanswered requests are the API's outcome (expired,
		// failed lines), recorded and sent again by --resume, not a dead
		// server: those fail the polls and submissions themselves. A run
		// whose every state failed still ends with ErrAllFailed.
		if o.StopAfterFailures == 0 {
			j.StopAfterFailures = -1
		}
	}
	return j
}

// items yields the states of the run, in input order, as items to label:
// the first Limit of those the Shard holds, less the rows of failed
// questions. With count it counts the input's rows into the report and
// checks that every state is there once, with its question.
func (r *run) items(ctx context.Context, count bool) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		c := &r.rep.Counts
		var seen seenStates // with count only
		missing := map[string]bool{}
		selected, row := 0, -1
		for s, err := range r.states(ctx) {
			if err != nil {
				yield(Item{}, err)
				return
			}
			row++
			if count {
				c.InputRows++
			}
			switch {
			case s.Failure != "":
				if count {
					c.FailedQuestionRows++
				}
				continue
			case !r.opts.Shard.Holds(s.QuestionID):
				if count {
					c.OtherShards++
				}
				continue
			case r.opts.SkipEmpty && s.Context == "":
				if count {
					c.EmptyStates++
				}
				continue
			case r.opts.Limit > 0 && selected == r.opts.Limit:
				if !count {
					return
				}
				continue // the rest of the input is counted
			}
			q, ok, err := r.opts.Questions.Question(s.QuestionID)
			if err != nil {
				yield(Item{}, err)
				return
			}
			if count {
				if err := seen.add(s.Key()); err != nil {
					yield(Item{}, fmt.Errorf("%s: %w (merge shards with distill merge)", r.opts.In, err))
					return
				}
				if !ok {
					missing[s.QuestionID] = true
				}
			}
			if !ok {
				continue
			}
			selected++
			if !yield(Item{State: s, Question: q, Row: row}, nil) {
				return
			}
		}
		if len(missing) > 0 {
			ids := slices.Sorted(maps.Keys(missing))
			yield(Item{}, fmt.Errorf("%d questions of %s are not in the questions given (wrong --questions?), e.g. %q: %w",
				len(ids), r.opts.In, ids[0], ErrOptions))
		}
	}
}

// seenStates finds a state that the input holds twice. A rollout writes
// the states of a question together, so it holds the ids of the questions
// seen and the rounds of the current one only, not every state.
type seenStates struct {
	done   map[string]bool
	cur    string
	rounds map[int32]bool
}

func (s *seenStates) add(k data.StateKey) error {
	if s.rounds == nil {
		s.rounds, s.done = map[int32]bool{}, map[string]bool{}
	}
	if k.QuestionID != s.cur {
		if s.done[k.QuestionID] {
			return fmt.Errorf("question %s appears twice (again with round %d)", k.QuestionID, k.Round)
		}
		if s.cur != "" {
			s.done[s.cur] = true
		}
		s.cur = k.QuestionID
		clear(s.rounds)
	}
	if s.rounds[k.Round] {
		return fmt.Errorf("state %s round %d appears twice", k.QuestionID, k.Round)
	}
	s.rounds[k.Round] = true
	return nil
}

// states streams the rows of the input, the columns of Input only.
func (r *run) states(ctx context.Context) iter.Seq2[Input, error] {
	return func(yield func(Input, error) bool) {
		stop := errors.New("stop")
		err := data.EachRow(ctx, r.opts.In, data.KindTrajectories, func(rows []Input) error {
			for _, s := range rows {
				if !yield(s, nil) {
					return stop
				}
			}
			return nil
		})
		if err != nil && err != stop {
			yield(Input{}, fmt.Errorf("read %s: %w", r.opts.In, err))
		}
	}
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

// labelOne asks the teacher for every sample of one state and aggregates
// them.
func (r *run) labelOne(ctx context.Context, it Item) (data.Label, error) {
	it = it.withTruth()
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

// wrote counts a label the engine wrote.
func (r *run) wrote(ls []data.Label) {
	l := ls[0]
	r.mu.Lock()
	r.prog.Samples += int64(len(l.Samples))
	if l.Failure != "" {
		r.prog.Failed++
	}
	r.mu.Unlock()
	if l.Failure != "" {
		r.log.Warn("no usable teacher sample", "question", l.QuestionID, "round", l.Round, "reason", l.Failure)
	}
}

// progress takes the engine's progress into the run's and reports it.
func (r *run) progress(p stage.Progress) {
	r.update(func(lp *Progress) {
		lp.Total, lp.AlreadyDone, lp.Done, lp.Parts = p.Total, p.AlreadyDone, p.Done, p.Parts
	})
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

// usage is this invocation's model usage: the teacher's, and what the
// labels of a batch run cost.
func (r *run) usage() []llm.Stats {
	var u []llm.Stats
	if r.opts.Usage != nil {
		u = slices.Clone(r.opts.Usage())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.batchUsage.Requests > 0 {
		u = append(u, r.batchUsage)
	}
	return u
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

// stamp fills in the counts of the report.
func (r *run) stamp(p stage.Progress) {
	c := &r.rep.Counts
	c.Selected, c.AlreadyDone, c.Parts = p.Selected, p.AlreadyDone, p.Parts
	r.mu.Lock()
	defer r.mu.Unlock()
	c.Run = RunCounts{States: p.Done, Failed: r.prog.Failed, Samples: r.prog.Samples}
	if r.batches != nil {
		r.rep.Batches = slices.Clone(r.batches)
	}
}
