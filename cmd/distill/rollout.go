package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/rollout"
	"github.com/distill-rag/distill/rollout/pysbd"
	"github.com/distill-rag/distill/rollout/runner"
)

// defaultSampleOut is where a rollout of the bundled sample goes without --out.
const defaultSampleOut = "runs/rollout-sample"

func rolloutCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "rollout",
		Usage: "run the S2G loop over questions and record every state",
		Description: `Runs the loop of the method (judge, query, retrieve, extract, append; then read)
over every question, --workers at a time, and writes one row per judge call to
OUT/trajectories.parquet, with OUT/run.json (configuration, versions, models and
template hashes, counts, usage and cost). A question whose role fails is written as
a row with the reason, never left out.

With no --questions and no --dataset it runs on the bundled sample with the index
built in a temporary directory, into ` + defaultSampleOut + ` unless --out says otherwise.

Output is checkpointed: OUT/parts/part-NNNNN.parquet, each holding whole questions,
committed every --checkpoint-questions questions or --checkpoint-interval. After an
interruption (Ctrl-C, kill -9, a crash), run the same command with --resume: it
skips the questions already written and finishes the run; every question appears
exactly once. Once trajectories.parquet is written the parts are removed (the rows
are stored once); --resume of a finished run goes on from trajectories.parquet
(failed questions are run again). --shard i/n runs the questions whose id
hashes to i (0 <= i < n); distill merge joins the shards' outputs.

Roles: --judge lexical|never|always|llm|builtin:PATH, --extractor lexical|llm,
--reader lexical|llm. lexical is the built-in deterministic baseline; never and always
are the fixed policies of the ablations; builtin:PATH is the judge that distill train
--backend builtin trained (PATH: its model file, or the training directory); --judge-from DIR
takes any judge distill train handed back in DIR, as bench does (a LoRA adapter served at
--judge-base-url). llm is a model behind an OpenAI-compatible
server, named by --<role>-model and --<role>-base-url (default: OpenAI's API), with the
key from DISTILL_<ROLE>_API_KEY or OPENAI_API_KEY (servers such as vLLM or Ollama need
none). Requests are retried on 429, 5xx and timeouts, limited by --max-concurrent,
--requests-per-minute and --tokens-per-minute, and cached in --cache DIR when given;
run.json records each role's requests, tokens and cost.`,
		Flags: slices.Concat([]cli.Flag{
			presetFlag(),
			&cli.PathFlag{Name: "questions", Usage: "questions `FILE` (questions.parquet from distill data import)", EnvVars: []string{"DISTILL_QUESTIONS"}, TakesFile: true},
			&cli.StringFlag{Name: "dataset", Usage: "run a bundled dataset instead of --questions: " + datasetSample},
			&cli.StringFlag{Name: "index", Usage: indexSpecHelp + " (default with the sample: a temporary BM25 index of its corpus)", EnvVars: []string{"DISTILL_INDEX"}},
			&cli.PathFlag{Name: "out", Usage: "output `DIR` (default for the sample: " + defaultSampleOut + ")"},
			&cli.BoolFlag{Name: "resume", Usage: "continue the interrupted run in --out (with the same flags), running the failed questions again"},
			&cli.BoolFlag{Name: "no-retry-failed", Usage: "with --resume, keep the failed questions as they are"},
			&cli.IntFlag{Name: "workers", Value: runner.DefaultWorkers, Usage: "questions run at once", EnvVars: []string{"DISTILL_WORKERS"}},
			&cli.IntFlag{Name: "limit", Usage: "run only the first `N` unique questions (0: all)"},
			&cli.StringFlag{Name: "shard", Usage: "run only shard `i/n` of the questions (by a hash of the id; 0 <= i < n)"},
			&cli.StringFlag{Name: "judge", Value: "lexical", Usage: "judge: " + strings.Join(judge.Kinds(), ", ")},
			&cli.StringFlag{Name: "judge-model", Usage: "judge model (--judge llm)", EnvVars: []string{"DISTILL_JUDGE_MODEL"}},
			&cli.StringFlag{Name: "judge-base-url", Usage: "judge server `URL`, with /v1; several, comma-separated, are replicas to spread requests over (--judge llm)", EnvVars: []string{"DISTILL_JUDGE_BASE_URL"}},
			judgeFromFlag(),
			&cli.StringFlag{Name: "extractor", Value: "lexical", Usage: "extractor: " + strings.Join(rollout.RoleKinds("extractor"), ", ")},
			&cli.StringFlag{Name: "extractor-model", Usage: "extractor model (--extractor llm)", EnvVars: []string{"DISTILL_EXTRACTOR_MODEL"}},
			&cli.StringFlag{Name: "extractor-base-url", Usage: "extractor server `URL`(s), with /v1 (--extractor llm)", EnvVars: []string{"DISTILL_EXTRACTOR_BASE_URL"}},
			&cli.StringFlag{Name: "reader", Value: "lexical", Usage: "reader: " + strings.Join(rollout.RoleKinds("reader"), ", ")},
			&cli.StringFlag{Name: "reader-model", Usage: "reader model (--reader llm)", EnvVars: []string{"DISTILL_READER_MODEL"}},
			readerInputFlag(),
			&cli.StringFlag{Name: "reader-base-url", Usage: "reader server `URL`(s), with /v1 (--reader llm)", EnvVars: []string{"DISTILL_READER_BASE_URL"}},
			&cli.StringFlag{Name: "policy", Value: rollout.EarlyStop.String(), Usage: "early-stop (stop when the judge says sufficient) or fixed (always spend --max-rounds)"},
		}, loopFlags(), []cli.Flag{
			&cli.IntFlag{Name: "checkpoint-questions", Value: runner.DefaultCheckpointQuestions, Usage: "commit a part after this many questions"},
			&cli.DurationFlag{Name: "checkpoint-interval", Value: runner.DefaultCheckpointInterval, Usage: "commit a part at least this often"},
			contextWindowFlag(),
		}, modelFlags(), retrieverFlags()),
		Action: rolloutAction,
	})
}

func rolloutAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("rollout: unexpected argument %q (see '%s --help')", c.Args().First(), helpName(c))
	}
	if err := shareModel(c, "judge", "extractor", "reader"); err != nil {
		return err
	}
	opts, err := rolloutOptions(c)
	if err != nil {
		return err
	}
	roles, err := newRoles(c)
	if err != nil {
		return err
	}
	opts.Roles = roles.roles
	opts.Info.Judge, opts.Info.Extractor, opts.Info.Reader = roles.info[0], roles.info[1], roles.info[2]
	opts.Usage = roles.usage
	splitter, stopSplitter, err := openSplitter(c, "rollout")
	if err != nil {
		return err
	}
	defer stopSplitter()
	opts.Loop.Splitter = splitter

	// Questions, index and output.
	questions, err := questionsFlags(c, "rollout", opts.Out)
	if err != nil {
		return err
	}
	var world *synth.World
	if questions != "" {
		// Recorded relative to the output, as label reads it: the two can
		// move together.
		opts.Questions, opts.Info.Questions = runner.QuestionsFile(questions), data.RelativePath(opts.Out, questions)
	} else {
		world = synth.Sample()
		opts.Questions, opts.Info.Questions = runner.Slice(world.Questions), datasetSample+" (synthetic, built in)"
		if opts.Out == "" {
			opts.Out = defaultSampleOut
		}
	}
	if dir := c.String("index"); dir != "" {
		x, err := openIndex(c, dir)
		if err != nil {
			return err
		}
		defer x.Close()
		opts.Roles.Retriever, opts.Info.Retriever = x, "bm25 "+dir
	} else {
		x, cleanup, err := tempIndex(c.Context, world.Passages)
		if err != nil {
			return err
		}
		defer cleanup()
		opts.Roles.Retriever, opts.Info.Retriever = x, "bm25 of the "+datasetSample+" corpus (temporary)"
	}

	bar := newRunBar(c, "rollout", "questions")
	opts.Progress = func(p runner.Progress) {
		desc := fmt.Sprintf("rollout: %d states, %d failed", p.States, p.Failed)
		bar.show(p.Total, desc+usageSoFar(opts.Usage), p.Done+p.Failed)
	}
	sum, err := runner.Run(c.Context, opts)
	bar.Finish()
	switch {
	case errors.Is(err, runner.ErrOutExists):
		return usageErrorf("rollout: %s is not empty: use --resume to continue the run in it, or another --out", opts.Out)
	case errors.Is(err, runner.ErrMismatch), errors.Is(err, runner.ErrNotRun):
		return usageErrorf("rollout: %w", err)
	case errors.Is(err, runner.ErrAllFailed):
		if perr := printRolloutReport(c, sum, opts.Out); perr != nil {
			return perr
		}
		return failuresError("rollout", err)
	case err != nil:
		return failuresError("rollout", err)
	}
	return printRolloutReport(c, sum, opts.Out)
}

// loopFlags are the flags of the loop's options that rollout and bench
// share (rollout adds --policy; bench's variants choose their own).
func loopFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-rounds", Value: rollout.DefaultMaxRetrievals, Usage: "most retrievals per question"},
		&cli.IntFlag{Name: "top-k", Value: rollout.DefaultTopK, Usage: "new documents per retrieval"},
		&cli.IntFlag{Name: "max-evidence", Value: rollout.DefaultMaxEvidence, Usage: "most sentences the extractor keeps per round (K)"},
		&cli.BoolFlag{Name: "first-gap-only", Usage: "build queries from the first gap item only (the paper's wording) instead of the first three"},
		&cli.StringFlag{Name: "query-rule", Value: rollout.QueryDistill.String(), Usage: "how gap items become the query: distill (target and slot, or whichever is set, else the description) or reference (the authors' code: target and slot only when both are set, else the description)"},
		&cli.StringFlag{Name: "dedup", Value: rollout.DedupDocID.String(), Usage: "documents seen before are skipped by doc-id or by title"},
		&cli.StringFlag{Name: "evidence-layout", Value: string(data.LayoutDistill), Usage: "how the evidence context is written: distill (a block per title, \"[title]\" then one sentence a line, a block already there not added) or reference (the authors' code: a block per document in retrieval order, \"[title] EVIDENCE:\" then \"- sentence\" lines, a round's blocks joined by \"---\", a round left out only when all of it is there)"},
		&cli.BoolFlag{Name: "judge-no-repair", Usage: "an LLM judge's unusable answer counts as insufficient with no gap items at once, without asking the model again (the authors' code)"},
		&cli.StringFlag{Name: "splitter", Value: splitterDistill, Usage: "how retrieved documents are split into sentences: distill (the passage's own split, else distill's rule-based splitter) or pysbd (the authors' code: every text cut at blank lines and split by pysbd, run in Python: --pysbd-python)"},
		&cli.StringFlag{Name: "pysbd-python", Value: "python3", EnvVars: []string{"DISTILL_PYSBD_PYTHON"}, Usage: "with --splitter pysbd, the Python `INTERPRETER` that has pysbd (pip install pysbd==" + pysbd.Version + "; make models installs it in .cache/models/venv)"},
	}
}

// The values of --splitter.
const (
	splitterDistill = "distill"
	splitterPysbd   = "pysbd"
)

// openSplitter starts the sentence splitter --splitter names (nil for
// distill's own); stop ends it.
func openSplitter(c *cli.Context, cmd string) (splitter rollout.Splitter, stop func(), err error) {
	switch name := c.String("splitter"); name {
	case splitterDistill:
		return nil, func() {}, nil
	case splitterPysbd:
		s, err := pysbd.Start(c.Context, c.String("pysbd-python"))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: --splitter pysbd: %w (--pysbd-python names the Python that has it)", cmd, err)
		}
		return s, func() { s.Close() }, nil
	default:
		return nil, nil, usageErrorf("%s: unknown --splitter %q (want %s or %s)", cmd, name, splitterDistill, splitterPysbd)
	}
}

// loopOptions reads loopFlags; cmd names the command in errors.
func loopOptions(c *cli.Context, cmd string) (rollout.Options, error) {
	dedup, err := rollout.ParseDedup(c.String("dedup"))
	if err != nil {
		return rollout.Options{}, usageErrorf("%s: --dedup: %w", cmd, err)
	}
	queryRule, err := rollout.ParseQueryRule(c.String("query-rule"))
	if err != nil {
		return rollout.Options{}, usageErrorf("%s: --query-rule: %w", cmd, err)
	}
	layout, err := data.ParseLayout(c.String("evidence-layout"))
	if err != nil {
		return rollout.Options{}, usageErrorf("%s: --evidence-layout: %w", cmd, err)
	}
	for _, name := range []string{"max-rounds", "top-k", "max-evidence"} {
		if c.Int(name) < 1 {
			return rollout.Options{}, usageErrorf("%s: --%s must be at least 1, got %d", cmd, name, c.Int(name))
		}
	}
	return rollout.Options{
		MaxRetrievals: c.Int("max-rounds"),
		TopK:          c.Int("top-k"),
		MaxEvidence:   c.Int("max-evidence"),
		FirstGapOnly:  c.Bool("first-gap-only"),
		QueryRule:     queryRule,
		Evidence:      layout,
		Dedup:         dedup,
	}, nil
}

// rolloutOptions reads the flags that configure the run and the loop.
func rolloutOptions(c *cli.Context) (runner.Options, error) {
	policy, err := rollout.ParsePolicy(c.String("policy"))
	if err != nil {
		return runner.Options{}, usageErrorf("rollout: --policy: %w", err)
	}
	loop, err := loopOptions(c, "rollout")
	if err != nil {
		return runner.Options{}, err
	}
	loop.Policy = policy
	shard, err := data.ParseShard(c.String("shard"))
	if err != nil {
		return runner.Options{}, usageErrorf("rollout: --shard: %w", err)
	}
	for _, name := range []string{"workers", "checkpoint-questions"} {
		if c.Int(name) < 1 {
			return runner.Options{}, usageErrorf("rollout: --%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	if c.Int("limit") < 0 {
		return runner.Options{}, usageErrorf("rollout: --limit must not be negative")
	}
	if c.Duration("checkpoint-interval") <= 0 {
		return runner.Options{}, usageErrorf("rollout: --checkpoint-interval must be positive")
	}
	modelRoles := c.String("judge") == "llm" || c.Path("judge-from") != "" || c.String("extractor") == "llm" || c.String("reader") == "llm"
	if err := applyContextWindow(c, &loop, modelRoles); err != nil {
		return runner.Options{}, err
	}
	return runner.Options{
		Out:                 c.Path("out"),
		Resume:              c.Bool("resume"),
		KeepFailed:          c.Bool("no-retry-failed"),
		Workers:             c.Int("workers"),
		Limit:               c.Int("limit"),
		Shard:               shard,
		Loop:                loop,
		CheckpointQuestions: c.Int("checkpoint-questions"),
		CheckpointInterval:  c.Duration("checkpoint-interval"),
		Logger:              loggerFrom(c),
		Info:                runner.Info{Version: versionString()},
	}, nil
}

// wiredRoles are the judge, extractor and reader the flags name, how
// run.json describes them, and their model usage (nil without model roles).
type wiredRoles struct {
	roles rollout.Roles // without the retriever
	info  [3]runner.Role
	usage func() []llm.Stats
}

// newRoles builds the roles that --judge, --extractor and --reader name,
// opened as bench opens them (judge.Open, rollout.RoleSpecs.Open): an
// "llm" role gets its own model client stack (limits, retries, cache,
// accounting) whose Meter feeds the usage and cost in run.json; its key
// comes from DISTILL_<ROLE>_API_KEY or OPENAI_API_KEY. Every flag is
// checked before any client is made.
func newRoles(c *cli.Context) (wiredRoles, error) {
	var w wiredRoles
	// A rollout runs whatever trained judge it is given: it records the
	// judge's model and template in every row, and has never refused one
	// trained on another template (bench does, --allow-template-mismatch).
	spec, err := withJudgeFrom(c, "rollout", judgeFlagSpec(c, "judge"))
	if err != nil {
		return w, err
	}
	spec.AllowTemplateMismatch = true
	w.info[0] = runner.Role{Name: spec.Kind, Model: spec.Model, BaseURL: spec.BaseURL}
	from := spec.From != ""
	spec, err = judge.Resolve(spec)
	if err != nil {
		return w, judgeError("rollout", "judge", err)
	}
	if from {
		w.info[0] = runner.Role{Name: spec.Kind, Model: spec.Model, BaseURL: spec.BaseURL}
	}
	// Model flags that only the environment sets (scripts/local-models
	// writes them for a served adapter) are not an error of another judge.
	if kind := c.String("judge"); !from && kind != "llm" && (onCommandLine(c, "judge-model") || onCommandLine(c, "judge-base-url")) {
		if strings.HasPrefix(kind, judge.BuiltinPrefix) {
			kind = judge.BuiltinPrefix + "PATH"
		}
		return w, usageErrorf("rollout: --judge-model and --judge-base-url are for --judge llm, not %s", kind)
	}
	specs := roleSpecs(c)
	if err := specs.Check(); err != nil {
		return w, roleUsageError("rollout", err)
	}
	w.info[1] = runner.Role{Name: c.String("extractor"), Model: specs.Extractor.Model, BaseURL: specs.Extractor.BaseURL}
	w.info[2] = runner.Role{Name: c.String("reader"), Model: specs.Reader.Model, BaseURL: specs.Reader.BaseURL}
	if spec.NoRepair && spec.Kind == "llm" { // other judges ignore it
		w.info[0].Setting = "no-repair"
	}
	if specs.Reader.Kind == rollout.KindLLM && specs.ReaderInput == rollout.ReaderInputReference {
		w.info[2].Setting = "reference-input"
	}
	prices, err := priceTable(c)
	if err != nil {
		return w, err
	}
	models := newDialer(c, prices)
	dial := func(role, model, baseURL string) (llm.Chatter, error) {
		return models.Dial("", role, model, baseURL)
	}
	w.roles.Judge, err = judge.Open(spec, func(model, baseURL string) (llm.Chatter, error) {
		return dial("judge", model, baseURL)
	})
	if err != nil {
		return w, judgeError("rollout", "judge", err)
	}
	opened, err := specs.Open(dial)
	if err != nil {
		return w, err
	}
	w.roles.Extractor, w.roles.Reader = opened.Extractor, opened.Reader
	if models.Dialed() {
		w.usage = func() []llm.Stats { return models.Usage("") }
	}
	return w, nil
}

// tempIndex builds a BM25 index of the bundled sample's passages in a
// temporary directory; cleanup closes and removes it.
func tempIndex(ctx context.Context, passages []data.Passage) (x *bm25.Index, cleanup func(), err error) {
	return bm25.BuildTemp(ctx, data.NewPassageSlice(passages), bm25.BuildOptions{SourceName: "dataset " + datasetSample})
}

// versionString describes the binary for run.json.
func versionString() string {
	v := readVersionInfo()
	s := v.Version
	if v.Commit != "" {
		s += " " + v.Commit
		if v.Modified {
			s += " (modified)"
		}
	}
	return s + " " + v.GoVersion
}

// printRolloutReport writes the final report of a run on stdout.
func printRolloutReport(c *cli.Context, sum runner.Summary, out string) error {
	cnt, o := sum.Counts, sum.Counts.Output
	selected := fmt.Sprint(cnt.Selected)
	if sum.Config.Limit > 0 || sum.Config.Shard != "" {
		selected += fmt.Sprintf(" (limit %d, shard %q)", sum.Config.Limit, sum.Config.Shard)
	}
	rows := [][2]any{
		{"output", out},
		{"questions", selected},
		{"already done (resumed)", cnt.AlreadyDone},
		{"run now", fmt.Sprintf("%d done, %d failed, %d states", cnt.Run.Done, cnt.Run.Failed, cnt.Run.States)},
		{"written", fmt.Sprintf("%d questions (%d done, %d failed), %d rows in %d parts", o.Questions, o.Done, o.Failed, o.Rows, o.Parts)},
		{"retrievals per question", rounds(o.Rounds)},
		{"parse failures", fmt.Sprintf("judge %d, extractor %d, reader %d", o.JudgeParseFailures, o.ExtractorParseFailures, o.ReaderParseFailures)},
		{"repaired (asked again)", fmt.Sprintf("judge %d, extractor %d, reader %d", o.JudgeRepairs, o.ExtractorRepairs, o.ReaderRepairs)},
		{"trimmed to the window", fmt.Sprintf("%d sentences not shown to the extractor, %d not appended", o.CandidatesTrimmed, o.EvidenceTrimmed)},
	}
	if cnt.DuplicateIDs > 0 {
		rows = append(rows, [2]any{"repeated ids skipped", cnt.DuplicateIDs})
	}
	if len(sum.Usage) > 0 {
		tokens, cost := usageText(sum.Usage)
		rows = append(rows, [2]any{"tokens", tokens}, [2]any{"cost", cost})
	}
	rows = append(rows,
		[2]any{"trajectories", sum.Trajectories},
		[2]any{"run record", filepath.Join(out, runner.ReportFile)},
		[2]any{"time", fmt.Sprintf("%.2fs (%.1f questions/s)", sum.WallSeconds, sum.QuestionsPerSecond)},
	)
	if err := printCounts(c.App.Writer, rows); err != nil {
		return err
	}
	const shown = 5
	for i, f := range o.Failures {
		if i == shown {
			fmt.Fprintf(c.App.Writer, "failed: ... and %d more (see %s)\n", o.Failed-shown, runner.ReportFile)
			break
		}
		fmt.Fprintf(c.App.Writer, "failed: %s: %s\n", f.QuestionID, f.Reason)
	}
	return nil
}

// rounds writes a histogram as "1: 12, 2: 30".
func rounds(h map[int]int) string {
	if len(h) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(h)) {
		parts = append(parts, fmt.Sprintf("%d: %d", k, h[k]))
	}
	return strings.Join(parts, ", ")
}

// roleSpecs reads the flags of the roles besides the judge (bench adds
// --summarizer).
func roleSpecs(c *cli.Context) rollout.RoleSpecs {
	role := func(name string) rollout.RoleSpec {
		return rollout.RoleSpec{Kind: c.String(name), Model: c.String(name + "-model"), BaseURL: c.String(name + "-base-url")}
	}
	return rollout.RoleSpecs{Extractor: role("extractor"), Reader: role("reader"), Summarizer: c.String("summarizer"),
		ReaderInput: rollout.ReaderInput(c.String("reader-input"))}
}

// readerInputFlag is --reader-input, for the commands that run the loop.
func readerInputFlag() cli.Flag {
	return &cli.StringFlag{Name: "reader-input", Value: string(rollout.ReaderInputDistill), Usage: "what an llm reader is shown: distill (the question and the evidence context, answered in a line \"Answer: ...\") or reference (the authors' code: the question, then each round's query and evidence, answered in \"Answer:\" and \"Rationale:\" lines; no second ask, an unreadable reply is \"Answer not found\")"}
}

// roleUsageError says which flags a *rollout.RoleSpecError is about.
func roleUsageError(command string, err error) error {
	var re *rollout.RoleSpecError
	if !errors.As(err, &re) {
		return usageErrorf("%s: %w", command, err)
	}
	flags := []string{"--" + re.Role}
	if len(re.Fields) > 0 {
		flags = flags[:0]
		for _, f := range re.Fields {
			flags = append(flags, "--"+re.Role+"-"+strings.ReplaceAll(f, "_", "-"))
		}
	}
	return usageErrorf("%s: %s: %s", command, strings.Join(flags, ", "), re.Reason)
}
