package llm

import (
	"context"
	"fmt"
	"math"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

// LimitOptions configures a Limiter. Zero fields mean no limit.
type LimitOptions struct {
	// MaxConcurrent caps requests in flight.
	MaxConcurrent int
	// RequestsPerMinute caps the request rate.
	RequestsPerMinute float64
	// TokensPerMinute caps prompt plus completion tokens per minute. A
	// request reserves its estimate before it is sent (prompt length and
	// MaxTokens, see EstimateTokens); tokens beyond the estimate that the
	// server reports afterwards are charged then, delaying later requests.
	TokensPerMinute float64
	// Estimate replaces EstimateTokens.
	Estimate func(Request) int
}

// Limiter enforces client-side limits for the requests of the Chatters and
// Embedders it wraps: share one Limiter among all the roles that use the
// same server or API key. Rates are smoothed to one second's worth of
// burst, as OpenAI applies its own. Safe for concurrent use.
type Limiter struct {
	sem      *semaphore.Weighted
	requests *rate.Limiter
	tokens   *rate.Limiter
	estimate func(Request) int
}

// NewLimiter returns a Limiter for opts.
func NewLimiter(opts LimitOptions) *Limiter {
	l := &Limiter{estimate: opts.Estimate}
	if l.estimate == nil {
		l.estimate = EstimateTokens
	}
	if opts.MaxConcurrent > 0 {
		l.sem = semaphore.NewWeighted(int64(opts.MaxConcurrent))
	}
	if opts.RequestsPerMinute > 0 {
		l.requests = perMinute(opts.RequestsPerMinute)
	}
	if opts.TokensPerMinute > 0 {
		l.tokens = perMinute(opts.TokensPerMinute)
	}
	return l
}

func perMinute(n float64) *rate.Limiter {
	perSecond := n / 60
	return rate.NewLimiter(rate.Limit(perSecond), max(1, int(math.Ceil(perSecond))))
}

// Limit returns next under a Limiter of its own.
func Limit(next Chatter, opts LimitOptions) Chatter {
	return NewLimiter(opts).Chatter(next)
}

// Chatter returns next under l's limits.
func (l *Limiter) Chatter(next Chatter) Chatter { return &limitChatter{next: next, l: l} }

// Embedder returns next under l's limits; the token estimate of a batch is
// its inputs' length.
func (l *Limiter) Embedder(next Embedder) Embedder { return &limitEmbedder{next: next, l: l} }

// acquire waits for a slot, a request and estimate tokens (at most one
// burst). The release function frees the slot and charges the tokens used
// beyond those reserved.
func (l *Limiter) acquire(ctx context.Context, estimate int) (release func(used int), err error) {
	if l.sem != nil {
		if err := l.sem.Acquire(ctx, 1); err != nil {
			return nil, fmt.Errorf("wait for a request slot: %w", err)
		}
	}
	free := func() {
		if l.sem != nil {
			l.sem.Release(1)
		}
	}
	if l.requests != nil {
		if err := l.requests.Wait(ctx); err != nil {
			free()
			return nil, fmt.Errorf("wait for request rate: %w", err)
		}
	}
	reserved := 0
	if l.tokens != nil {
		reserved = min(max(estimate, 1), l.tokens.Burst())
		if err := l.tokens.WaitN(ctx, reserved); err != nil {
			free()
			return nil, fmt.Errorf("wait for token rate: %w", err)
		}
	}
	return func(used int) {
		if l.tokens != nil {
			// Charge the excess as debt, in pieces no larger than the burst.
			now := time.Now()
			for extra := used - reserved; extra > 0; {
				n := min(extra, l.tokens.Burst())
				l.tokens.ReserveN(now, n)
				extra -= n
			}
		}
		free()
	}, nil
}

type limitChatter struct {
	next Chatter
	l    *Limiter
}

func (c *limitChatter) Chat(ctx context.Context, req Request) (Response, error) {
	est := c.l.estimate(req)
	release, err := c.l.acquire(ctx, est)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.next.Chat(ctx, req)
	used := 0 // failures and cache hits cost nothing beyond the reservation
	if err == nil && !resp.Cached {
		used = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	}
	release(used)
	return resp, err
}

type limitEmbedder struct {
	next Embedder
	l    *Limiter
}

func (e *limitEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, Usage, error) {
	est := 0
	for _, s := range inputs {
		est += estimateText(s)
	}
	release, err := e.l.acquire(ctx, est)
	if err != nil {
		return nil, Usage{}, err
	}
	out, usage, err := e.next.Embed(ctx, inputs)
	used := 0
	if err == nil {
		used = usage.PromptTokens
	}
	release(used)
	return out, usage, err
}
