package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout"
	"github.com/distill-rag/distill/rollout/runner"
)

// defaultBenchOut is where a benchmark of the bundled sample goes without --out.
const defaultBenchOut = "runs/bench-sample"

func benchCommand() *cli.Command {
	flags := []cli.Flag{
		presetFlag(),
		&cli.PathFlag{Name: "questions", Usage: "questions `FILE` (questions.parquet from distill data import)", EnvVars: []string{"DISTILL_QUESTIONS"}, TakesFile: true},
		&cli.StringFlag{Name: "dataset", Usage: "benchmark a bundled dataset instead of --questions: " + datasetSample},
		&cli.StringFlag{Name: "name", Usage: "the dataset's name in the report (default: the questions' dataset)"},
		&cli.StringFlag{Name: "index", Usage: indexSpecHelp + " (default with the sample: a temporary BM25 index of its corpus)", EnvVars: []string{"DISTILL_INDEX"}},
		&cli.PathFlag{Name: "out", Usage: "output `DIR` (default for the sample: " + defaultBenchOut + ")"},
		&cli.StringFlag{Name: "variants", Usage: "comma-separated variants (default: every one the roles allow): " + strings.Join(eval.VariantNames(), ", ")},
		&cli.IntFlag{Name: "limit", Usage: fmt.Sprintf("run only the first `N` unique questions (the paper's evaluation is %d)", eval.PaperLimit), DefaultText: "0, every one"},
		&cli.IntFlag{Name: "workers", Value: runner.DefaultWorkers, Usage: "questions run at once per variant", EnvVars: []string{"DISTILL_WORKERS"}},
		&cli.IntFlag{Name: "parallel", Usage: "variants run at once", DefaultText: "all"},
		&cli.BoolFlag{Name: "resume", Usage: "continue the interrupted benchmark in --out, running its failed questions again"},
		&cli.BoolFlag{Name: "no-retry-failed", Usage: "with --resume, keep the failed questions as they are"},
		&cli.StringFlag{Name: "shard", Usage: "run only shard `i/n` of the questions (by a hash of the id); distill bench merge joins the shards"},
		&cli.BoolFlag{Name: "paper", Usage: "show the paper's HotpotQA (BM25) EM/F1 beside each variant"},
		scoringFlag(),
		titleMatchFlag(),
		&cli.StringFlag{Name: "judge", Value: "lexical", Usage: "the judge of full: " + strings.Join(judge.Kinds(), ", ")},
		&cli.StringFlag{Name: "judge-model", Usage: "judge model (--judge llm)", EnvVars: []string{"DISTILL_JUDGE_MODEL"}},
		&cli.StringFlag{Name: "judge-base-url", Usage: "judge server `URL`, with /v1 (--judge llm)", EnvVars: []string{"DISTILL_JUDGE_BASE_URL"}},
		&cli.PathFlag{Name: "judge-from", Usage: "use the judge distill train handed back in `DIR` (its model.json)"},
		&cli.BoolFlag{Name: "allow-template-mismatch", Usage: "use a trained judge whose prompt template differs from this build's"},
		&cli.StringFlag{Name: "base-judge", Value: "lexical", Usage: "the untuned judge of no-sft: " + strings.Join(judge.Kinds(), ", ")},
		&cli.StringFlag{Name: "base-judge-model", Usage: "base judge model (--base-judge llm)", EnvVars: []string{"DISTILL_BASE_JUDGE_MODEL"}},
		&cli.StringFlag{Name: "base-judge-base-url", Usage: "base judge server `URL` (--base-judge llm)", EnvVars: []string{"DISTILL_BASE_JUDGE_BASE_URL"}},
		&cli.StringFlag{Name: "extractor", Value: "lexical", Usage: "extractor: " + strings.Join(rollout.RoleKinds("extractor"), ", ")},
		&cli.StringFlag{Name: "extractor-model", Usage: "extractor model (--extractor llm)", EnvVars: []string{"DISTILL_EXTRACTOR_MODEL"}},
		&cli.StringFlag{Name: "extractor-base-url", Usage: "extractor server `URL` (--extractor llm)", EnvVars: []string{"DISTILL_EXTRACTOR_BASE_URL"}},
		&cli.StringFlag{Name: "reader", Value: "lexical", Usage: "reader: " + strings.Join(rollout.RoleKinds("reader"), ", ")},
		&cli.StringFlag{Name: "reader-model", Usage: "reader model (--reader llm)", EnvVars: []string{"DISTILL_READER_MODEL"}},
		readerInputFlag(),
		&cli.StringFlag{Name: "reader-base-url", Usage: "reader server `URL` (--reader llm)", EnvVars: []string{"DISTILL_READER_BASE_URL"}},
		&cli.StringFlag{Name: "summarizer", Value: "builtin", Usage: "the summaries of summarize and abstractive: builtin (lead and focused sentences, baselines) or llm (the reader's model)"},
	}
	return withConfig(&cli.Command{
		Name:  "bench",
		Usage: "evaluate the judge inside the full loop: EM, F1, retrieval, calibration, compression, latency, ablations",
		Description: `Runs each variant over the same questions (every question, or the first --limit unique
ids: --limit 1000 as the reference evaluation) with one retriever, each variant a resumable
rollout in OUT/variants/NAME:
  full           the configured judge and extractor (early stop)
  no-sft         the untuned judge (--base-judge) in the same loop
  no-judge       no sufficiency decision: every retrieval spent, bare-question queries
  oracle         retrieval truth as judge: stops once the gold evidence is complete, else
                 bare-question queries (a yardstick; run only when --variants names it)
  no-extractor   raw documents appended instead of pointed sentences
  single-round   standard RAG: one retrieval, raw documents, the reader
  summarize      each document summarised (--summarizer)
  extractive     the sentences most similar to the question
  abstractive    one short query-focused summary per document
Then it writes OUT/report.md (the paper's tables: EM/F1, correct retrieval, rounds,
compression, latency, cost; calibration against retrieval truth), OUT/report.json (every
number, with each variant compared with full question by question: paired differences,
bootstrap intervals, McNemar's test), OUT/scores.jsonl, SVG plots, and OUT/traces.html, an
index of every question linking to pages (OUT/traces/) that audit them round by round.
With --judge-from, it warns when its questions include the judge's training questions.

With no flags it runs on the bundled sample with the built-in components, offline, into
` + defaultBenchOut + `. --judge-from DIR takes the judge distill train handed back; it is refused
when its prompt template differs from this build's, unless --allow-template-mismatch.
distill bench compare A B prints the differences between two reports, and the paired
statistics when A and B are benchmark directories.`,
		Flags:  slices.Concat(flags, loopFlags(), []cli.Flag{contextWindowFlag()}, modelFlags(), retrieverFlags()),
		Action: benchAction,
		Subcommands: []*cli.Command{{
			Name: "compare", Usage: "print the differences between two benchmark reports", ArgsUsage: "A B (report.json files or benchmark directories)",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "pair", Usage: "compare variant `X:Y`, X of A with Y of B (repeatable), instead of the variants of the same name"},
			},
			Action: benchCompareAction,
		}, {
			Name: "merge", Usage: "join the benchmarks of the shards of one question set and report them", ArgsUsage: "SHARD_DIR...",
			Flags: []cli.Flag{
				&cli.PathFlag{Name: "out", Usage: "output `DIR` (empty or absent)"},
				&cli.PathFlag{Name: "questions", Usage: "the questions `FILE` the shards ran", TakesFile: true},
				&cli.StringFlag{Name: "dataset", Usage: "the bundled dataset the shards ran: " + datasetSample},
				&cli.StringFlag{Name: "name", Usage: "the dataset's name in the report"},
				&cli.BoolFlag{Name: "paper", Usage: "show the paper's HotpotQA (BM25) EM/F1 beside each variant"},
				scoringFlag(),
				titleMatchFlag(),
			},
			Action: benchMergeAction,
		}},
	})
}

func benchAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("bench: unexpected argument %q (see '%s --help')", c.Args().First(), helpName(c))
	}
	if err := shareModel(c, "judge", "base-judge", "extractor", "reader"); err != nil {
		return err
	}
	questionsPath, err := questionsFlags(c, "bench", c.Path("out"))
	if err != nil {
		return err
	}
	switch {
	case c.Int("limit") < 0 || c.Int("workers") < 1 || c.Int("parallel") < 0:
		return usageErrorf("bench: --limit and --parallel must not be negative, --workers at least 1")
	}
	opts, err := benchOptions(c)
	if err != nil {
		return err
	}

	// Questions and index.
	passages := benchQuestions(c, &opts)
	if questionsPath == "" && opts.Out == "" {
		opts.Out = defaultBenchOut
	}
	retriever, closeIndex, err := benchIndex(c, &opts, passages)
	if err != nil {
		return err
	}
	defer closeIndex()

	models, err := newBenchModels(c, retriever)
	if err != nil {
		return err
	}
	splitter, stopSplitter, err := openSplitter(c, "bench")
	if err != nil {
		return err
	}
	defer stopSplitter()
	models.splitter = splitter
	if dir := c.Path("judge-from"); dir != "" {
		h, err := judge.ReadHandback(dir)
		if err != nil {
			return err
		}
		opts.JudgeTraining = &eval.JudgeTraining{Source: filepath.Join(dir, judge.HandbackFile),
			Questions: slices.Concat(h.TrainQuestions, h.ValQuestions), Known: len(h.TrainQuestions)+len(h.ValQuestions) > 0}
	}
	opts.SetupFor = models.setup
	opts.Usage = models.models.Usage

	bars := newVariantBars(c)
	opts.Progress = bars.update
	opts.ReportProgress = bars.report
	sum, err := eval.Run(c.Context, opts)
	bars.finish()
	switch {
	case errors.Is(err, runner.ErrOutExists):
		return usageErrorf("bench: %s already holds a benchmark: use --resume to continue it, or another --out", opts.Out)
	case errors.Is(err, eval.ErrVariant), errors.Is(err, eval.ErrOptions), errors.Is(err, runner.ErrMismatch):
		return usageErrorf("bench: %w", err)
	case err != nil:
		return failuresError("bench", err)
	}
	for _, f := range sum.Files {
		loggerFrom(c).Debug("written", "file", filepath.Join(opts.Out, f))
	}
	return printReportSummary(c, opts.Out)
}

// titleMatchFlag is --title-match, for bench and bench merge.
func titleMatchFlag() cli.Flag {
	return &cli.StringFlag{Name: "title-match", Value: string(eval.TitleMatchDistill), Usage: "how correct retrieval compares gold titles with those retrieved: distill (exactly) or reference (the authors' code: a TriviaQA question's titles normalised, lower case without punctuation or articles)"}
}

// printReportSummary prints the head of a benchmark's report (its title,
// any warning, the results table) and where the whole of it is.
func printReportSummary(c *cli.Context, out string) error {
	path := filepath.Join(out, eval.ReportMD)
	md, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\nThe whole report: %s (report.json, traces.html and the plots beside it)\n", reportHead(string(md)), path)
	return err
}

// reportHead returns a report.md up to the end of its results table.
func reportHead(md string) string {
	lines := strings.SplitAfter(md, "\n")
	inResults := false
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "## Results"):
			inResults = true
		case inResults && strings.HasPrefix(line, "|"):
			if i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "|") {
				return strings.Join(lines[:i+1], "")
			}
		}
	}
	return md
}

// benchOptions reads the flags of eval.Options that need no file.
func benchOptions(c *cli.Context) (eval.Options, error) {
	shard, err := data.ParseShard(c.String("shard"))
	if err != nil {
		return eval.Options{}, usageErrorf("bench: --shard: %w", err)
	}
	scoring, err := eval.ParseScoring(c.String("scoring"))
	if err != nil {
		return eval.Options{}, usageErrorf("bench: --scoring: %w", err)
	}
	titles, err := eval.ParseTitleMatch(c.String("title-match"))
	if err != nil {
		return eval.Options{}, usageErrorf("bench: --title-match: %w", err)
	}
	opts := eval.Options{
		Shard: shard, Scoring: scoring, TitleMatch: titles,
		Out: c.Path("out"), Limit: c.Int("limit"), Workers: c.Int("workers"), Parallel: c.Int("parallel"),
		Resume: c.Bool("resume"), KeepFailed: c.Bool("no-retry-failed"), Logger: loggerFrom(c), Version: versionString(), Dataset: c.String("name"),
	}
	if c.Bool("paper") {
		opts.Paper = eval.PaperHotpotQABM25()
	}
	for _, v := range strings.Split(c.String("variants"), ",") {
		if v = strings.TrimSpace(v); v != "" {
			opts.Variants = append(opts.Variants, v)
		}
	}
	return opts, nil
}

// benchIndex opens --index, or builds a temporary index of the sample's
// passages, and names it in opts; the function it returns closes it.
func benchIndex(c *cli.Context, opts *eval.Options, passages []data.Passage) (rollout.Retriever, func(), error) {
	if dir := c.String("index"); dir != "" {
		x, err := openIndex(c, dir)
		if err != nil {
			return nil, nil, err
		}
		opts.Retriever = "bm25 " + dir
		return x, func() { x.Close() }, nil
	}
	x, cleanup, err := tempIndex(c.Context, passages)
	if err != nil {
		return nil, nil, err
	}
	opts.Retriever = "bm25 of the " + datasetSample + " corpus (temporary)"
	return x, cleanup, nil
}

// benchQuestions names --questions in opts (eval.Run reads the file), or
// puts the sample's questions there and returns its passages.
func benchQuestions(c *cli.Context, opts *eval.Options) []data.Passage {
	if path := c.Path("questions"); path != "" {
		opts.QuestionsFile = path
		return nil
	}
	w := synth.Sample()
	byID := make(data.QuestionMap, len(w.Questions))
	for _, q := range w.Questions {
		byID[q.ID] = q
	}
	opts.Questions, opts.ByID = runner.Slice(w.Questions), byID
	if opts.Dataset == "" {
		opts.Dataset = datasetSample + " (synthetic, built in)"
	}
	return w.Passages
}

func benchMergeAction(c *cli.Context) error {
	if err := rejectFlagsAfterArgs(c); err != nil {
		return err
	}
	out := c.Path("out")
	switch {
	case out == "":
		return usageErrorf("bench merge: --out is required")
	case c.NArg() == 0:
		return usageErrorf("bench merge: give the shards' benchmark directories")
	case c.Path("questions") != "" && c.String("dataset") != "":
		return usageErrorf("bench merge: give --questions or --dataset, not both")
	case c.Path("questions") == "" && c.String("dataset") != datasetSample:
		return usageErrorf("bench merge: give the questions the shards ran: --questions FILE or --dataset %s", datasetSample)
	}
	scoring, err := eval.ParseScoring(c.String("scoring"))
	if err != nil {
		return usageErrorf("bench merge: --scoring: %w", err)
	}
	titles, err := eval.ParseTitleMatch(c.String("title-match"))
	if err != nil {
		return usageErrorf("bench merge: --title-match: %w", err)
	}
	opts := eval.Options{Version: versionString(), Dataset: c.String("name"), Scoring: scoring, TitleMatch: titles}
	if c.Bool("paper") {
		opts.Paper = eval.PaperHotpotQABM25()
	}
	benchQuestions(c, &opts)
	if _, err = eval.MergeShards(c.Context, out, c.Args().Slice(), opts); err != nil {
		return mergeError("bench merge", "bench merge: ", out, err, eval.ErrOptions)
	}
	return printReportSummary(c, out)
}

func benchCompareAction(c *cli.Context) error {
	if err := rejectFlagsAfterArgs(c); err != nil {
		return err
	}
	if c.NArg() != 2 {
		return usageErrorf("bench compare: want two reports (report.json files or benchmark directories)")
	}
	var reps [2]eval.Benchmark
	for i, p := range c.Args().Slice() {
		bm, err := eval.OpenBenchmark(p)
		if err != nil {
			return err
		}
		reps[i] = bm
	}
	var pairs [][2]string
	for _, p := range c.StringSlice("pair") {
		x, y, ok := strings.Cut(p, ":")
		if !ok || x == "" || y == "" {
			return usageErrorf("bench compare: --pair %q: want X:Y, a variant of A and one of B", p)
		}
		pairs = append(pairs, [2]string{x, y})
	}
	if err := eval.Compare(c.App.Writer, reps[0], reps[1], pairs...); err != nil {
		return usageErrorf("bench %w", err)
	}
	return nil
}

// benchModels builds the roles of each variant: one model client stack per
// role, shared by every variant (one cache, one set of limits), with a
// Meter per variant and role so that each variant's usage is its own
// (llm.Dialer, a group per variant).
type benchModels struct {
	c         *cli.Context
	retriever rollout.Retriever
	splitter  rollout.Splitter // every variant's
	models    *llm.Dialer
	// judge and base are the resolved specs of --judge (or --judge-from)
	// and --base-judge, opened once per variant, with the other roles.
	judge, base judge.Spec
	roles       rollout.RoleSpecs

	mu     sync.Mutex
	setups map[string]eval.Setup
}

func newBenchModels(c *cli.Context, retriever rollout.Retriever) (*benchModels, error) {
	prices, err := priceTable(c)
	if err != nil {
		return nil, err
	}
	m := &benchModels{c: c, retriever: retriever, models: newDialer(c, prices), setups: map[string]eval.Setup{}}
	if m.judge, err = benchJudgeSpec(c, "judge"); err != nil {
		return nil, err
	}
	if m.base, err = benchJudgeSpec(c, "base-judge"); err != nil {
		return nil, err
	}
	m.roles = roleSpecs(c)
	if err := m.roles.Check(); err != nil {
		return nil, roleUsageError("bench", err)
	}
	return m, nil
}

// benchJudgeSpec reads --judge (or --base-judge) and its model flags, and
// --judge-from for the judge, and resolves them, so that a bad judge is a
// usage error before any variant runs.
func benchJudgeSpec(c *cli.Context, flag string) (judge.Spec, error) {
	s := judgeFlagSpec(c, flag)
	s.AllowTemplateMismatch = c.Bool("allow-template-mismatch")
	if flag == "judge" && c.Path("judge-from") != "" {
		if c.IsSet("judge") {
			return s, usageErrorf("bench: give --judge or --judge-from, not both")
		}
		s.Kind, s.From = "", c.Path("judge-from")
	}
	r, err := judge.Resolve(s)
	if err != nil {
		return s, judgeError("bench", flag, err)
	}
	return r, nil
}

// judgeOf opens a variant's judge of --FLAG, with the role's shared model
// stack accounted for the variant.
func (m *benchModels) judgeOf(variant, flag string, s judge.Spec) (rollout.Judge, error) {
	j, err := judge.Open(s, func(model, baseURL string) (llm.Chatter, error) {
		return m.models.Dial(variant, flag, model, baseURL)
	})
	if err != nil {
		return nil, judgeError("bench", flag, err)
	}
	return j, nil
}

// setup returns a variant's setup, built once.
func (m *benchModels) setup(variant string) (eval.Setup, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.setups[variant]; ok {
		return s, nil
	}
	c := m.c
	loop, err := loopOptions(c, "bench")
	if err != nil {
		return eval.Setup{}, err
	}
	loop.Splitter = m.splitter
	s := eval.Setup{Retriever: m.retriever, Loop: loop}
	if s.Judge, err = m.judgeOf(variant, "judge", m.judge); err != nil {
		return s, err
	}
	if s.BaseJudge, err = m.judgeOf(variant, "base-judge", m.base); err != nil {
		return s, err
	}
	opened, err := m.roles.Open(func(role, model, baseURL string) (llm.Chatter, error) {
		return m.models.Dial(variant, role, model, baseURL)
	})
	if err != nil {
		return s, err
	}
	s.Extractor, s.Reader = opened.Extractor, opened.Reader
	s.Summarizer, s.FocusedSummarizer = opened.Summarizer, opened.FocusedSummarizer
	modelRoles := m.roles.UsesModels() || c.String("judge") == "llm" || c.String("base-judge") == "llm"
	if err := applyContextWindow(c, &s.Loop, modelRoles || c.String("judge-from") != ""); err != nil {
		return s, err
	}
	m.setups[variant] = s
	return s, nil
}

// variantBars shows the benchmark's progress: one bar over every
// variant's questions (its description stays "bench": the bar's width is
// set for it).
type variantBars struct {
	c         *cli.Context
	mu        sync.Mutex
	bar       *progressbar.ProgressBar
	reportBar *progressbar.ProgressBar // the report's, once the variants have run
	total     map[string]int
	done      map[string]int
}

func newVariantBars(c *cli.Context) *variantBars {
	return &variantBars{c: c, bar: newProgress(c, -1, "bench", "questions"), total: map[string]int{}, done: map[string]int{}}
}

func (v *variantBars) update(variant string, p runner.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.total[variant], v.done[variant] = p.Total, p.Done+p.Failed
	total, done := 0, 0
	for k := range v.total {
		total += v.total[k]
		done += v.done[k]
	}
	v.bar.ChangeMax64(int64(total))
	v.bar.Set(done)
}

// report shows the report's progress on a bar of its own, once the
// variants' bar is done.
func (v *variantBars) report(done, total int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.reportBar == nil {
		v.bar.Finish()
		v.reportBar = newProgress(v.c, int64(total), "report", "questions")
	}
	v.reportBar.Set(done)
}

func (v *variantBars) finish() {
	v.bar.Finish()
	if v.reportBar != nil {
		v.reportBar.Finish()
	}
}
