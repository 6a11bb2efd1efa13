package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout"
	"github.com/distill-rag/distill/rollout/runner"
)

// defaultBaseURL is where a model goes without a --*-base-url, --base-url
// or OPENAI_BASE_URL.
const defaultBaseURL = "https://api.openai.com/v1"

// modelFlags are the flags of the shared model client (cache, limits,
// prices, timeout), for every command that calls models.
func modelFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "base-url", Usage: "server `URL`(s), with /v1, of every model role that gives none of its own (--<role>-base-url)", EnvVars: []string{"OPENAI_BASE_URL"}, DefaultText: "OpenAI's API"},
		&cli.StringFlag{Name: "model", Usage: "model of every llm role that gives none of its own (--<role>-model)", EnvVars: []string{"DISTILL_MODEL", "DISTILL_CHAT_MODEL"}},
		&cli.PathFlag{Name: "cache", Usage: "keep model responses in `DIR` and replay them on reruns", EnvVars: []string{"DISTILL_CACHE"}},
		&cli.IntFlag{Name: "max-concurrent", Usage: "most requests in flight per model role (0: no limit); set it to the server's parallel slots (1 for llama.cpp's Python server) so that requests wait here, not in the server's queue where the --request-timeout clock runs", EnvVars: []string{"DISTILL_MAX_CONCURRENT"}},
		&cli.Float64Flag{Name: "requests-per-minute", Usage: "request rate limit per model role (0: none)"},
		&cli.Float64Flag{Name: "tokens-per-minute", Usage: "token rate limit per model role (0: none)"},
		&cli.StringSliceFlag{Name: "price", Usage: "cost of a model, `MODEL=INPUT:OUTPUT` in USD per million tokens (repeatable; known OpenAI models are priced already)"},
		&cli.StringFlag{Name: "chat-extra", Usage: "`JSON` object whose members go into every chat request, for sampling settings the OpenAI API does not name (scripts/local-models sets {\"repeat_penalty\": 1, \"top_k\": 0, \"min_p\": 0}: llama.cpp's Python server would otherwise change greedy answers)", EnvVars: []string{"DISTILL_CHAT_EXTRA"}},
		&cli.DurationFlag{Name: "request-timeout", Value: llm.DefaultTimeout, Usage: "time limit of one model request (retried)", EnvVars: []string{"DISTILL_REQUEST_TIMEOUT"}},
		&cli.IntFlag{Name: "max-attempts", Value: defaultMaxAttempts, Usage: "attempts of a model request that fails with a retryable error (a timeout, 429, 5xx, no answer), the first included"},
		&cli.DurationFlag{Name: "retry-delay", Value: defaultRetryDelay, Usage: "backoff before the second attempt, doubled for each one after (with jitter; a server's Retry-After wins)"},
	}
}

// The retries of the model flags: llm.RetryOptions' defaults.
const (
	defaultMaxAttempts = 5
	defaultRetryDelay  = 500 * time.Millisecond
)

// stackOptions returns the options of the model stack that the model flags
// configure: the response cache, the limits, the retries and the logger.
// A command without those flags gets llm's defaults.
func stackOptions(c *cli.Context) llm.StackOptions {
	return llm.StackOptions{
		CacheDir: c.Path("cache"),
		Limits: llm.LimitOptions{MaxConcurrent: c.Int("max-concurrent"),
			RequestsPerMinute: c.Float64("requests-per-minute"), TokensPerMinute: c.Float64("tokens-per-minute")},
		Retry:  llm.RetryOptions{MaxAttempts: c.Int("max-attempts"), BaseDelay: c.Duration("retry-delay")},
		Logger: loggerFrom(c),
	}
}

// priceTable returns the default prices with the --price overrides.
func priceTable(c *cli.Context) (map[string]llm.Price, error) {
	prices := llm.DefaultPrices()
	for _, p := range c.StringSlice("price") {
		model, price, err := llm.ParsePrice(p)
		if err != nil {
			return nil, usageErrorf("%s: --price: %w", c.Command.Name, err)
		}
		prices[model] = price
	}
	return prices, nil
}

// newModelClient returns the client of one model role: baseURL (OpenAI's
// API when empty), the key from DISTILL_<ROLE>_API_KEY or OPENAI_API_KEY.
// A comma-separated list of base URLs (replicas of one model) makes a
// pool that spreads the requests over them.
func newModelClient(c *cli.Context, role, model, baseURL string, adjust ...func(*llm.Config)) (llm.Endpoint, error) {
	urls := splitURLs(orSharedBaseURL(c, baseURL))
	clients := make([]*llm.Client, len(urls))
	for i, u := range urls {
		cfg := llm.Config{BaseURL: u, Model: model, APIKey: llm.KeyFromEnv(role), Role: role, Timeout: c.Duration("request-timeout")}
		if extra := c.String("chat-extra"); extra != "" {
			cfg.ChatExtra = json.RawMessage(extra)
		}
		for _, a := range adjust {
			a(&cfg)
		}
		client, err := llm.New(cfg, llm.WithLogger(loggerFrom(c)))
		if err != nil {
			return nil, fmt.Errorf("%s: %s model: %w", c.Command.Name, role, err)
		}
		clients[i] = client
	}
	if len(clients) == 1 {
		return clients[0], nil
	}
	return llm.NewPool(clients...)
}

// contextWindowFlag is the context window of the chat models, for the
// commands that run the loop.
func contextWindowFlag() cli.Flag {
	return &cli.IntFlag{Name: "context-window", Usage: "context window of the chat models, in `TOKENS`: with a model-backed role, the evidence and the extractor's sentences are trimmed to fit, and each state records what was left out (0: no trimming)", EnvVars: []string{"DISTILL_CONTEXT_WINDOW"}}
}

// applyContextWindow sets the loop's token budgets from --context-window
// when a role that reads the evidence or the sentences is model-backed.
func applyContextWindow(c *cli.Context, o *rollout.Options, modelRoles bool) error {
	if !modelRoles {
		return nil
	}
	if err := (rollout.Budgets{Window: c.Int("context-window")}).Apply(o); err != nil {
		return usageErrorf("%s: --context-window: %w", c.Command.Name, err)
	}
	return nil
}

// orSharedBaseURL returns a role's base URL, else the one every role shares:
// --base-url, else OPENAI_BASE_URL (for the commands without --base-url,
// as OpenAI's own clients read it), else "" (OpenAI's API).
func orSharedBaseURL(c *cli.Context, baseURL string) string {
	if baseURL != "" {
		return baseURL
	}
	if u := c.String("base-url"); u != "" {
		return u
	}
	return os.Getenv("OPENAI_BASE_URL")
}

// shareModel gives each of the llm roles named that names no model of its
// own (--<role>-model) the shared --model. A role is llm when its flag (the
// role's name) says so.
func shareModel(c *cli.Context, roles ...string) error {
	model := c.String("model")
	if model == "" {
		return nil
	}
	for _, role := range roles {
		if c.String(role) == "llm" && !c.IsSet(role+"-model") {
			if err := c.Set(role+"-model", model); err != nil {
				return fmt.Errorf("--model for --%s-model: %w", role, err)
			}
		}
	}
	return nil
}

// splitURLs splits a comma-separated list of base URLs; an empty list is
// OpenAI's API.
func splitURLs(list string) []string {
	var urls []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		urls = []string{defaultBaseURL}
	}
	return urls
}

// newDialer returns the model stacks of a command's roles: each role's
// client (newModelClient) in the shared stack that the model flags
// configure, accounted at prices.
func newDialer(c *cli.Context, prices map[string]llm.Price) *llm.Dialer {
	opts := stackOptions(c)
	opts.Prices = prices
	return &llm.Dialer{
		Client: func(role, model, baseURL string) (llm.Endpoint, error) {
			return newModelClient(c, role, model, baseURL)
		},
		Stack: opts,
	}
}

// usageSoFar describes the tokens and cost of the model usage so far for a
// progress bar: ", N tokens, $C", or "" without model usage.
func usageSoFar(usage func() []llm.Stats) string {
	if usage == nil {
		return ""
	}
	tokens, cost := usageText(usage())
	return ", " + tokens + " tokens, " + cost
}

// usageText returns the tokens of usage and their cost: "$C", or
// "unknown" with the models that have no price (their tokens are not in a
// cost, and a cost of $0 would mislead).
func usageText(usage []llm.Stats) (tokens, cost string) {
	var n int64
	var usd float64
	var unpriced []string
	for _, s := range usage {
		n += s.PromptTokens + s.CompletionTokens
		usd += s.CostUSD
		if s.Unpriced > 0 && !slices.Contains(unpriced, s.Model) {
			unpriced = append(unpriced, s.Model)
		}
	}
	cost = fmt.Sprintf("$%.4f", usd)
	if len(unpriced) > 0 {
		cost = fmt.Sprintf("unknown (no price for %s: give one with --price MODEL=INPUT:OUTPUT)", strings.Join(unpriced, ", "))
		if usd > 0 {
			cost = fmt.Sprintf("$%.4f and %s", usd, cost)
		}
	}
	return fmt.Sprint(n), cost
}

// failuresError says how to go on from a run that stopped because its
// units failed in a row, or whose every unit failed: most often a model
// server that cannot be reached or refuses every request, named in err.
// Other errors pass.
func failuresError(command string, err error) error {
	if !errors.Is(err, runner.ErrFailing) && !errors.Is(err, runner.ErrAllFailed) {
		return err
	}
	return fmt.Errorf("%s: %w\n(check the server named above: its URL comes from --<role>-base-url, --base-url or OPENAI_BASE_URL, its key from DISTILL_<ROLE>_API_KEY or OPENAI_API_KEY; "+
		"what was done is kept, and --resume goes on, doing the failures again)", command, err)
}

// fileExists says whether path names something that can be stat'ed.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
