package llm

import "log/slog"

// StackOptions configures Stack.
type StackOptions struct {
	// Retry configures the retries; its Role defaults to the client's.
	Retry RetryOptions
	// Limiter, when set, is shared with other stacks (roles on the same
	// server); otherwise Limits makes one for this stack alone.
	Limiter *Limiter
	Limits  LimitOptions
	// CacheDir, when set, turns on the on-disk response cache.
	CacheDir string
	// Prices replaces DefaultPrices for accounting.
	Prices map[string]Price
	// Logger is used by the retries and the cache when theirs are unset.
	Logger *slog.Logger
}

// Stack wraps c in the recommended order,
//
//	Account(Cache(Retry(Limit(c))))
//
// and returns the outer Meter, whose Snapshot gives the role's usage. See
// the package documentation for why this order.
func Stack(c Endpoint, opts StackOptions) (*Meter, error) {
	inner, err := StackInner(c, opts)
	if err != nil {
		return nil, err
	}
	return Account(inner, AccountOptions{Role: c.Role(), Model: c.Model(), Prices: opts.Prices}), nil
}

// StackInner returns the stack without its accounting,
// Cache(Retry(Limit(c))), for callers that account several uses of one
// client apart (the variants of a benchmark share one cache and one set of
// limits, each with its own Meter: Account(inner, ...)).
func StackInner(c Endpoint, opts StackOptions) (Chatter, error) {
	lim, ro := opts.limitAndRetry(c)
	var ch Chatter = Retry(lim.Chatter(c), ro)
	if opts.CacheDir != "" {
		var err error
		ch, err = Cache(ch, CacheOptions{Dir: opts.CacheDir, BaseURL: c.BaseURL(), Model: c.Model(), Extra: c.ChatExtra(), Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
	}
	return ch, nil
}

// StackEmbedder wraps c's embeddings in Retry(Limit(c)) with the same
// options (the cache and accounting are for chat only).
func StackEmbedder(c Endpoint, opts StackOptions) Embedder {
	lim, ro := opts.limitAndRetry(c)
	return RetryEmbedder(lim.Embedder(c), ro)
}

// limitAndRetry returns the limiter and retry options of a stack around c,
// with the client's role and the stack's logger filled in.
func (opts StackOptions) limitAndRetry(c Endpoint) (*Limiter, RetryOptions) {
	lim := opts.Limiter
	if lim == nil {
		lim = NewLimiter(opts.Limits)
	}
	ro := opts.Retry
	if ro.Role == "" {
		ro.Role = c.Role()
	}
	if ro.Logger == nil {
		ro.Logger = opts.Logger
	}
	return lim, ro
}
