package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout/runner"
)

// Names of what a benchmark writes in its output directory.
const (
	VariantsDir = "variants"
	ReportJSON  = "report.json"
	ReportMD    = "report.md"
	TracesHTML  = "traces.html"
	// PaperLimit is the number of questions the method's reference
	// evaluation runs (its first 1,000 unique questions); Limit is 0, every
	// question, unless set to it.
	PaperLimit = 1000
)

// Options configure Run.
type Options struct {
	// Questions are the questions; ByID finds the same by id, for the
	// metrics and the traces.
	Questions runner.Questions
	ByID      Questions
	// QuestionsFile, when set, is a questions file (distill data
	// import's) that Run reads in place of Questions and ByID: streamed
	// for the runs, and held on disk by id for the report
	// (data.QuestionStore, in $TMPDIR, removed when Run returns), so that
	// memory does not grow with the questions. An empty Dataset becomes
	// the dataset its questions name.
	QuestionsFile string
	// Dataset names the questions in the report.
	Dataset string
	// Setup makes the variants; SetupFor, when set, makes each variant's
	// setup instead (so that each can have its own usage accounting over
	// shared model clients).
	Setup    Setup
	SetupFor func(variant string) (Setup, error)
	// Variants to run (default: every variant the setup can build).
	Variants []string
	Out      string
	// Limit, when positive, keeps the first Limit unique question ids
	// (PaperLimit as the reference evaluation); 0 runs every question.
	Limit int
	// Workers per variant (default runner.DefaultWorkers); Parallel
	// variants at once (default all).
	Workers, Parallel int
	// Resume continues an interrupted benchmark in Out, running its failed
	// questions again unless KeepFailed.
	Resume     bool
	KeepFailed bool
	// Shard runs the questions of one shard only (by a hash of the id);
	// MergeShards joins the shards' benchmarks.
	Shard data.Shard
	// Usage returns a variant's model usage so far (nil: none).
	Usage func(variant string) []llm.Stats
	// Retriever names the retriever for the runs' records.
	Retriever string
	// Progress, when set, sees each variant's progress (concurrently
	// across variants: it must be safe for that).
	Progress func(variant string, p runner.Progress)
	// ReportProgress, when set, sees the report's progress once the
	// variants have run: done of total questions (every variant's) read
	// into the metrics, the scores and the trace pages.
	ReportProgress func(done, total int)
	Logger         *slog.Logger
	Version        string
	// Paper holds reference EM/F1 to print beside, by variant.
	Paper map[string][2]float64
	// Scoring is how EM and F1 treat empty answers (default: the method's
	// reference, ScoringReference).
	Scoring Scoring
	// TitleMatch is how correct retrieval and gold-title recall compare
	// titles (default: exactly, TitleMatchDistill).
	TitleMatch TitleMatch
	// JudgeTraining, when the judge was trained, says on which questions:
	// the benchmark warns, in its log and its report, when its own
	// questions are among them.
	JudgeTraining *JudgeTraining
}

// Questions finds questions by id: a data.QuestionStore, which holds them on
// disk so that memory does not grow with them, or a data.QuestionMap. An
// error is systemic (the store cannot be read) and ends the report.
type Questions interface {
	Question(id string) (data.Question, bool, error)
}

// Errors that callers branch on.
var (
	// ErrOptions is the cause of errors about bad Options.
	ErrOptions = errors.New("bad bench options")
)

// Summary is what Run did: the report and the files written.
type Summary struct {
	Report Report
	// Files written in Out, by name (report.json, report.md, traces.html
	// and the plots).
	Files []string
}

// Run runs every variant over the same questions (the first Limit unique
// ids), each as a resumable rollout in Out/variants/NAME sharing the
// setup's retriever (and, through the roles, the model client's cache and
// limits), then measures them and writes Out/report.json, report.md, the
// plots and traces.html.
//
// A question whose role fails is recorded as failed (it scores 0) and the
// benchmark goes on; a systemic error (cancellation, a broken retriever,
// refused credentials) ends it, and the variants' checkpoints let Resume
// continue.
func Run(ctx context.Context, opts Options) (Summary, error) {
	if opts.QuestionsFile != "" {
		store, err := opts.openQuestions()
		if err != nil {
			return Summary{}, err
		}
		defer store.Close()
	}
	if err := opts.check(); err != nil {
		return Summary{}, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	variants := make([]Variant, len(opts.Variants))
	for i, name := range opts.Variants {
		setup := opts.Setup
		if opts.SetupFor != nil {
			var err error
			if setup, err = opts.SetupFor(name); err != nil {
				return Summary{}, err
			}
		}
		v, err := setup.Variant(name)
		if err != nil {
			return Summary{}, err
		}
		variants[i] = v
	}
	mode := outdir.New
	if opts.Resume {
		mode = outdir.Resume
	}
	od, err := outdir.Claim(ctx, opts.Out, mode)
	if err != nil {
		return Summary{}, err
	}
	sum, err := opts.run(ctx, variants, log)
	if err != nil {
		od.AbandonIfEmpty()
		return Summary{}, err
	}
	return sum, od.Close()
}

// openQuestions sets Questions and ByID from QuestionsFile, and Dataset
// when it is empty; the caller closes the store.
func (o *Options) openQuestions() (*data.QuestionStore, error) {
	if o.Questions != nil || o.ByID != nil {
		return nil, fmt.Errorf("questions given twice, as a file and as values: %w", ErrOptions)
	}
	o.Questions = runner.QuestionsFile(o.QuestionsFile)
	store, err := data.StoreQuestions(func(yield func(data.Question, error) bool) {
		for q, err := range o.Questions {
			if err == nil && o.Dataset == "" {
				o.Dataset = q.Dataset
			}
			if !yield(q, err) {
				return
			}
		}
	}, "")
	if err != nil {
		return nil, err
	}
	o.ByID = store
	return store, nil
}

// run runs the variants in the output directory that Run holds, and
// writes the reports.
func (opts *Options) run(ctx context.Context, variants []Variant, log *slog.Logger) (Summary, error) {
	if err := os.MkdirAll(filepath.Join(opts.Out, VariantsDir), 0o755); err != nil {
		return Summary{}, err
	}
	if opts.JudgeTraining != nil {
		ids, err := opts.selected()
		if err != nil {
			return Summary{}, err
		}
		opts.JudgeTraining.leakage(ids.all()).warn(log, "before running", true)
	}

	runs := make([]runner.Summary, len(variants))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Parallel)
	for i, v := range variants {
		g.Go(func() error {
			ro := runner.Options{
				Questions: opts.Questions, Roles: v.Roles, Loop: v.Loop,
				Out: filepath.Join(opts.Out, VariantsDir, v.Name), Workers: opts.Workers, Limit: opts.Limit, Shard: opts.Shard,
				Resume: opts.Resume, KeepFailed: opts.KeepFailed, Logger: log.With("variant", v.Name),
				Info: runner.Info{Version: opts.Version, Questions: opts.Dataset, Retriever: opts.Retriever,
					Judge: roleName(v.Roles.Judge), Extractor: roleName(cmpOr[any](v.Roles.Compressor, v.Roles.Extractor)), Reader: roleName(v.Roles.Reader)},
			}
			if opts.Usage != nil {
				ro.Usage = func() []llm.Stats { return opts.Usage(v.Name) }
			}
			if opts.Progress != nil {
				ro.Progress = func(p runner.Progress) { opts.Progress(v.Name, p) }
			}
			if opts.Resume {
				// A variant not started yet starts now.
				if entries, err := os.ReadDir(ro.Out); err != nil || len(entries) == 0 {
					ro.Resume = false
				}
			}
			sum, err := runner.Run(gctx, ro)
			if err != nil {
				return fmt.Errorf("variant %s: %w", v.Name, err)
			}
			runs[i] = sum
			log.Info("variant done", "variant", v.Name, "questions", sum.Counts.Output.Questions, "failed", sum.Counts.Output.Failed)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Summary{}, err
	}
	return opts.report(variants, runs)
}

func (o *Options) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrOptions)
	}
	switch {
	case o.Out == "":
		return bad("no output directory")
	case o.Questions == nil || o.ByID == nil:
		return bad("no questions")
	case o.Workers < 0 || o.Parallel < 0:
		return bad("negative workers")
	}
	if len(o.Variants) == 0 {
		for _, name := range DefaultVariants() {
			setup := o.Setup
			if o.SetupFor != nil {
				var err error
				if setup, err = o.SetupFor(name); err != nil {
					continue
				}
			}
			if _, err := setup.Variant(name); err == nil {
				o.Variants = append(o.Variants, name)
			}
		}
	}
	seen := map[string]bool{}
	for _, name := range o.Variants {
		if seen[name] {
			return bad("variant %s given twice", name)
		}
		seen[name] = true
	}
	if o.Limit < 0 {
		return bad("negative limit")
	}
	if o.Parallel == 0 {
		o.Parallel = len(o.Variants)
	}
	return nil
}

// report measures the variants' runs and writes the reports. It streams
// each variant's trajectories one question at a time into the metrics, the
// scores and the trace pages, so that its memory does not grow with them.
func (o *Options) report(variants []Variant, runs []runner.Summary) (Summary, error) {
	r := Report{Dataset: o.Dataset, CreatedAt: time.Now().UTC(), Version: o.Version, Paper: o.Paper, Scoring: o.Scoring.orDefault()}
	if o.TitleMatch == TitleMatchReference {
		r.TitleMatch = o.TitleMatch
	}
	tw, err := NewTraceWriter(o.Out, "distill bench: "+o.Dataset)
	if err != nil {
		return Summary{}, err
	}
	defer tw.Abort() // nothing left to remove once Close succeeded
	scores := newScoreTable()
	var names []string
	done, total := 0, 0
	for _, run := range runs {
		total += run.Counts.Selected
	}
	// Each question's scores go to scores.jsonl as they are computed,
	// variant by variant: what the report keeps of them is the table's.
	err = data.WriteAtomic(filepath.Join(o.Out, ScoresFile), func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		for i, v := range variants {
			if err := tw.StartVariant(v.Name); err != nil {
				return err
			}
			// The table checks that each question's rows come together,
			// with a bit a question rather than the scorer's set of ids.
			sc := newScorer(o.ByID, o.Scoring, false, false)
			sc.titles = o.TitleMatch
			err := eachQuestion(runs[i].Trajectories, func(rows []data.State) error {
				res, err := sc.add(rows)
				if err != nil {
					return err
				}
				row := scoreRow(v.Name, res)
				k, err := scores.add(row)
				if err != nil {
					return fmt.Errorf("compute metrics: %w", err)
				}
				if err := enc.Encode(row); err != nil {
					return fmt.Errorf("write %s: %w", ScoresFile, err)
				}
				q, _, err := o.ByID.Question(res.ID) // found: the scorer did
				if err != nil {
					return err
				}
				if o.ReportProgress != nil {
					done++
					o.ReportProgress(done, total)
				}
				// The pages number the questions as the table does.
				return tw.add(traceQuestion(res, rows, q), int(k))
			})
			if err != nil {
				return fmt.Errorf("variant %s: %w", v.Name, err)
			}
			m := sc.metrics(runs[i].Usage)
			r.Questions = max(r.Questions, m.Questions)
			r.Variants = append(r.Variants, VariantReport{Name: v.Name, Description: v.Description, Metrics: m, Roles: rolesOf(runs[i].Report)})
			names = append(names, v.Name)
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	files := []string{ScoresFile}
	if r.Paired = scores.paired(names); r.Paired != nil {
		r.Bootstrap = bootstrapSettings()
	}
	if o.JudgeTraining != nil {
		r.Leakage = o.JudgeTraining.leakage(scores.ids.all())
		log := o.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		r.Leakage.warn(log, "in the report", false)
	}
	if err := tw.Close(); err != nil {
		return Summary{}, err
	}
	written, err := writeReports(o.Out, r)
	if err != nil {
		return Summary{}, err
	}
	return Summary{Report: r, Files: append(append(files, TracesHTML), written...)}, nil
}

// writeReports writes report.json, report.md and the plots into out, and
// returns their names there (as Summary.Files says).
func writeReports(out string, r Report) ([]string, error) {
	var files []string
	for _, f := range []struct {
		name string
		fn   func(w io.Writer) error
	}{
		{ReportJSON, func(w io.Writer) error { return WriteJSON(w, r) }},
		{ReportMD, func(w io.Writer) error { return WriteMarkdown(w, r) }},
	} {
		err := data.WriteAtomic(filepath.Join(out, f.name), func(w *bufio.Writer) error { return f.fn(w) })
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", f.name, err)
		}
		files = append(files, f.name)
	}
	plots, err := WritePlots(out, r)
	if err != nil {
		return nil, err
	}
	for _, p := range plots {
		files = append(files, filepath.Base(p))
	}
	return files, nil
}

// selected returns the ids of the questions the variants run: the first
// Limit unique ids that the Shard holds, as runner selects them.
func (o *Options) selected() (*questionIDs, error) {
	seen, ids := newQuestionIDs(), newQuestionIDs()
	for q, err := range o.Questions {
		if err != nil {
			return nil, fmt.Errorf("read questions: %w", err)
		}
		if o.Limit > 0 && seen.len() == o.Limit {
			break
		}
		_, added, err := seen.number(q.ID)
		if err != nil {
			return nil, err
		}
		if !added {
			continue
		}
		if o.Shard.Holds(q.ID) {
			if _, _, err := ids.number(q.ID); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
}

// eachQuestion calls fn with the rows of each question of a trajectories
// file in turn, reading it in small batches: the rows of a question are
// together in the file (runner's output is written question by question).
func eachQuestion(path string, fn func(rows []data.State) error) error {
	rd, err := data.OpenParquet[data.State](path)
	if err != nil {
		return err
	}
	defer rd.Close()
	var cur []data.State
	buf := make([]data.State, 64)
	for {
		clear(buf) // rows read into must be zero (see data.ParquetReader.Read)
		n, err := rd.Read(buf)
		for _, s := range buf[:n] {
			if len(cur) > 0 && cur[0].QuestionID != s.QuestionID {
				if err := fn(cur); err != nil {
					return err
				}
				cur = nil
			}
			cur = append(cur, s)
		}
		switch {
		case err == io.EOF:
			if len(cur) > 0 {
				return fn(cur)
			}
			return nil
		case err != nil:
			return err
		case n == 0:
			return fmt.Errorf("read %s: no progress", path)
		}
	}
}

// traceQuestion is a question's result and rows as the trace pages show
// them, the rows in round order.
func traceQuestion(res QuestionResult, rows []data.State, q data.Question) TraceQuestion {
	st := slices.Clone(rows)
	slices.SortStableFunc(st, func(a, b data.State) int { return int(a.Round) - int(b.Round) })
	return TraceQuestion{ID: res.ID, Question: q.Text, Golds: q.Answers, Answer: res.Answer, EM: res.EM, F1: res.F1,
		GoldTitles: q.GoldTitles, Type: q.Type, SupportingFacts: q.SupportingFacts, States: st}
}

// roleName names a role's implementation for a run's record (a resumed
// variant must have the same).
func roleName(r any) runner.Role {
	return runner.Role{Name: strings.TrimPrefix(fmt.Sprintf("%T", r), "*")}
}

// cmpOr returns a when it is not nil, else b.
func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// rolesOf names the models a variant's run recorded for each role.
func rolesOf(rep runner.Report) map[string]string {
	out := map[string]string{}
	for role, r := range map[string]runner.Role{"judge": rep.Roles.Judge, "extractor": rep.Roles.Extractor, "reader": rep.Roles.Reader} {
		var models []string
		for _, s := range r.Seen {
			if !slices.Contains(models, s.Model) {
				models = append(models, s.Model)
			}
		}
		if len(models) > 0 {
			out[role] = strings.Join(models, ", ")
		}
	}
	return out
}

// MergeShards joins the benchmarks that ran the shards of one question set
// (Options.Shard) into out: each variant's runs are merged (runner.Merge)
// into out/variants/NAME, then measured and reported as Run does. The
// shards must have run the same variants, configured alike. opts gives
// the questions (ByID), the dataset's name, the version and the paper's
// numbers; its Out is out.
func MergeShards(ctx context.Context, out string, inputs []string, opts Options) (Summary, error) {
	if len(inputs) == 0 || out == "" {
		return Summary{}, fmt.Errorf("merge: no inputs or no output directory: %w", ErrOptions)
	}
	if opts.QuestionsFile != "" {
		store, err := opts.openQuestions()
		if err != nil {
			return Summary{}, err
		}
		defer store.Close()
	}
	if opts.ByID == nil {
		return Summary{}, fmt.Errorf("merge: no questions: %w", ErrOptions)
	}
	entries, err := os.ReadDir(filepath.Join(inputs[0], VariantsDir))
	if err != nil {
		return Summary{}, fmt.Errorf("merge: %s is not a benchmark: %w", inputs[0], err)
	}
	order := func(name string) int {
		for i, v := range variantOrder {
			if v.name == name {
				return i
			}
		}
		return len(variantOrder)
	}
	slices.SortStableFunc(entries, func(a, b os.DirEntry) int { return order(a.Name()) - order(b.Name()) })
	var variants []Variant
	var runs []runner.Summary
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		v := Variant{Name: name}
		for _, known := range variantOrder {
			if known.name == name {
				v.Description = known.description
			}
		}
		dirs := make([]string, len(inputs))
		for i, in := range inputs {
			dirs[i] = filepath.Join(in, VariantsDir, name)
		}
		dst := filepath.Join(out, VariantsDir, name)
		rep, err := runner.Merge(ctx, dst, dirs)
		if err != nil {
			return Summary{}, fmt.Errorf("merge variant %s: %w", name, err)
		}
		variants = append(variants, v)
		runs = append(runs, runner.Summary{Report: rep, Trajectories: filepath.Join(dst, runner.TrajectoriesFile)})
	}
	if len(variants) == 0 {
		return Summary{}, fmt.Errorf("merge: %s holds no variant: %w", inputs[0], ErrOptions)
	}
	opts.Out = out
	return opts.report(variants, runs)
}
