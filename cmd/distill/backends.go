package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/builtin"
	ftopenai "github.com/distill-rag/distill/finetune/openai"
	"github.com/distill-rag/distill/rollout/llm"
)

// backendFlags are the flags that configure the fine-tuning backends; the
// status and cancel subcommands take them too, as they drive the backend.
func backendFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "train-base-url", Usage: "fine-tuning API `URL`, with /v1 (--backend openai; default: OpenAI's API); key from DISTILL_TRAIN_API_KEY or OPENAI_API_KEY", EnvVars: []string{"DISTILL_TRAIN_BASE_URL"}},
		&cli.DurationFlag{Name: "request-timeout", Value: llm.DefaultTimeout, Usage: "time limit of one API request (retried)"},
	}
}

// newBackend wires the backend that name names: the one place where
// fine-tuning backends are built.
func newBackend(c *cli.Context, name string) (finetune.Backend, error) {
	switch name {
	case builtin.Name:
		return builtin.Backend{}, nil
	case ftopenai.Name:
		base := c.String("train-base-url")
		if base == "" {
			base = defaultBaseURL
		}
		b, err := ftopenai.New(ftopenai.Config{BaseURL: base, APIKey: llm.KeyFromEnv("train"), Timeout: c.Duration("request-timeout"),
			Retry: llm.RetryOptions{Logger: loggerFrom(c), Role: "train"}})
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		return b, nil
	}
	return nil, usageErrorf("train: backend %q is not available (want %s)", name, strings.Join(backendKinds, ", "))
}
