package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/gguf"
	"github.com/distill-rag/distill/finetune/local"
	"github.com/distill-rag/distill/finetune/slurm"
	"github.com/distill-rag/distill/finetune/trainer"
	"github.com/distill-rag/distill/judge"
)

// The backends --backend can name.
var backendKinds = []string{"local", "openai", "slurm", "builtin"}

// defaultBaseModel is the method's judge.
const defaultBaseModel = "meta-llama/Llama-3.2-3B-Instruct"

func trainCommand() *cli.Command {
	h := finetune.DefaultHyperparameters()
	flags := []cli.Flag{
		presetFlag(),
		&cli.PathFlag{Name: "in", Usage: "`DIR` of train.parquet and val.parquet from distill filter", TakesFile: true},
		&cli.PathFlag{Name: "out", Usage: "job `DIR`: exported data, job.json, log, result, model.json"},
		&cli.StringFlag{Name: "backend", Value: "local", Usage: "where to train: " + strings.Join(backendKinds, ", ")},
		&cli.StringFlag{Name: "base-model", Value: defaultBaseModel, Usage: "model to fine-tune (Hugging Face id, model directory or GGUF file; a provider's model name for openai)", EnvVars: []string{"DISTILL_TRAIN_BASE_MODEL", "DISTILL_BASE_MODEL"}},
		&cli.PathFlag{Name: "base-gguf", Usage: "GGUF `FILE` of the base model that llama.cpp will serve the adapter on (local, slurm): model.json compares the chat templates and gives llama.cpp's commands", EnvVars: []string{"DISTILL_TRAIN_BASE_GGUF"}, TakesFile: true},
		&cli.StringFlag{Name: "name", Value: "s2g-judge", Usage: "name of the job and of its result"},
		&cli.BoolFlag{Name: "export-only", Usage: "write the training data in every format, print its summary, and stop"},
		&cli.BoolFlag{Name: "overwrite", Usage: "replace what --out holds: files, or a job that has ended (failed, cancelled or succeeded); a job still running is refused"},
		&cli.BoolFlag{Name: "detach", Usage: "submit and return; follow later with distill train status DIR or distill train --out DIR"},
		&cli.DurationFlag{Name: "poll-interval", Value: 10 * time.Second, Usage: "how often to ask how the job is doing"},
		&cli.StringFlag{Name: "tokenizer", Usage: "model whose tokenizer counts the examples' tokens (default: an estimate)"},
		&cli.IntFlag{Name: "lora-rank", Value: h.LoRARank, Usage: "LoRA rank"},
		&cli.IntFlag{Name: "lora-alpha", Value: h.LoRAAlpha, Usage: "LoRA alpha"},
		&cli.Float64Flag{Name: "lora-dropout", Value: h.LoRADropout, Usage: "LoRA dropout"},
		&cli.StringFlag{Name: "lora-target", Value: strings.Join(h.TargetModules, ","), Usage: "modules LoRA adapts, comma-separated"},
		&cli.Float64Flag{Name: "learning-rate", Value: h.LearningRate, Usage: "learning rate"},
		&cli.IntFlag{Name: "epochs", Value: h.Epochs, Usage: "epochs"},
		&cli.IntFlag{Name: "max-steps", Usage: "stop after `N` optimiser steps, whatever --epochs says (local, slurm; 0: epochs decide)"},
		&cli.IntFlag{Name: "batch-size", Value: h.BatchSize, Usage: "batch size per device"},
		&cli.IntFlag{Name: "grad-accum", Value: h.GradAccum, Usage: "gradient accumulation steps"},
		&cli.IntFlag{Name: "max-length", Value: h.MaxLength, Usage: "maximum sequence length in tokens"},
		&cli.IntFlag{Name: "seed", Value: h.Seed, Usage: "training seed"},
		&cli.StringFlag{Name: "target-json", Value: finetune.TargetCompact, Usage: "how the verdict an example teaches is written: compact (as the judge is asked to answer) or spaced (a space after every ',' and ':', as Python's json.dumps and the authors' code write it)"},
		&cli.StringFlag{Name: "loss", Value: finetune.LossCompletion, Usage: "what the loss covers: completion (the teacher's verdict; over-long examples left out) or full (the whole chat-templated text, over-long examples cut: the authors' training; local and slurm backends)"},
		&cli.StringFlag{Name: "precision", Value: h.Precision, Usage: "what the trainer computes in: auto (bfloat16 on a GPU that supports it and on a CPU with AMX; float32 elsewhere), bf16 or fp32"},
		&cli.StringSliceFlag{Name: "extra", Usage: "provider parameter passed through, `KEY=JSON` (repeatable)"},
	}
	flags = append(flags, backendFlags()...)
	return withConfig(&cli.Command{
		Name:  "train",
		Usage: "fine-tune the judge with LoRA on the filtered labels, and follow the job to its end",
		Description: `Exports train.parquet and val.parquet (from distill filter) as supervised examples whose
prompt is exactly the judge's (system and user message) and whose completion is the label
as the judge's JSON, in the OpenAI chat JSONL, ShareGPT (with LLaMA-Factory's
dataset_info.json) and parquet "messages" formats, under OUT/data. --export-only stops
there, with a summary (examples, classes, token lengths, examples over --max-length).

Then it submits a LoRA SFT job to --backend and follows it: local (a trainer process on
this machine: TRL/PEFT script or LLaMA-Factory), slurm (the same trainer in an sbatch
job), openai (any OpenAI-compatible fine-tuning API; key from DISTILL_TRAIN_API_KEY or
OPENAI_API_KEY), builtin (a small judge trained on this CPU in seconds, a baseline). The
defaults are the method's: LoRA rank 16, alpha 32, dropout 0.05 on q/k/v/o/gate/up/down,
learning rate 1e-4, 3 epochs, batch 2 x accumulation 8, max length 2048, seed 42, bf16
(--precision auto: where the hardware that trains computes it natively, float32 elsewhere).

The job is recorded in OUT/job.json: run distill train again with the same --out to
re-attach to it (nothing is submitted twice), distill train status OUT to see it, distill
train cancel OUT to stop it, from any process. Interrupting distill train does not stop
the job. When it succeeds, OUT/model.json hands it back: the adapter, model or model file,
the hyper-parameters, the template and data hashes, the final metrics, and the commands to
serve it and to use it as the judge.`,
		Flags:  flags,
		Action: trainAction,
		Subcommands: []*cli.Command{
			{
				Name: "status", Usage: "show a training job recorded in DIR", ArgsUsage: "DIR",
				Flags:  backendFlags(),
				Action: trainJobAction(finetune.Backend.Status),
			},
			{
				Name: "cancel", Usage: "cancel the training job recorded in DIR (idempotent)", ArgsUsage: "DIR",
				Flags:  backendFlags(),
				Action: trainJobAction(finetune.Backend.Cancel),
			},
		},
	})
}

func trainAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("train: unexpected argument %q (see '%s --help')", c.Args().First(), helpName(c))
	}
	out := c.Path("out")
	if out == "" {
		return usageErrorf("train: --out is required")
	}
	job, err := trainJob(c)
	if err != nil {
		return err
	}
	bar := newJobBar(c)
	res, err := finetune.Run(c.Context, finetune.RunOptions{
		In: c.Path("in"), Out: out, Job: job,
		Backend: c.String("backend"), BackendChosen: c.IsSet("backend"),
		Open:      func(name string) (finetune.Backend, error) { return newBackend(c, name) },
		Tokenizer: c.String("tokenizer"),
		Overwrite: c.Bool("overwrite"), ExportOnly: c.Bool("export-only"), Detach: c.Bool("detach"),
		Logger:   loggerFrom(c),
		OnExport: func(sum finetune.ExportSummary) error { return printExport(c, sum, out) },
		Follow:   finetune.FollowOptions{Interval: c.Duration("poll-interval"), OnUpdate: bar.show},
	})
	bar.finish()
	var refused *finetune.RefusedError
	switch {
	case errors.As(err, &refused):
		return refusedError(c, refused)
	case err != nil && c.Context.Err() != nil && res.State.ID != "":
		fmt.Fprintf(c.App.ErrWriter, "distill train: stopped following; the job %s goes on (distill train status %s, distill train --out %s to re-attach, distill train cancel %s)\n",
			res.State.ID, out, out, out)
		return err
	case err != nil:
		return err
	case c.Bool("export-only"):
		return nil
	}
	if err := printJob(c, res.Job, res.State, res.Handback); err != nil {
		return err
	}
	switch res.State.Status {
	case finetune.StatusFailed:
		return fmt.Errorf("train: job %s failed: %s", res.State.ID, res.State.Message)
	case finetune.StatusCancelled:
		return fmt.Errorf("train: job %s was cancelled", res.State.ID)
	}
	return nil
}

// refusedError says why train refused its --out, and what to do.
func refusedError(c *cli.Context, e *finetune.RefusedError) error {
	out := e.Out
	var id, status, backend string
	if e.Record != nil {
		id, status, backend = e.Record.State.ID, string(e.Record.State.Status), e.Record.State.Backend
	}
	switch {
	case errors.Is(e, finetune.ErrHoldsJob):
		return usageErrorf("train: %s already holds a job (%s); give another --out to export", out, id)
	case errors.Is(e, finetune.ErrJobNotEnded):
		return usageErrorf("train: %s holds the job %s, still %s, which --overwrite does not replace: cancel it (distill train cancel %s) first, or give another --out",
			out, id, status, out)
	case errors.Is(e, finetune.ErrOtherBackend):
		return usageErrorf("train: %s holds the job %s of backend %s (%s), not of --backend %s: --overwrite replaces a job that has ended, or give another --out",
			out, id, backend, status, c.String("backend"))
	case errors.Is(e, finetune.ErrJobDidNotEnd):
		return usageErrorf("train: %s holds the job %s, which %s (distill train status %s says more): --overwrite replaces it, or give another --out",
			out, id, status, out)
	case errors.Is(e, finetune.ErrNotEmptyNoJob):
		return usageErrorf("train: %s is not empty and holds no job: use --overwrite to replace what it holds, or another --out", out)
	case errors.Is(e, finetune.ErrNoInput):
		return usageErrorf("train: --in is required (the directory of train.parquet and val.parquet from distill filter)")
	}
	return e
}

// trainJob reads the job's flags.
func trainJob(c *cli.Context) (finetune.Job, error) {
	if k := c.String("backend"); !slices.Contains(backendKinds, k) {
		return finetune.Job{}, usageErrorf("train: unknown --backend %q (want %s)", k, strings.Join(backendKinds, ", "))
	}
	lora := c.String("backend") == local.Name || c.String("backend") == slurm.Name
	hyper, err := trainHyperparameters(c, lora)
	if err != nil {
		return finetune.Job{}, err
	}
	extra := map[string]any{}
	for _, kv := range c.StringSlice("extra") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return finetune.Job{}, usageErrorf("train: --extra %q: want KEY=JSON", kv)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v // a bare word is a string
		}
		extra[k] = val
	}
	if len(extra) == 0 {
		extra = nil
	}
	dir, err := filepath.Abs(c.Path("out"))
	if err != nil {
		return finetune.Job{}, err
	}
	base := c.String("base-model")
	if c.String("backend") == "builtin" && !onCommandLine(c, "base-model") {
		base = "none (built-in linear judge over lexical features)"
	}
	if _, err := os.Stat(base); err == nil && !filepath.IsAbs(base) {
		// A model on this disk, named from here: the trainer runs in the
		// job directory, where a relative path would read as a hub id.
		if base, err = filepath.Abs(base); err != nil {
			return finetune.Job{}, err
		}
	}
	// The GGUF file is read now, so that a wrong one is said before hours
	// of training; only LoRA trainers use it (the environment may name one
	// for every backend: scripts/local-models does).
	var baseGGUF string
	if p := c.Path("base-gguf"); p != "" && lora {
		if _, err := gguf.ReadFile(p); err != nil {
			return finetune.Job{}, usageErrorf("train: --base-gguf: %v", err)
		}
		if baseGGUF, err = filepath.Abs(p); err != nil {
			return finetune.Job{}, err
		}
	}
	return finetune.Job{Dir: dir, BaseModel: base, BaseGGUF: baseGGUF, Name: c.String("name"), Extra: extra, Hyper: hyper}, nil
}

// trainHyperparameters reads and checks the training flags; lora says
// that the backend runs a LoRA trainer (local, slurm), which alone takes
// --max-steps and --loss full.
func trainHyperparameters(c *cli.Context, lora bool) (finetune.Hyperparameters, error) {
	var h finetune.Hyperparameters
	for _, name := range []string{"lora-rank", "lora-alpha", "epochs", "batch-size", "grad-accum", "max-length"} {
		if c.Int(name) < 1 {
			return h, usageErrorf("train: --%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	switch {
	case c.Int("max-steps") < 0:
		return h, usageErrorf("train: --max-steps must not be negative")
	case c.Int("max-steps") > 0 && !lora:
		return h, usageErrorf("train: --max-steps is for the local and slurm backends' trainers")
	}
	if d := c.Float64("lora-dropout"); d < 0 || d >= 1 {
		return h, usageErrorf("train: --lora-dropout must be in [0, 1)")
	}
	switch loss := c.String("loss"); {
	case loss != finetune.LossCompletion && loss != finetune.LossFull:
		return h, usageErrorf("train: --loss must be %s or %s, got %q", finetune.LossCompletion, finetune.LossFull, loss)
	case loss == finetune.LossFull && !lora:
		return h, usageErrorf("train: --loss %s is for the local and slurm backends' trainers", finetune.LossFull)
	}
	target := c.String("target-json")
	switch target {
	case finetune.TargetCompact:
		target = ""
	case finetune.TargetSpaced:
	default:
		return h, usageErrorf("train: --target-json must be %s or %s, got %q", finetune.TargetCompact, finetune.TargetSpaced, target)
	}
	if !slices.Contains(finetune.Precisions(), c.String("precision")) {
		return h, usageErrorf("train: --precision must be one of %s, got %q", strings.Join(finetune.Precisions(), ", "), c.String("precision"))
	}
	if c.Float64("learning-rate") <= 0 {
		return h, usageErrorf("train: --learning-rate must be positive")
	}
	var targets []string
	for _, t := range strings.Split(c.String("lora-target"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return h, usageErrorf("train: --lora-target names no module")
	}
	return finetune.Hyperparameters{
		LoRARank: c.Int("lora-rank"), LoRAAlpha: c.Int("lora-alpha"), LoRADropout: c.Float64("lora-dropout"),
		TargetModules: targets, LearningRate: c.Float64("learning-rate"), Epochs: c.Int("epochs"), MaxSteps: c.Int("max-steps"),
		BatchSize: c.Int("batch-size"), GradAccum: c.Int("grad-accum"), MaxLength: c.Int("max-length"),
		Seed: c.Int("seed"), Precision: c.String("precision"), Loss: lossSetting(c.String("loss")),
		TargetJSON: target,
	}, nil
}

// jobBar shows a job's progress: its steps, loss and ETA, and the lines
// its log gains.
type jobBar struct {
	c    *cli.Context
	bar  *progressbar.ProgressBar
	tail *logTail
	eta  time.Duration // the trainer's estimate (train_sft.py's eta_s)
}

func newJobBar(c *cli.Context) *jobBar { return &jobBar{c: c} }

func (j *jobBar) show(st finetune.State) {
	if j.bar == nil {
		j.bar = newProgress(j.c, -1, "train", "steps")
	}
	if j.tail == nil && st.LogPath != "" {
		j.tail = newLogTail(finetune.Job{Dir: j.c.Path("out")}.Path(st.LogPath))
	}
	if j.tail != nil {
		for _, line := range j.tail.lines() {
			loggerFrom(j.c).Info("trainer", "line", line)
			if p, ok := trainer.ParseProgress(line); ok {
				if s, ok := p.Metrics["eta_s"]; ok {
					j.eta = time.Duration(s * float64(time.Second)).Round(time.Second)
				}
			}
		}
	}
	if st.TotalSteps > 0 {
		j.bar.ChangeMax64(int64(st.TotalSteps))
		j.bar.Set(st.Step)
	}
	desc := fmt.Sprintf("train %s: %s", st.ID, st.Status)
	if st.Loss != 0 {
		desc += fmt.Sprintf(", loss %.4f", st.Loss)
	}
	if st.Status == finetune.StatusRunning && j.eta > 0 {
		desc += ", ETA " + j.eta.String()
	}
	j.bar.Describe(desc)
}

func (j *jobBar) finish() {
	if j.bar != nil {
		j.bar.Finish()
	}
}

// printJob writes a job's state on stdout, and for a succeeded job its
// hand-back (h, which finetune wrote).
func printJob(c *cli.Context, job finetune.Job, st finetune.State, h *judge.Handback) error {
	rows := [][2]any{
		{"job", fmt.Sprintf("%s on %s", st.ID, st.Backend)},
		{"status", string(st.Status)},
		{"base model", job.BaseModel},
	}
	if st.TotalSteps > 0 {
		rows = append(rows, [2]any{"progress", fmt.Sprintf("step %d of %d, loss %.4f", st.Step, st.TotalSteps, st.Loss)})
	}
	if st.Message != "" && st.Status != finetune.StatusFailed { // a failure's message is the error
		rows = append(rows, [2]any{"message", st.Message})
	}
	if st.LogPath != "" {
		rows = append(rows, [2]any{"log", job.Path(st.LogPath)})
	}
	if h != nil {
		for _, r := range [][2]string{{"fine-tuned model", h.FineTunedModel}, {"adapter", h.AdapterDir}, {"model file", h.ModelFile}} {
			if r[1] != "" {
				rows = append(rows, [2]any{r[0], r[1]})
			}
		}
		if len(h.Metrics) > 0 {
			rows = append(rows, [2]any{"metrics", metricsText(h.Metrics)})
		}
		if h.Serve != "" {
			rows = append(rows, [2]any{"serve", h.Serve})
		}
		if h.LlamaCpp != nil {
			rows = append(rows, [2]any{"llama.cpp", h.LlamaCpp.Convert}, [2]any{"", h.LlamaCpp.Serve})
		}
		if ct := h.ChatTemplate; ct != nil {
			text := ct.Status
			if ct.Note != "" {
				text += " (" + ct.Note + ")"
			}
			rows = append(rows, [2]any{"chat template", text})
		}
		rows = append(rows, [2]any{"use", h.Use}, [2]any{"hand-back", filepath.Join(job.Dir, judge.HandbackFile)})
		if err := printCounts(c.App.Writer, rows); err != nil {
			return err
		}
		return chatTemplateError(job, st, *h)
	}
	return printCounts(c.App.Writer, rows)
}

// chatTemplateError is the error of a hand-back whose server would apply
// another chat template than the adapter was trained with, with the
// difference; nil when they match or were not compared.
func chatTemplateError(job finetune.Job, st finetune.State, h judge.Handback) error {
	if h.ChatTemplate == nil || h.ChatTemplate.Status != judge.ChatTemplatesDiffer {
		return nil
	}
	_, err := trainer.CheckChatTemplates(job.Path(st.Result.AdapterDir), job.BaseGGUF)
	if err == nil {
		err = errors.New("the chat templates differed when the job ended")
	}
	return fmt.Errorf("train: the adapter cannot be served as it was trained: %w (model.json records both; bench and --judge-from refuse it without --allow-template-mismatch)", err)
}

func metricsText(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+strconv.FormatFloat(m[k], 'g', 4, 64))
	}
	return strings.Join(parts, ", ")
}

// printExport writes the export summary on stdout.
func printExport(c *cli.Context, s finetune.ExportSummary, out string) error {
	split := func(x finetune.SplitSummary) string {
		if x.Examples == 0 {
			return "none"
		}
		return fmt.Sprintf("%d examples (%d sufficient, %d insufficient); tokens p50 %d, p90 %d, p99 %d, max %d; %d over %d",
			x.Examples, x.Sufficient, x.Insufficient, x.TokensP50, x.TokensP90, x.TokensP99, x.TokensMax, x.OverMaxLength, s.MaxLength)
	}
	return printCounts(c.App.Writer, [][2]any{
		{"exported", filepath.Join(out, finetune.DataDir)},
		{"train", split(s.Train)},
		{"val", split(s.Val)},
		{"formats", "OpenAI chat JSONL, ShareGPT + dataset_info.json, parquet messages"},
		{"template", s.Files.TemplateHash},
		{"data hash", s.Files.DataHash},
	})
}

// trainJobAction is the action of a subcommand that applies op (the
// backend's Status or Cancel) to the job recorded in its DIR argument,
// records the state op returns and prints it.
func trainJobAction(op func(b finetune.Backend, ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		rec, b, err := recordedJob(c)
		if err != nil {
			return err
		}
		st, err := op(b, c.Context, rec.Job, rec.State)
		if err != nil {
			return err
		}
		if err := finetune.SaveRecord(rec.Job.Dir, finetune.Record{Job: rec.Job, State: st}); err != nil {
			return err
		}
		if c.Command.Name == "cancel" {
			if rec.State.Status.Terminal() {
				fmt.Fprintf(c.App.Writer, "nothing to cancel: the job %s had ended (%s)\n", rec.State.ID, rec.State.Status)
			} else {
				fmt.Fprintf(c.App.Writer, "cancelled the job %s (it was %s)\n", rec.State.ID, rec.State.Status)
			}
		}
		h, err := finetune.HandBack(rec.Job, st)
		if err != nil {
			return err
		}
		return printJob(c, rec.Job, st, h)
	}
}

func recordedJob(c *cli.Context) (finetune.Record, finetune.Backend, error) {
	if err := rejectFlagsAfterArgs(c); err != nil {
		return finetune.Record{}, nil, err
	}
	if c.NArg() != 1 {
		return finetune.Record{}, nil, usageErrorf("train %s: want one argument, the job DIR", c.Command.Name)
	}
	rec, err := finetune.LoadRecord(c.Args().First())
	if errors.Is(err, finetune.ErrNoJob) {
		return rec, nil, usageErrorf("train %s: %w", c.Command.Name, err)
	}
	if err != nil {
		return rec, nil, err
	}
	b, err := newBackend(c, rec.State.Backend)
	return rec, b, err
}

// logTail hands out the lines appended to a log file since the last call.
type logTail struct {
	path   string
	offset int64
	rest   string
}

func newLogTail(path string) *logTail { return &logTail{path: path} }

func (t *logTail) lines() []string {
	if t.path == "" {
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, 0); err != nil {
		return nil
	}
	buf := make([]byte, 1<<16)
	var out []string
	for {
		n, err := f.Read(buf)
		t.offset += int64(n)
		t.rest += string(buf[:n])
		if err != nil || n == 0 {
			break
		}
	}
	for {
		i := strings.IndexByte(t.rest, '\n')
		if i < 0 {
			break
		}
		out = append(out, strings.TrimRight(t.rest[:i], "\r"))
		t.rest = t.rest[i+1:]
	}
	return out
}

// lossSetting is Hyperparameters.Loss for --loss: empty for the default,
// so that job.json stays as it was.
func lossSetting(loss string) string {
	if loss == finetune.LossCompletion {
		return ""
	}
	return loss
}
