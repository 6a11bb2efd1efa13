package llm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distill-rag/distill/llm/llmtest"
)

func TestLimitCapsRequestsInFlight(t *testing.T) {
	tests := []struct{ maxConcurrent, callers int }{
		{1, 8},
		{3, 12},
	}
	for _, tt := range tests {
		s := newServer(t, llmtest.Options{Latency: 10 * time.Millisecond})
		c := Limit(newClient(t, s.URL(), Config{}), LimitOptions{MaxConcurrent: tt.maxConcurrent})
		var wg sync.WaitGroup
		for range tt.callers {
			wg.Go(func() {
				if _, err := c.Chat(context.Background(), userRequest("x")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := s.MaxInFlight(); got > tt.maxConcurrent || got < 1 {
			t.Errorf("max %d: server saw %d in flight, want 1..%d", tt.maxConcurrent, got, tt.maxConcurrent)
		}
		if got := s.Counts().OK; got != tt.callers {
			t.Errorf("max %d: answered %d, want %d", tt.maxConcurrent, got, tt.callers)
		}
	}
}

func TestLimitWaitEndsWithContext(t *testing.T) {
	release := make(chan struct{})
	inside := make(chan struct{})
	var calls atomic.Int32
	next := chatFunc(func(ctx context.Context, _ Request) (Response, error) {
		calls.Add(1)
		close(inside)
		<-release
		return Response{}, nil
	})
	c := Limit(next, LimitOptions{MaxConcurrent: 1})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Chat(context.Background(), userRequest("holder"))
	}()
	<-inside
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Chat(ctx, userRequest("waiter")); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	close(release)
	<-done
	if got := calls.Load(); got != 1 {
		t.Errorf("calls: got %d, want 1", got)
	}
}

func TestLimitRates(t *testing.T) {
	// A token estimate larger than the burst is capped rather than
	// refused, and the excess is charged after the call.
	next := chatFunc(func(context.Context, Request) (Response, error) {
		return Response{Usage: Usage{PromptTokens: 5000, CompletionTokens: 5000}}, nil
	})
	l := NewLimiter(LimitOptions{RequestsPerMinute: 6000, TokensPerMinute: 6000})
	c := l.Chatter(next)
	req := userRequest("x")
	req.MaxTokens = 100000
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatalf("first call: %v", err)
	}
	// The debt makes the next wait far longer than a short deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Chat(ctx, req); err == nil {
		t.Errorf("second call within 50ms after a 10k-token debt at 100 tokens/s: got nil error, want a rate wait error")
	}
}

func TestLimitEmbedder(t *testing.T) {
	s := newServer(t, llmtest.Options{Latency: 5 * time.Millisecond})
	e := NewLimiter(LimitOptions{MaxConcurrent: 2}).Embedder(newClient(t, s.URL(), Config{}))
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, _, err := e.Embed(context.Background(), []string{"a b c"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := s.MaxInFlight(); got > 2 {
		t.Errorf("in flight: got %d, want at most 2", got)
	}
}

func TestEstimateTokens(t *testing.T) {
	req := Request{Messages: []Message{{Role: "user", Content: "12345678"}}, MaxTokens: 10}
	if got, want := EstimateTokens(req), 3+4+2+10; got != want {
		t.Errorf("got %d, want %d", got, want)
	}
	req.MaxTokens = 0
	if got, want := EstimateTokens(req), 3+4+2+DefaultCompletionEstimate; got != want {
		t.Errorf("without MaxTokens: got %d, want %d", got, want)
	}
}
