package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/llm"
)

// defaultBaseURL is where a model goes without a --*-base-url.
const defaultBaseURL = "https://api.openai.com/v1"

// modelFlags are the flags of the shared model client (cache, limits,
// prices, timeout), for every command that calls models.
func modelFlags() []cli.Flag {
	return []cli.Flag{
		&cli.PathFlag{Name: "cache", Usage: "keep model responses in `DIR` and replay them on reruns", EnvVars: []string{"DISTILL_CACHE"}},
		&cli.IntFlag{Name: "max-concurrent", Usage: "most requests in flight per model role (0: no limit)"},
		&cli.Float64Flag{Name: "requests-per-minute", Usage: "request rate limit per model role (0: none)"},
		&cli.Float64Flag{Name: "tokens-per-minute", Usage: "token rate limit per model role (0: none)"},
		&cli.StringSliceFlag{Name: "price", Usage: "cost of a model, `MODEL=INPUT:OUTPUT` in USD per million tokens (repeatable; known OpenAI models are priced already)"},
		&cli.DurationFlag{Name: "request-timeout", Value: llm.DefaultTimeout, Usage: "time limit of one model request (retried)"},
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
func newModelClient(c *cli.Context, role, model, baseURL string) (llm.Endpoint, error) {
	urls := splitURLs(baseURL)
	clients := make([]*llm.Client, len(urls))
	for i, u := range urls {
		client, err := llm.New(llm.Config{BaseURL: u, Model: model, APIKey: llm.KeyFromEnv(role), Role: role, Timeout: c.Duration("request-timeout")},
			llm.WithLogger(loggerFrom(c)))
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

// newModelStack wraps a role's client in the shared stack (limits,
// retries, the cache of --cache, accounting at prices); its Meter gives the
// role's usage and cost.
func newModelStack(c *cli.Context, client llm.Endpoint, prices map[string]llm.Price) (*llm.Meter, error) {
	meter, err := llm.Stack(client, llm.StackOptions{
		CacheDir: c.Path("cache"),
		Prices:   prices,
		Limits: llm.LimitOptions{MaxConcurrent: c.Int("max-concurrent"),
			RequestsPerMinute: c.Float64("requests-per-minute"), TokensPerMinute: c.Float64("tokens-per-minute")},
		Logger: loggerFrom(c),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s model: %w", c.Command.Name, client.Role(), err)
	}
	return meter, nil
}

// usageSoFar describes the tokens and cost of the model usage so far for a
// progress bar: ", N tokens, $C", or "" without model usage.
func usageSoFar(usage func() []llm.Stats) string {
	if usage == nil {
		return ""
	}
	var tokens int64
	var cost float64
	for _, s := range usage() {
		tokens += s.PromptTokens + s.CompletionTokens
		cost += s.CostUSD
	}
	return fmt.Sprintf(", %d tokens, $%.4f", tokens, cost)
}
