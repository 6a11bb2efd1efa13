package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/builtin"
	"github.com/distill-rag/distill/finetune/local"
	ftopenai "github.com/distill-rag/distill/finetune/openai"
	"github.com/distill-rag/distill/finetune/slurm"
	"github.com/distill-rag/distill/finetune/trainer"
	"github.com/distill-rag/distill/llm"
)

// backendFlags are the flags that configure the fine-tuning backends; the
// status and cancel subcommands take them too, as they drive the backend.
func backendFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "train-base-url", Usage: "fine-tuning API `URL`, with /v1 (--backend openai; default: OpenAI's API); key from DISTILL_TRAIN_API_KEY or OPENAI_API_KEY", EnvVars: []string{"DISTILL_TRAIN_BASE_URL"}},
		&cli.DurationFlag{Name: "request-timeout", Value: llm.DefaultTimeout, Usage: "time limit of one API request (retried)"},
		&cli.StringFlag{Name: "trainer", Value: string(trainer.TRL), Usage: "trainer of --backend local and slurm: trl (the TRL/PEFT script kept in distill) or llamafactory"},
		&cli.StringFlag{Name: "python", Value: "python3", Usage: "Python of the trl trainer", EnvVars: []string{"DISTILL_TRAIN_PYTHON"}},
		&cli.IntFlag{Name: "logging-steps", Value: 10, Usage: "optimiser steps between two logged losses (local, slurm)"},
		&cli.IntFlag{Name: "max-eval-examples", Usage: "evaluate on the first `N` validation examples only (trl trainer; 0: all)"},
		&cli.StringFlag{Name: "template", Value: "llama3", Usage: "LLaMA-Factory chat template (--trainer llamafactory)"},
		&cli.StringFlag{Name: "trainer-command", Usage: "run this command instead of the trainer (it finds its config in $DISTILL_TRAIN_CONFIG and writes the adapter to $DISTILL_OUTPUT_DIR)"},
		&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "time a cancelled local trainer gets between SIGTERM and SIGKILL"},
		&cli.StringFlag{Name: "partition", Usage: "Slurm partition"},
		&cli.StringFlag{Name: "account", Usage: "Slurm account"},
		&cli.IntFlag{Name: "gpus", Value: 1, Usage: "GPUs of the Slurm job"},
		&cli.StringFlag{Name: "time", Usage: "Slurm time limit (e.g. 04:00:00)"},
		&cli.IntFlag{Name: "cpus", Usage: "CPUs per task of the Slurm job"},
		&cli.StringFlag{Name: "mem", Usage: "memory of the Slurm job (e.g. 64G)"},
		&cli.StringSliceFlag{Name: "sbatch-line", Usage: "extra #SBATCH `LINE` (repeatable, e.g. --sbatch-line '--qos=high')"},
	}
}

// trainerOptions reads the trainer flags shared by local and slurm.
func trainerOptions(c *cli.Context) (trainer.Options, error) {
	kind := trainer.Kind(c.String("trainer"))
	if kind != trainer.TRL && kind != trainer.LLaMAFactory {
		return trainer.Options{}, usageErrorf("train: unknown --trainer %q (want trl or llamafactory)", kind)
	}
	switch {
	case c.Int("logging-steps") < 1:
		return trainer.Options{}, usageErrorf("train: --logging-steps must be at least 1")
	case c.Int("max-eval-examples") < 0:
		return trainer.Options{}, usageErrorf("train: --max-eval-examples must not be negative")
	case c.Int("max-eval-examples") > 0 && kind != trainer.TRL:
		return trainer.Options{}, usageErrorf("train: --max-eval-examples is for --trainer trl")
	}
	python := c.String("python")
	if strings.ContainsRune(python, filepath.Separator) && !filepath.IsAbs(python) {
		// A path relative to here: the trainer runs in the job directory.
		abs, err := filepath.Abs(python)
		if err != nil {
			return trainer.Options{}, err
		}
		python = abs
	}
	o := trainer.Options{Kind: kind, Python: python, Template: c.String("template"),
		LoggingSteps: c.Int("logging-steps"), MaxEvalExamples: c.Int("max-eval-examples")}
	if cmd := c.String("trainer-command"); cmd != "" {
		o.Command = []string{"sh", "-c", cmd}
	}
	return o, nil
}

// newBackend wires the backend that name names: the one place where
// fine-tuning backends are built.
func newBackend(c *cli.Context, name string) (finetune.Backend, error) {
	switch name {
	case builtin.Name:
		return builtin.Backend{}, nil
	case ftopenai.Name:
		base := orSharedBaseURL(c, c.String("train-base-url"))
		if base == "" {
			base = defaultBaseURL
		}
		b, err := ftopenai.New(ftopenai.Config{BaseURL: base, APIKey: llm.KeyFromEnv("train"), Timeout: c.Duration("request-timeout"),
			Retry: llm.RetryOptions{Logger: loggerFrom(c), Role: "train"}})
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		return b, nil
	case local.Name:
		to, err := trainerOptions(c)
		if err != nil {
			return nil, err
		}
		return local.New(local.Options{Trainer: to, Grace: c.Duration("grace")}), nil
	case slurm.Name:
		to, err := trainerOptions(c)
		if err != nil {
			return nil, err
		}
		return slurm.New(slurm.Options{Trainer: to, Partition: c.String("partition"), Account: c.String("account"),
			GPUs: c.Int("gpus"), Time: c.String("time"), CPUs: c.Int("cpus"), Mem: c.String("mem"),
			ExtraSBATCH: c.StringSlice("sbatch-line")}), nil
	}
	return nil, usageErrorf("train: backend %q is not available (want %s)", name, strings.Join(backendKinds, ", "))
}
