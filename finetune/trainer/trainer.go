package trainer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune"
)

// Kind is a LoRA trainer.
type Kind string

// The trainers a plan can run.
const (
	// TRL runs train_sft.py (TRL's SFTTrainer with a PEFT LoraConfig) on
	// the job's parquet files.
	TRL Kind = "trl"
	// LLaMAFactory runs `llamafactory-cli train` on the job's ShareGPT
	// files, through their dataset_info.json.
	LLaMAFactory Kind = "llamafactory"
)

// The files of a job directory that a plan writes or its script leaves.
const (
	// ScriptFile is Plan.Script as the local backend writes it.
	ScriptFile = "train.sh"
	// LogFile is where backends send the script's output.
	LogFile = "train.log"
	// ExitFile holds the trainer's exit status once it has ended (see
	// Plan.Script).
	ExitFile = "train.exit"
	// AdapterDir is where the trainer saves the LoRA adapter.
	AdapterDir = "adapter"
	// TRLScriptFile and TRLConfigFile are the TRL trainer and its
	// configuration; LLaMAFactoryConfigFile is LLaMA-Factory's.
	TRLScriptFile          = "train_sft.py"
	TRLConfigFile          = "train_config.json"
	LLaMAFactoryConfigFile = "train.yaml"
)

// Options choose and configure the trainer.
type Options struct {
	// Kind is the trainer (default TRL).
	Kind Kind
	// Python is the Python interpreter that runs train_sft.py (default
	// "python3").
	Python string
	// Template is LLaMA-Factory's chat template (default "llama3", for the
	// method's Llama-3 judge).
	Template string
	// LoggingSteps is how many optimiser steps go between two logged
	// losses (default 10).
	LoggingSteps int
	// MaxEvalExamples, when positive, evaluates on the first that many
	// validation examples only (TRL trainer; evaluation is a forward pass
	// per example, slow on a CPU).
	MaxEvalExamples int
	// Command, when set, replaces the trainer's command line: the
	// configuration of Kind is still written, and the command finds it
	// through the environment (DISTILL_TRAIN_CONFIG, DISTILL_OUTPUT_DIR).
	// For unusual set-ups (a launcher such as accelerate or torchrun, a
	// container) and for stand-in trainers in tests.
	Command []string
	// Env is more environment for the trainer, as KEY=VALUE (for example
	// CUDA_VISIBLE_DEVICES=0 or HF_HOME=/scratch/hf).
	Env []string
}

func (o Options) withDefaults() Options {
	if o.Kind == "" {
		o.Kind = TRL
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.Template == "" {
		o.Template = "llama3"
	}
	if o.LoggingSteps <= 0 {
		o.LoggingSteps = 10
	}
	return o
}

// Plan is a trainer set up in a job's directory: what to run there, with
// the job directory as working directory. Paths are relative to it.
type Plan struct {
	Kind Kind
	// Config is the trainer's configuration file.
	Config string
	// Command is the trainer's command line.
	Command []string
	// Env is the environment the command needs besides the inherited one,
	// as KEY=VALUE.
	Env []string
	// OutputDir is where the adapter will be.
	OutputDir string
}

// Prepare checks the job, writes the trainer's configuration (and for TRL
// the script) into job.Dir, and returns the plan that runs it.
func Prepare(job finetune.Job, opts Options) (Plan, error) {
	opts = opts.withDefaults()
	if err := check(job); err != nil {
		return Plan{}, err
	}
	var files map[string][]byte
	plan := Plan{Kind: opts.Kind, OutputDir: AdapterDir}
	switch opts.Kind {
	case TRL:
		if err := needFiles(job, job.Files.TrainParquet, job.Files.ValParquet, "train_parquet"); err != nil {
			return Plan{}, err
		}
		cfg, err := trlConfig(job, opts)
		if err != nil {
			return Plan{}, err
		}
		plan.Config = TRLConfigFile
		plan.Command = []string{opts.Python, TRLScriptFile, TRLConfigFile}
		files = map[string][]byte{TRLScriptFile: trainSFT, TRLConfigFile: cfg}
	case LLaMAFactory:
		if err := needFiles(job, job.Files.DatasetInfo, "", "dataset_info"); err != nil {
			return Plan{}, err
		}
		plan.Config = LLaMAFactoryConfigFile
		plan.Command = []string{"llamafactory-cli", "train", LLaMAFactoryConfigFile}
		files = map[string][]byte{LLaMAFactoryConfigFile: llamaFactoryYAML(job, opts)}
	default:
		return Plan{}, fmt.Errorf("trainer %q: want %q or %q", opts.Kind, TRL, LLaMAFactory)
	}
	if len(opts.Command) > 0 {
		plan.Command = append([]string(nil), opts.Command...)
	}
	plan.Env = []string{
		"PYTHONUNBUFFERED=1", // progress lines reach the log as they are printed
		"DISTILL_TRAIN_CONFIG=" + plan.Config,
		"DISTILL_OUTPUT_DIR=" + plan.OutputDir,
	}
	for _, kv := range opts.Env {
		if !envRE.MatchString(kv) {
			return Plan{}, fmt.Errorf("trainer environment %q: want KEY=VALUE", kv)
		}
		plan.Env = append(plan.Env, kv)
	}
	for name, b := range files {
		if err := data.WriteFileAtomic(filepath.Join(job.Dir, name), b); err != nil {
			return Plan{}, err
		}
	}
	return plan, nil
}

var envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// check rejects a job that no trainer could run.
func check(job finetune.Job) error {
	if job.Dir == "" {
		return errors.New("job has no directory")
	}
	if fi, err := os.Stat(job.Dir); err != nil {
		return fmt.Errorf("job directory: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("job directory %s: not a directory", job.Dir)
	}
	if job.BaseModel == "" {
		return errors.New("job has no base model")
	}
	h := job.Hyper
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"lora_rank", h.LoRARank > 0},
		{"lora_alpha", h.LoRAAlpha > 0},
		{"lora_dropout", h.LoRADropout >= 0 && h.LoRADropout < 1},
		{"learning_rate", h.LearningRate > 0 && !math.IsInf(h.LearningRate, 0)},
		{"epochs", h.Epochs > 0},
		{"batch_size", h.BatchSize > 0},
		{"gradient_accumulation", h.GradAccum > 0},
		{"max_length", h.MaxLength > 0},
	} {
		if !c.ok {
			return fmt.Errorf("hyper-parameter %s out of range (%+v)", c.name, h)
		}
	}
	for _, m := range h.TargetModules {
		if !moduleRE.MatchString(m) {
			return fmt.Errorf("target module %q: want a module name", m)
		}
	}
	return nil
}

var moduleRE = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)

// needFiles checks that the job's required file (named what for the
// error) and optional file exist.
func needFiles(job finetune.Job, required, optional, what string) error {
	if required == "" {
		return fmt.Errorf("job has no %s file: export the data first", what)
	}
	for _, p := range []string{required, optional} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(job.Path(p)); err != nil {
			return fmt.Errorf("job data: %w", err)
		}
	}
	return nil
}

// Script returns a POSIX sh script that runs the plan: the header lines
// (#SBATCH directives, a cd), the exports of Env, the command, and then
// the recording of the command's exit status in ExitFile, written to a
// temporary name and renamed, so that a reader sees it whole or not at
// all. A script killed by a signal (a cancelled job) leaves no ExitFile.
// It runs in the job directory.
func (p Plan) Script(header ...string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	b.WriteString("# Written by distill: runs the trainer in the job directory, then records\n")
	b.WriteString("# its exit status in " + ExitFile + ".\n")
	for _, kv := range p.Env {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString("export " + k + "=" + Quote(v) + "\n")
	}
	b.WriteString("rm -f " + ExitFile + "\n")
	words := make([]string, len(p.Command))
	for i, w := range p.Command {
		words[i] = Quote(w)
	}
	b.WriteString(strings.Join(words, " ") + "\n")
	b.WriteString("status=$?\n")
	b.WriteString(`echo "distill: trainer exited with status $status"` + "\n")
	fmt.Fprintf(&b, "echo \"$status\" > %s.tmp && mv -f %s.tmp %s\n", ExitFile, ExitFile, ExitFile)
	b.WriteString(`exit "$status"` + "\n")
	return b.String()
}

// Quote quotes s as one word for sh.
func Quote(s string) string {
	if s != "" && safeRE.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

var safeRE = regexp.MustCompile(`^[A-Za-z0-9_./:,+@%-]+$`)

// ReadExit reads the exit status that the plan's script recorded in
// dir/ExitFile; ok is false while there is none.
func ReadExit(dir string) (code int, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ExitFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	code, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false, fmt.Errorf("exit status in %s: %w", filepath.Join(dir, ExitFile), err)
	}
	return code, true, nil
}
