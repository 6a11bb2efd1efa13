package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// RetryOptions configures Retry. Zero fields take the defaults shown.
type RetryOptions struct {
	// MaxAttempts counts the first attempt too (default 5).
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt, doubled for each
	// one after (default 500ms).
	BaseDelay time.Duration
	// MaxDelay caps every wait, a server's Retry-After included (default 30s).
	MaxDelay time.Duration
	// Seed seeds the jitter (full jitter: a wait is uniform between zero
	// and the backoff), so that runs are reproducible.
	Seed uint64
	// Retryable decides which errors are retried (default IsRetryable).
	Retryable func(error) bool
	// Sleep waits d or until ctx ends, returning ctx's error then (default:
	// a timer and a select on ctx.Done()). Tests replace it to record
	// waits without taking them.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives one debug line per retry (default: none).
	Logger *slog.Logger
	// Role is added to log lines.
	Role string
}

type retrier struct {
	opts RetryOptions
	mu   sync.Mutex
	rng  *rand.Rand
	// timeoutHint says once why requests may time out on a healthy server.
	timeoutHint sync.Once
}

func newRetrier(o RetryOptions) *retrier {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = 500 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 30 * time.Second
	}
	if o.Retryable == nil {
		o.Retryable = IsRetryable
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &retrier{opts: o, rng: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// delay is the wait before attempt n+1 after attempt n failed with err.
func (r *retrier) delay(n int, err error) time.Duration {
	backoff := r.opts.MaxDelay
	if shift := n - 1; shift < 32 {
		if b := r.opts.BaseDelay << shift; b > 0 && b < backoff {
			backoff = b
		}
	}
	r.mu.Lock()
	d := time.Duration(r.rng.Int64N(int64(backoff) + 1))
	r.mu.Unlock()
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > d {
		d = min(se.RetryAfter, r.opts.MaxDelay)
	}
	return d
}

// do runs op until it succeeds, fails for good, runs out of attempts or
// ctx ends.
func (r *retrier) do(ctx context.Context, op func(context.Context) error) error {
	for n := 1; ; n++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !r.opts.Retryable(err) {
			return err
		}
		if n >= r.opts.MaxAttempts {
			return fmt.Errorf("giving up after %d attempts: %w", n, err)
		}
		if errors.Is(err, ErrTimeout) {
			r.timeoutHint.Do(func() {
				r.opts.Logger.WarnContext(ctx, "a model request ran past its time limit and will be retried; "+
					"a server that answers one request at a time (llama.cpp's Python server) keeps the others queued past it: "+
					"limit the requests in flight to its parallel slots (distill --max-concurrent), or raise the limit (--request-timeout)",
					"role", r.opts.Role, "error", err)
			})
		}
		d := r.delay(n, err)
		countRetry(ctx)
		r.opts.Logger.DebugContext(ctx, "retrying model request",
			"role", r.opts.Role, "attempt", n+1, "wait", d, "error", err)
		if serr := r.opts.Sleep(ctx, d); serr != nil {
			return fmt.Errorf("waiting to retry: %w (last error: %w)", serr, err)
		}
	}
}

// Retrier retries any call with the policy of Retry, for API calls that are
// not chat or embedding requests (files, batches, fine-tuning jobs).
type Retrier struct{ r *retrier }

// NewRetrier returns a Retrier with the options' defaults filled in.
func NewRetrier(opts RetryOptions) *Retrier { return &Retrier{r: newRetrier(opts)} }

// Do runs op until it succeeds, fails with an error opts.Retryable
// refuses, runs out of attempts or ctx ends, waiting between attempts as
// Retry does.
func (r *Retrier) Do(ctx context.Context, op func(context.Context) error) error {
	return r.r.do(ctx, op)
}

// Retry returns a Chatter that retries next on the errors that
// opts.Retryable accepts (by default IsRetryable: timeouts, 408, 409, 425,
// 429, 5xx, truncated or malformed bodies, connection failures), with
// exponential backoff and full jitter, waiting at least as long as a
// server's Retry-After asks (capped by MaxDelay). 400, 401, 403 and 404 are
// returned at once; 401 and 403 match ErrAuth. Waits end when ctx does.
// Each retry is counted by an enclosing Account.
func Retry(next Chatter, opts RetryOptions) Chatter {
	return &retryChatter{next: next, r: newRetrier(opts)}
}

type retryChatter struct {
	next Chatter
	r    *retrier
}

func (c *retryChatter) Chat(ctx context.Context, req Request) (Response, error) {
	var resp Response
	err := c.r.do(ctx, func(ctx context.Context) error {
		var err error
		resp, err = c.next.Chat(ctx, req)
		return err
	})
	return resp, err
}

// RetryEmbedder is Retry for an Embedder.
func RetryEmbedder(next Embedder, opts RetryOptions) Embedder {
	return &retryEmbedder{next: next, r: newRetrier(opts)}
}

type retryEmbedder struct {
	next Embedder
	r    *retrier
}

func (e *retryEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, Usage, error) {
	var (
		out   [][]float32
		usage Usage
	)
	err := e.r.do(ctx, func(ctx context.Context) error {
		var err error
		out, usage, err = e.next.Embed(ctx, inputs)
		return err
	})
	return out, usage, err
}

// retryCounterKey carries a *atomic.Int64 from Account to Retry, which adds
// one per retry; this is how an Account outside a Retry learns of retries
// that never surface as separate calls.
type retryCounterKey struct{}

func withRetryCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, retryCounterKey{}, n)
}

func countRetry(ctx context.Context) {
	if n, ok := ctx.Value(retryCounterKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
