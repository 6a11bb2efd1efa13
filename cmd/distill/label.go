package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout/runner"
)

// The teachers --teacher can name.
var teacherKinds = []string{label.NameLLM, label.NameRetrievalTruth}

// defaultTeacherModel is the method's teacher.
const defaultTeacherModel = "gpt-4o-mini"

func labelCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "label",
		Usage: "have a teacher label every recorded state with sufficiency and gap items",
		Description: `Reads a rollout's trajectories.parquet and has a teacher label each state (question
and evidence context, exactly as the judge saw them): is the evidence sufficient, and if
not, which gap items are missing. Writes OUT/labels.parquet, one row per state with every
teacher sample (raw output, parsed verdict, parse error, tokens, model, template hash),
their aggregate (majority verdict, agreement, recurring gap items, self-contradictions)
and the state's retrieval truth; and OUT/label.json (configuration, counts, usage, cost).

Teachers: --teacher llm (default) asks --teacher-model (default ` + defaultTeacherModel + `) behind
--teacher-base-url (default: OpenAI's API; key from DISTILL_TEACHER_API_KEY or
OPENAI_API_KEY) with temperature 0, JSON output, 512 tokens and one sample, as the method
does; --samples 3 --temperature 0.7 measures the teacher's agreement with itself.
--teacher retrieval-truth is the built-in baseline that needs no model: sufficient when
every gold title and the answer are in the evidence, else one gap per missing gold title.

The questions (for retrieval truth) are those the rollout recorded in its run.json, unless
--questions FILE or --dataset sample says otherwise.

--dry-run counts the states, the requests and their prompt tokens, and estimates the
cost, without spending anything. --budget-usd stops cleanly once that much is spent (exit
3; --resume with a larger budget goes on). Output is checkpointed like a rollout's:
after an interruption, run the same command with --resume.

--batch labels through the OpenAI Batch API (half price, results within 24 hours): it
writes the requests with custom ids, uploads them, creates the batch, polls it,
downloads the output and error files, and resubmits the failed or expired requests
(--batch-retries times). The batch id is recorded in OUT, so a restarted command with
--resume picks the batch up again instead of submitting twice.`,
		Flags: append([]cli.Flag{
			presetFlag(),
			&cli.PathFlag{Name: "in", Usage: "a rollout's trajectories.parquet (or its directory)", EnvVars: []string{"DISTILL_TRAJECTORIES"}, TakesFile: true},
			&cli.PathFlag{Name: "out", Usage: "output `DIR`"},
			&cli.PathFlag{Name: "questions", Usage: "questions `FILE` of the states (default: the one the rollout's run.json names)", TakesFile: true},
			&cli.StringFlag{Name: "dataset", Usage: "take the questions of a bundled dataset: " + datasetSample},
			&cli.StringFlag{Name: "teacher", Value: label.NameLLM, Usage: "teacher: " + strings.Join(teacherKinds, ", ")},
			&cli.StringFlag{Name: "teacher-model", Value: defaultTeacherModel, Usage: "teacher model (--teacher llm)", EnvVars: []string{"DISTILL_TEACHER_MODEL"}},
			&cli.StringFlag{Name: "teacher-base-url", Usage: "teacher server `URL`, with /v1 (default: OpenAI's API)", EnvVars: []string{"DISTILL_TEACHER_BASE_URL"}},
			&cli.IntFlag{Name: "samples", Value: 1, Usage: "answers asked of the teacher per state (K)"},
			&cli.Float64Flag{Name: "temperature", Value: label.DefaultTemperature, Usage: "teacher sampling temperature"},
			&cli.IntFlag{Name: "max-tokens", Value: label.DefaultMaxTokens, Usage: "most tokens of a teacher answer"},
			&cli.IntFlag{Name: "seed-base", Usage: "sample k > 0 is sent with seed seed-base+k"},
			&cli.BoolFlag{Name: "resume", Usage: "continue the interrupted run in --out (with the same flags), labelling again the states that got no usable sample"},
			&cli.BoolFlag{Name: "no-retry-failed", Usage: "with --resume, keep the states that got no usable sample as they are"},
			&cli.IntFlag{Name: "workers", Value: label.DefaultWorkers, Usage: "states labelled at once", EnvVars: []string{"DISTILL_WORKERS"}},
			&cli.IntFlag{Name: "limit", Usage: "label only the first `N` states (0: all)"},
			&cli.BoolFlag{Name: "skip-empty", Usage: "leave the states with no evidence (each question's first) unlabelled, as the authors' code does"},
			&cli.StringFlag{Name: "shard", Usage: "label only the states of shard `i/n` of the questions (by a hash of the id, as rollout); distill merge joins the shards"},
			&cli.BoolFlag{Name: "dry-run", Usage: "count states, requests, tokens and cost, and stop before spending anything"},
			&cli.Float64Flag{Name: "budget-usd", Usage: "stop cleanly once this invocation has spent this much (0: no limit)"},
			&cli.BoolFlag{Name: "batch", Usage: "label through the OpenAI Batch API"},
			&cli.DurationFlag{Name: "batch-poll-interval", Value: label.DefaultPollInterval, Usage: "how often to ask how a batch is doing"},
			&cli.IntFlag{Name: "batch-retries", Value: label.DefaultBatchRetries, Usage: "batches resubmitting the failed or expired requests"},
			&cli.IntFlag{Name: "checkpoint-states", Value: label.DefaultCheckpointStates, Usage: "commit a part after this many states"},
			&cli.DurationFlag{Name: "checkpoint-interval", Value: label.DefaultCheckpointInterval, Usage: "commit a part at least this often"},
		}, modelFlags()...),
		Action: labelAction,
	})
}

func labelAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("label: unexpected argument %q (see '%s --help')", c.Args().First(), helpName(c))
	}
	if err := shareModel(c, "teacher"); err != nil {
		return err
	}
	opts, err := labelOptions(c)
	if err != nil {
		return err
	}
	if store, ok := opts.Questions.(io.Closer); ok {
		defer store.Close()
	}
	prices, err := priceTable(c)
	if err != nil {
		return err
	}
	model := opts.Info.Model
	var meter *llm.Meter
	switch c.String("teacher") {
	case label.NameRetrievalTruth:
		opts.Teacher = label.RetrievalTruth{}
	case label.NameLLM:
		client, err := newModelClient(c, "teacher", model, c.String("teacher-base-url"))
		if err != nil {
			return err
		}
		teacher := &label.LLMTeacher{Model: model, Temperature: opts.Info.Temperature, MaxTokens: opts.Info.MaxTokens, SeedBase: opts.Info.SeedBase}
		if c.Bool("batch") {
			single, ok := client.(*llm.Client)
			if !ok {
				return usageErrorf("label: --batch goes to one API: give one --teacher-base-url")
			}
			opts.Batch = &label.BatchOptions{Client: single, Teacher: teacher, Prices: prices,
				PollInterval: c.Duration("batch-poll-interval"), Retries: c.Int("batch-retries")}
		} else {
			stack := stackOptions(c)
			stack.Prices = prices
			if meter, err = llm.Stack(client, stack); err != nil {
				return fmt.Errorf("label: teacher model: %w", err)
			}
			teacher.Chatter = meter
			opts.Teacher = teacher
			opts.Usage = func() []llm.Stats { return []llm.Stats{meter.Snapshot()} }
			opts.Cost = func() float64 { return meter.Snapshot().CostUSD }
		}
	}
	if opts.BudgetUSD > 0 && (opts.Batch != nil || meter != nil || c.String("teacher") == label.NameLLM) {
		if _, ok := llm.PriceOf(prices, model); !ok {
			return usageErrorf("label: --budget-usd needs a priced model teacher: %q has no price (give one with --price %s=INPUT:OUTPUT)", model, model)
		}
	}

	if c.Bool("dry-run") {
		est, err := label.Preflight(c.Context, opts, model, prices)
		if err != nil {
			return labelError(err)
		}
		return printEstimate(c, est, opts)
	}

	bar := newRunBar(c, "label", "states")
	opts.Progress = func(p label.Progress) {
		desc := fmt.Sprintf("label: %d states, %d failed", p.Done, p.Failed)
		desc += usageSoFar(opts.Usage)
		if p.Phase != "" {
			desc += ", " + p.Phase
		}
		bar.show(p.Total, desc, p.Done)
	}
	sum, err := label.Run(c.Context, opts)
	bar.Finish()
	if errors.Is(err, label.ErrBudget) {
		fmt.Fprintf(c.App.ErrWriter, "distill label: %v\n", err)
		if perr := printLabelReport(c, sum, opts.Out); perr != nil {
			return perr
		}
		return &exitError{code: exitIncomplete}
	}
	if errors.Is(err, label.ErrAllFailed) {
		if perr := printLabelReport(c, sum, opts.Out); perr != nil {
			return perr
		}
	}
	if err != nil {
		return labelError(err)
	}
	return printLabelReport(c, sum, opts.Out)
}

// labelError maps the errors of package label that are the user's to fix
// to usage errors.
func labelError(err error) error {
	switch {
	case errors.Is(err, label.ErrOutExists):
		return usageErrorf("label: %w: use --resume to continue the run in it, or another --out", err)
	case errors.Is(err, label.ErrMismatch), errors.Is(err, label.ErrNotRun), errors.Is(err, label.ErrOptions):
		return usageErrorf("label: %w", err)
	}
	return failuresError("label", err)
}

// labelOptions reads the flags that configure the run and loads the
// questions.
func labelOptions(c *cli.Context) (label.Options, error) {
	in, out := c.Path("in"), c.Path("out")
	switch {
	case in == "":
		return label.Options{}, usageErrorf("label: --in is required (a rollout's trajectories.parquet)")
	case out == "" && !c.Bool("dry-run"):
		return label.Options{}, usageErrorf("label: --out is required")
	}
	fi, err := os.Stat(in)
	if err != nil {
		// Missing input, as for every command: exit 1, the file named.
		return label.Options{}, fmt.Errorf("label: --in: %w", err)
	}
	if fi.IsDir() {
		in = filepath.Join(in, runner.TrajectoriesFile)
	}
	teacher := c.String("teacher")
	switch {
	case !slices.Contains(teacherKinds, teacher):
		return label.Options{}, usageErrorf("label: unknown --teacher %q (want %s)", teacher, strings.Join(teacherKinds, ", "))
	case teacher != label.NameLLM && c.Bool("batch"):
		return label.Options{}, usageErrorf("label: --batch is for --teacher llm")
	case teacher != label.NameLLM && c.Float64("budget-usd") > 0:
		return label.Options{}, usageErrorf("label: --budget-usd is for --teacher llm (the built-in teacher costs nothing)")
	case teacher != label.NameLLM && c.IsSet("teacher-model"):
		return label.Options{}, usageErrorf("label: --teacher-model is for --teacher llm")
	}
	for _, name := range []string{"samples", "workers", "max-tokens", "checkpoint-states"} {
		if c.Int(name) < 1 {
			return label.Options{}, usageErrorf("label: --%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	switch {
	case c.Int("limit") < 0:
		return label.Options{}, usageErrorf("label: --limit must not be negative")
	case c.Float64("budget-usd") < 0:
		return label.Options{}, usageErrorf("label: --budget-usd must not be negative")
	case c.Float64("temperature") < 0 || c.Float64("temperature") > 2:
		return label.Options{}, usageErrorf("label: --temperature must be between 0 and 2")
	case c.Duration("checkpoint-interval") <= 0:
		return label.Options{}, usageErrorf("label: --checkpoint-interval must be positive")
	}
	shard, err := data.ParseShard(c.String("shard"))
	if err != nil {
		return label.Options{}, usageErrorf("label: --shard: %w", err)
	}
	questions, source, err := labelQuestions(c, in)
	if err != nil {
		return label.Options{}, err
	}
	info := label.Info{Version: versionString(), Questions: source, Teacher: teacher}
	samples := c.Int("samples")
	if teacher == label.NameRetrievalTruth {
		info.Model, info.Template = label.RetrievalTruthModel, label.RetrievalTruthTemplate
		if samples > 1 {
			loggerFrom(c).Info("the retrieval-truth teacher is deterministic: one sample per state", "samples_asked", samples)
			samples = 1
		}
	} else {
		info.Model, info.Template = c.String("teacher-model"), label.TeacherTemplateHash
		info.BaseURL = orSharedBaseURL(c, c.String("teacher-base-url"))
		if info.BaseURL == "" {
			info.BaseURL = defaultBaseURL
		}
		info.Temperature, info.MaxTokens, info.SeedBase = c.Float64("temperature"), c.Int("max-tokens"), c.Int("seed-base")
	}
	return label.Options{
		In: in, Out: out, Questions: questions, Samples: samples,
		Resume: c.Bool("resume"), KeepFailed: c.Bool("no-retry-failed"), Workers: c.Int("workers"), Limit: c.Int("limit"), SkipEmpty: c.Bool("skip-empty"), Shard: shard,
		CheckpointStates: c.Int("checkpoint-states"), CheckpointInterval: c.Duration("checkpoint-interval"),
		BudgetUSD: c.Float64("budget-usd"),
		Logger:    loggerFrom(c),
		Info:      info,
	}, nil
}

// labelQuestions finds the questions of the states: --questions, --dataset,
// or the questions the rollout's run.json names. Those of a file go to a
// data.QuestionStore (on disk, in $TMPDIR), so that memory does not grow
// with them; the caller closes it.
func labelQuestions(c *cli.Context, in string) (label.Questions, string, error) {
	path, dataset := c.Path("questions"), c.String("dataset")
	switch {
	case path != "" && dataset != "":
		return nil, "", usageErrorf("label: give --questions or --dataset, not both")
	case dataset != "" && dataset != datasetSample:
		return nil, "", usageErrorf("label: unknown --dataset %q (bundled: %s)", dataset, datasetSample)
	case path == "" && dataset == "":
		rep, err := runner.ReadReport(filepath.Dir(in))
		if err != nil {
			return nil, "", usageErrorf("label: cannot tell which questions %s holds (%v): give --questions FILE or --dataset %s", in, err, datasetSample)
		}
		src := rep.Config.Questions
		if strings.HasPrefix(src, datasetSample+" ") || src == datasetSample {
			dataset = datasetSample
		} else {
			// Relative to the rollout's output; an older run.json has it
			// relative to where the rollout ran.
			path = src
			if !filepath.IsAbs(src) {
				if p := filepath.Join(filepath.Dir(in), src); fileExists(p) {
					path = p
				}
			}
			if !fileExists(path) {
				return nil, "", usageErrorf("label: the rollout's questions file %s is not there from here: give --questions FILE", src)
			}
		}
	}
	if dataset == datasetSample {
		qs := make(data.QuestionMap)
		for _, q := range synth.Sample().Questions {
			qs[q.ID] = q
		}
		return qs, datasetSample + " (synthetic, built in)", nil
	}
	qs, err := data.StoreQuestions(runner.QuestionsFile(path), "")
	if err != nil {
		return nil, "", err
	}
	return qs, path, nil
}

// printEstimate writes the preflight of a run on stdout.
func printEstimate(c *cli.Context, e label.Estimate, opts label.Options) error {
	cost := fmt.Sprintf("$%.4f expected, $%.4f at most (every answer at --max-tokens)", e.CostExpectedUSD, e.CostMaxUSD)
	switch {
	case e.Requests == 0:
		cost = "$0 (nothing to label)"
	case opts.Teacher != nil && opts.Batch == nil && e.PromptTokens == 0:
		cost = "$0 (built-in teacher)"
	case !e.Priced:
		cost = fmt.Sprintf("unknown: %s has no price (give one with --price)", opts.Info.Model)
	case e.Batch:
		cost += ", at the Batch API's half price"
	}
	rows := [][2]any{
		{"dry run", "nothing was sent and nothing was written"},
		{"input", opts.In + ": " + inputText(e.Counts)},
		{"states", fmt.Sprintf("%d selected, %d already labelled, %d to label", e.Counts.Selected, e.Counts.AlreadyDone, e.States)},
		{"teacher", fmt.Sprintf("%s, %s per state", teacherName(opts.Info.Teacher, opts.Info.Model), samplesText(opts.Samples))},
		{"requests", e.Requests},
		{"prompt tokens", fmt.Sprintf("%d (longest prompt %d)", e.PromptTokens, e.MaxPromptTokens)},
		{"completion tokens", fmt.Sprintf("%d expected, %d at most", e.CompletionTokensExpected, e.CompletionTokensMax)},
		{"cost", cost},
	}
	return printCounts(c.App.Writer, rows)
}

// inputText says what the input held and which rows are not labelled.
func inputText(c label.Counts) string {
	s := fmt.Sprintf("%d rows (%d of failed questions", c.InputRows, c.FailedQuestionRows)
	if c.EmptyStates > 0 {
		s += fmt.Sprintf(", %d with no evidence", c.EmptyStates)
	}
	return s + ", not labelled)"
}

// printLabelReport writes the final report of a run on stdout.
func printLabelReport(c *cli.Context, sum label.Summary, out string) error {
	cnt, o := sum.Counts, sum.Counts.Output
	rows := [][2]any{
		{"output", out},
		{"teacher", fmt.Sprintf("%s (template %.12s), %s per state", teacherName(sum.Config.Teacher, sum.Config.Model), sum.Config.Template, samplesText(sum.Config.Samples))},
		{"input", inputText(cnt)},
		{"states", fmt.Sprintf("%d selected, %d already labelled", cnt.Selected, cnt.AlreadyDone)},
		{"labelled now", fmt.Sprintf("%d states (%d with no usable sample), %d samples", cnt.Run.States, cnt.Run.Failed, cnt.Run.Samples)},
	}
	if sum.Labels != "" {
		agree := "-"
		if o.TruthSettled > 0 {
			agree = fmt.Sprintf("%d of %d settled states (%.1f%%)", o.TruthAgree, o.TruthSettled, 100*float64(o.TruthAgree)/float64(o.TruthSettled))
		}
		rows = append(rows,
			[2]any{"written", fmt.Sprintf("%d states, %d sufficient, %d failed, %d parts", o.States, o.Sufficient, o.Failed, cnt.Parts)},
			[2]any{"unusable samples", fmt.Sprintf("%d request failures, %d parse failures", o.RequestFailures, o.ParseFailures)},
			[2]any{"agreement", fmt.Sprintf("%d states unanimous, %d with a self-contradicting sample", o.UnanimousStates, o.Contradictions)},
			[2]any{"agrees with retrieval truth", agree},
		)
	}
	if len(sum.Usage) > 0 {
		tokens, cost := usageText(sum.Usage)
		rows = append(rows, [2]any{"tokens", tokens}, [2]any{"cost", cost})
	}
	if sum.Labels != "" {
		rows = append(rows, [2]any{"labels", sum.Labels})
	} else {
		rows = append(rows, [2]any{"labels", "not written yet: the run stopped early (" + sum.Status + "); --resume goes on"})
	}
	rows = append(rows,
		[2]any{"run record", filepath.Join(out, label.ReportFile)},
		[2]any{"time", fmt.Sprintf("%.2fs", sum.WallSeconds)},
	)
	return printCounts(c.App.Writer, rows)
}

// teacherName names a teacher for the reports: the model for a model
// teacher, the built-in teacher's own name otherwise.
func teacherName(teacher, model string) string {
	if teacher == label.NameLLM {
		return "llm " + model
	}
	return model
}

func samplesText(n int) string {
	if n == 1 {
		return "1 sample"
	}
	return fmt.Sprintf("%d samples", n)
}
