package llm

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distill-rag/distill/llm/llmtest"
)

// chatFunc adapts a function to Chatter.
type chatFunc func(ctx context.Context, req Request) (Response, error)

func (f chatFunc) Chat(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }

func newServer(t testing.TB, opts llmtest.Options) *llmtest.Server {
	t.Helper()
	s := llmtest.NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

func newClient(t testing.TB, baseURL string, cfg Config) *Client {
	t.Helper()
	cfg.BaseURL = baseURL
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func userRequest(text string) Request {
	return Request{Messages: []Message{{Role: "user", Content: text}}}
}

// sleepRecorder replaces time in Retry: it records each wait and returns
// at once (or with ctx's error when ctx has ended).
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *sleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *sleepRecorder) Waits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

func intPtr(n int) *int { return &n }
