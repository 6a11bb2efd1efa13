//go:build fakes

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/llm/llmtest"
)

// fakeCommands are the commands of a build with the fakes tag (go build
// -tags fakes ./cmd/distill): test servers that the release binary leaves
// out, with the test-only packages behind them.
func fakeCommands() []*cli.Command {
	return []*cli.Command{fakeLLMCommand()}
}

// fakeLLMCommand serves the fault-injecting OpenAI-compatible test server on
// loopback until interrupted, so that rollouts (and label and bench) can be
// tried against latency and failures without a model. It is hidden from
// --help: a tool for testing distill, not part of the pipeline.
func fakeLLMCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:   "fake-llm",
		Usage:  "serve a fault-injecting OpenAI-compatible server on loopback (for tests and benchmarks)",
		Hidden: true,
		Description: `Serves /v1/chat/completions and /v1/embeddings on a loopback port and prints its
base URL. Chat requests with a JSON schema get a minimal schema-valid answer; others
get "OK". Faults are drawn per request from the seeded rates. It also serves /v1/files
and /v1/batches (distill label --batch): a batch ends after --batch-polls polls, and
--batch-expire makes the first one expire with that share of its requests answered.
Runs until interrupted.`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "latency", Usage: "delay of every answer"},
			&cli.IntFlag{Name: "batch-polls", Value: 1, Usage: "polls a batch answers in_progress before it ends"},
			&cli.Float64Flag{Name: "batch-expire", Value: -1, Usage: "expire the first batch with this share (0 to 1) of its requests answered", DefaultText: "off"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the fault draws"},
			&cli.Float64Flag{Name: "rate-limited", Usage: "share of requests answered 429 with Retry-After"},
			&cli.DurationFlag{Name: "retry-after", Usage: "the wait a 429 asks for (whole seconds; default 1s)"},
			&cli.Float64Flag{Name: "server-error", Usage: "share of requests answered 500"},
			&cli.Float64Flag{Name: "unavailable", Usage: "share of requests answered 503"},
			&cli.Float64Flag{Name: "malformed", Usage: "share of requests answered with malformed JSON"},
			&cli.Float64Flag{Name: "truncated", Usage: "share of requests whose body is cut short"},
			&cli.Float64Flag{Name: "hang", Usage: "share of requests never answered (until the client gives up)"},
			&cli.BoolFlag{Name: "no-json-schema", Usage: "refuse response_format json_schema with 400, as some servers do"},
			&cli.StringFlag{Name: "api-key", Usage: "require this bearer key (401 otherwise)"},
		},
		Action: func(c *cli.Context) error {
			opts := llmtest.Options{
				Latency: c.Duration("latency"), Seed: c.Uint64("seed"), RetryAfter: c.Duration("retry-after"),
				RateLimited: c.Float64("rate-limited"), ServerError: c.Float64("server-error"),
				Unavailable: c.Float64("unavailable"), Malformed: c.Float64("malformed"),
				Truncated: c.Float64("truncated"), Hang: c.Float64("hang"),
				NoJSONSchema: c.Bool("no-json-schema"), APIKey: c.String("api-key"),
				BatchPolls: c.Int("batch-polls"),
			}
			if e := c.Float64("batch-expire"); c.IsSet("batch-expire") {
				if e < 0 || e > 1 {
					return usageErrorf("fake-llm: --batch-expire must be between 0 and 1")
				}
				opts.BatchScript = []llmtest.BatchOutcome{{Status: "expired", Complete: e}}
			}
			sum := opts.RateLimited + opts.ServerError + opts.Unavailable + opts.Malformed + opts.Truncated + opts.Hang
			if sum < 0 || sum > 1 {
				return usageErrorf("fake-llm: fault rates add up to %g, want 0 to 1", sum)
			}
			srv := llmtest.NewServer(opts)
			defer srv.Close()
			if _, err := fmt.Fprintln(c.App.Writer, srv.URL()); err != nil {
				return err
			}
			loggerFrom(c).Info("fake OpenAI-compatible server running; interrupt to stop", "base_url", srv.URL())
			<-c.Context.Done()
			counts := srv.Counts()
			loggerFrom(c).Info("fake server stopped", "counts", fmt.Sprintf("%+v", counts))
			return nil
		},
	})
}
