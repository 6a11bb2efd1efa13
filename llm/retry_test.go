package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/llm/llmtest"
)

func TestRetryRecoversFromFaults(t *testing.T) {
	tests := []struct {
		name      string
		script    []llmtest.Fault
		timeout   time.Duration
		wantWaits int
		// minWait is a lower bound on the first wait (Retry-After).
		minWait time.Duration
	}{
		{name: "429 with Retry-After", script: []llmtest.Fault{llmtest.RateLimited}, wantWaits: 1, minWait: 2 * time.Second},
		{name: "500 then 503", script: []llmtest.Fault{llmtest.ServerError, llmtest.Unavailable}, wantWaits: 2},
		{name: "malformed body", script: []llmtest.Fault{llmtest.Malformed}, wantWaits: 1},
		{name: "truncated body", script: []llmtest.Fault{llmtest.Truncated}, wantWaits: 1},
		{name: "hang until the per-request timeout", script: []llmtest.Fault{llmtest.Hang}, timeout: 50 * time.Millisecond, wantWaits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, llmtest.Options{Script: tt.script, RetryAfter: 2 * time.Second})
			c := newClient(t, s.URL(), Config{Timeout: tt.timeout})
			rec := &sleepRecorder{}
			r := Retry(c, RetryOptions{Sleep: rec.Sleep, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Second})
			resp, err := r.Chat(context.Background(), userRequest("x"))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Content != "OK" {
				t.Errorf("content: got %q, want OK", resp.Content)
			}
			waits := rec.Waits()
			if len(waits) != tt.wantWaits {
				t.Fatalf("retries: got %d (%v), want %d", len(waits), waits, tt.wantWaits)
			}
			if waits[0] < tt.minWait {
				t.Errorf("first wait: got %s, want at least %s", waits[0], tt.minWait)
			}
			if got, want := s.Counts().Requests, len(tt.script)+1; got != want {
				t.Errorf("server requests: got %d, want %d", got, want)
			}
		})
	}
}

func TestRetryAfterCappedByMaxDelay(t *testing.T) {
	s := newServer(t, llmtest.Options{Script: []llmtest.Fault{llmtest.RateLimited}, RetryAfter: time.Hour})
	rec := &sleepRecorder{}
	r := Retry(newClient(t, s.URL(), Config{}), RetryOptions{Sleep: rec.Sleep, MaxDelay: 3 * time.Second})
	if _, err := r.Chat(context.Background(), userRequest("x")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{3 * time.Second}, rec.Waits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestRetryDoesNotRetryClientErrors(t *testing.T) {
	tests := []struct {
		name     string
		opts     llmtest.Options
		baseURL  func(*llmtest.Server) string
		wantAuth bool
		status   int
	}{
		{name: "401", opts: llmtest.Options{APIKey: "k"}, wantAuth: true, status: http.StatusUnauthorized},
		{name: "404", baseURL: func(s *llmtest.Server) string { return s.URL() + "/nowhere" }, status: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.opts)
			url := s.URL()
			if tt.baseURL != nil {
				url = tt.baseURL(s)
			}
			rec := &sleepRecorder{}
			r := Retry(newClient(t, url, Config{}), RetryOptions{Sleep: rec.Sleep})
			_, err := r.Chat(context.Background(), userRequest("x"))
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != tt.status {
				t.Fatalf("got %v, want a StatusError %d", err, tt.status)
			}
			if got := errors.Is(err, ErrAuth); got != tt.wantAuth {
				t.Errorf("errors.Is(err, ErrAuth): got %v, want %v", got, tt.wantAuth)
			}
			if n := len(rec.Waits()); n != 0 {
				t.Errorf("retries: got %d, want 0", n)
			}
			if got := s.Counts().Requests; got != 1 {
				t.Errorf("server requests: got %d, want 1", got)
			}
		})
	}
}

func TestRetryGivesUp(t *testing.T) {
	s := newServer(t, llmtest.Options{Unavailable: 1})
	rec := &sleepRecorder{}
	r := Retry(newClient(t, s.URL(), Config{}), RetryOptions{Sleep: rec.Sleep, MaxAttempts: 3})
	_, err := r.Chat(context.Background(), userRequest("x"))
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("got %v, want a 503 StatusError", err)
	}
	if got := s.Counts().Requests; got != 3 {
		t.Errorf("server requests: got %d, want 3", got)
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	t.Run("during backoff", func(t *testing.T) {
		s := newServer(t, llmtest.Options{ServerError: 1})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waiting := make(chan struct{})
		r := Retry(newClient(t, s.URL(), Config{}), RetryOptions{
			BaseDelay: time.Hour, MaxDelay: time.Hour,
			Sleep: func(ctx context.Context, d time.Duration) error {
				close(waiting)
				return sleep(ctx, d) // the real wait, an hour long unless cancelled
			},
			Retryable: func(err error) bool { return IsRetryable(err) },
		})
		done := make(chan error, 1)
		go func() {
			_, err := r.Chat(ctx, userRequest("x"))
			done <- err
		}()
		<-waiting
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		var se *StatusError
		if !errors.As(err, &se) {
			t.Errorf("got %v, want the last server error kept", err)
		}
		if got := s.Counts().Requests; got != 1 {
			t.Errorf("server requests: got %d, want 1", got)
		}
	})
	t.Run("during a hanging request", func(t *testing.T) {
		hung := make(chan struct{}, 1)
		s := newServer(t, llmtest.Options{Hang: 1, Observe: func(llmtest.Request) { hung <- struct{}{} }})
		ctx, cancel := context.WithCancel(context.Background())
		rec := &sleepRecorder{}
		r := Retry(newClient(t, s.URL(), Config{Timeout: -1}), RetryOptions{Sleep: rec.Sleep})
		done := make(chan error, 1)
		go func() {
			_, err := r.Chat(ctx, userRequest("x"))
			done <- err
		}()
		// Cancel once the server holds the request.
		select {
		case err := <-done:
			t.Fatalf("Chat returned early: %v", err)
		case <-hung:
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if n := len(rec.Waits()); n != 0 {
			t.Errorf("retries after cancel: got %d, want 0", n)
		}
	})
}

func TestBackoffIsSeededFullJitter(t *testing.T) {
	opts := RetryOptions{Seed: 7, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	a, b := newRetrier(opts), newRetrier(opts)
	err := errors.New("boom")
	for n := 1; n <= 8; n++ {
		da, db := a.delay(n, err), b.delay(n, err)
		if da != db {
			t.Fatalf("attempt %d: same seed gave %s and %s", n, da, db)
		}
		cap := min(opts.MaxDelay, opts.BaseDelay<<(n-1))
		if da < 0 || da > cap {
			t.Errorf("attempt %d: got %s, want within [0, %s]", n, da, cap)
		}
	}
	// Retry-After raises the wait to at least what the server asked.
	ra := &StatusError{StatusCode: 429, RetryAfter: 700 * time.Millisecond}
	if d := a.delay(1, ra); d < 700*time.Millisecond {
		t.Errorf("with Retry-After 700ms: got %s, want at least 700ms", d)
	}
	// Huge attempt numbers do not overflow.
	if d := a.delay(200, err); d < 0 || d > opts.MaxDelay {
		t.Errorf("attempt 200: got %s, want within [0, %s]", d, opts.MaxDelay)
	}
}

// TestRetryTimeoutHint checks that timeouts, however many, bring one
// warning that says how to keep requests from queueing in a one-slot
// server, and that other errors bring none.
func TestRetryTimeoutHint(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		warns int
	}{
		{"timeouts", fmt.Errorf("chat m: %w", ErrTimeout), 1},
		{"server errors", &StatusError{StatusCode: 503}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := &sleepRecorder{}
			r := NewRetrier(RetryOptions{Sleep: rec.Sleep, MaxAttempts: 4, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			for range 3 {
				err := r.Do(context.Background(), func(context.Context) error { return tt.err })
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %v, want %v", err, tt.err)
				}
			}
			if got := strings.Count(logs.String(), "--max-concurrent"); got != tt.warns {
				t.Errorf("got %d hints, want %d:\n%s", got, tt.warns, logs.String())
			}
		})
	}
}
