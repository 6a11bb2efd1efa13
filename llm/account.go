package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input_per_mtok"`
	Output float64 `json:"output_per_mtok"`
}

// DefaultPrices returns OpenAI's published standard-tier prices (USD per
// 1M tokens, as listed on openai.com/api/pricing in 2025) for the models
// this toolkit is likely to use as teacher or roles. Keys are model names;
// a dated snapshot such as gpt-4o-mini-2024-07-18 takes the price of its
// longest listed prefix. Models not listed (self-hosted ones) cost zero.
// The map is a fresh copy the caller may change.
func DefaultPrices() map[string]Price {
	return map[string]Price{
		"gpt-4o":                 {Input: 2.50, Output: 10.00},
		"gpt-4o-mini":            {Input: 0.15, Output: 0.60},
		"gpt-4.1":                {Input: 2.00, Output: 8.00},
		"gpt-4.1-mini":           {Input: 0.40, Output: 1.60},
		"gpt-4.1-nano":           {Input: 0.10, Output: 0.40},
		"gpt-5":                  {Input: 1.25, Output: 10.00},
		"gpt-5-mini":             {Input: 0.25, Output: 2.00},
		"gpt-5-nano":             {Input: 0.05, Output: 0.40},
		"o1":                     {Input: 15.00, Output: 60.00},
		"o1-mini":                {Input: 1.10, Output: 4.40},
		"o3":                     {Input: 2.00, Output: 8.00},
		"o3-mini":                {Input: 1.10, Output: 4.40},
		"o4-mini":                {Input: 1.10, Output: 4.40},
		"gpt-3.5-turbo":          {Input: 0.50, Output: 1.50},
		"text-embedding-3-small": {Input: 0.02},
		"text-embedding-3-large": {Input: 0.13},
		"text-embedding-ada-002": {Input: 0.10},
	}
}

// PriceOf returns the price of model in prices: an exact entry, else the
// longest key that is a prefix of model followed by "-" (a dated
// snapshot). It reports false when the model has no price.
func PriceOf(prices map[string]Price, model string) (Price, bool) { return priceOf(prices, model) }

// priceOf finds the price of model: an exact entry, else the longest key
// that is a prefix of model followed by "-" (a dated snapshot).
func priceOf(prices map[string]Price, model string) (Price, bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	best := ""
	for k := range prices {
		if len(k) > len(best) && strings.HasPrefix(model, k+"-") {
			best = k
		}
	}
	if best == "" {
		return Price{}, false
	}
	return prices[best], true
}

// Cost returns the USD cost of usage under p.
func (p Price) Cost(u Usage) float64 {
	return (p.Input*float64(u.PromptTokens) + p.Output*float64(u.CompletionTokens)) / 1e6
}

// AccountOptions configures Account.
type AccountOptions struct {
	// Role and Model label the Stats.
	Role  string
	Model string
	// Prices replaces DefaultPrices (nil keeps them). The price is looked up
	// by the model the server says answered, else by Model.
	Prices map[string]Price
}

// Stats is the usage of one role, as recorded in run.json.
type Stats struct {
	Role  string `json:"role"`
	Model string `json:"model"`
	// Requests counts calls made through the Meter, cache hits included.
	Requests int64 `json:"requests"`
	// CachedHits counts calls answered by a Cache.
	CachedHits int64 `json:"cached_hits"`
	// Retries counts extra attempts made by a Retry inside the Meter.
	Retries int64 `json:"retries"`
	// Failures counts calls that returned an error.
	Failures int64 `json:"failures"`
	// AuthFailures counts the failures that were refused credentials.
	AuthFailures int64 `json:"auth_failures"`
	// PromptTokens and CompletionTokens count tokens the server billed;
	// cache hits are not included.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CostUSD is the cost of those tokens at the price table.
	CostUSD float64 `json:"cost_usd"`
	// Unpriced counts answered calls whose model had no price (cost zero).
	Unpriced int64 `json:"unpriced"`
}

// Meter is a Chatter that counts the usage of the Chatter it wraps; see
// Account. Safe for concurrent use.
type Meter struct {
	next   Chatter
	prices map[string]Price

	mu sync.Mutex
	s  Stats
}

// Account returns a Meter over next. Put it outermost (see the package
// documentation) so that it sees cache hits and the retries of an inner
// Retry.
func Account(next Chatter, opts AccountOptions) *Meter {
	prices := opts.Prices
	if prices == nil {
		prices = DefaultPrices()
	} else {
		prices = maps.Clone(prices)
	}
	return &Meter{next: next, prices: prices, s: Stats{Role: opts.Role, Model: opts.Model}}
}

// Chat calls the wrapped Chatter and records the call.
func (m *Meter) Chat(ctx context.Context, req Request) (Response, error) {
	var retries atomic.Int64
	resp, err := m.next.Chat(withRetryCounter(ctx, &retries), req)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.s.Requests++
	m.s.Retries += retries.Load()
	switch {
	case err != nil:
		m.s.Failures++
		if errors.Is(err, ErrAuth) {
			m.s.AuthFailures++
		}
	case resp.Cached:
		m.s.CachedHits++
	default:
		m.s.PromptTokens += int64(resp.Usage.PromptTokens)
		m.s.CompletionTokens += int64(resp.Usage.CompletionTokens)
		model := resp.Model
		if model == "" {
			model = m.s.Model
		}
		p, ok := priceOf(m.prices, model)
		if !ok && model != m.s.Model {
			p, ok = priceOf(m.prices, m.s.Model)
		}
		if ok {
			m.s.CostUSD += p.Cost(resp.Usage)
		} else {
			m.s.Unpriced++
		}
	}
	return resp, err
}

// Snapshot returns the totals so far.
func (m *Meter) Snapshot() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// ParsePrice reads a price override written "MODEL=INPUT:OUTPUT", in USD per
// million prompt and completion tokens (for example "gpt-4o-mini=0.15:0.6"; not a comma, which flag lists split on).
func ParsePrice(s string) (model string, p Price, err error) {
	model, rest, ok := strings.Cut(s, "=")
	model = strings.TrimSpace(model)
	in, out, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || model == "" {
		return "", Price{}, fmt.Errorf("price %q: want MODEL=INPUT:OUTPUT (USD per million tokens)", s)
	}
	if p.Input, err = strconv.ParseFloat(strings.TrimSpace(in), 64); err != nil || p.Input < 0 {
		return "", Price{}, fmt.Errorf("price %q: input price %q is not a non-negative number", s, in)
	}
	if p.Output, err = strconv.ParseFloat(strings.TrimSpace(out), 64); err != nil || p.Output < 0 {
		return "", Price{}, fmt.Errorf("price %q: output price %q is not a non-negative number", s, out)
	}
	return model, p, nil
}

// AddStats adds the usage in b to a, role and model by role and model
// (entries of b that a lacks are appended), and returns a.
func AddStats(a, b []Stats) []Stats {
	for _, s := range b {
		i := slices.IndexFunc(a, func(x Stats) bool { return x.Role == s.Role && x.Model == s.Model })
		if i < 0 {
			a = append(a, s)
			continue
		}
		x := &a[i]
		x.Requests += s.Requests
		x.CachedHits += s.CachedHits
		x.Retries += s.Retries
		x.Failures += s.Failures
		x.AuthFailures += s.AuthFailures
		x.PromptTokens += s.PromptTokens
		x.CompletionTokens += s.CompletionTokens
		x.CostUSD += s.CostUSD
		x.Unpriced += s.Unpriced
	}
	return a
}
