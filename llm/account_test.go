package llm

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAccountTotalsAndCost(t *testing.T) {
	type step struct {
		resp Response
		err  error
	}
	steps := []step{
		{resp: Response{Model: "gpt-4o-mini-2024-07-18", Usage: Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000}}},
		{resp: Response{Model: "gpt-4o-mini-2024-07-18", Usage: Usage{PromptTokens: 500, CompletionTokens: 50}, Cached: true}},
		{err: errors.New("boom")},
		{err: &StatusError{StatusCode: 401}},
		{resp: Response{Model: "", Usage: Usage{PromptTokens: 2_000_000, CompletionTokens: 0}}},
	}
	i := 0
	next := chatFunc(func(context.Context, Request) (Response, error) {
		s := steps[i]
		i++
		return s.resp, s.err
	})
	m := Account(next, AccountOptions{Role: "teacher", Model: "gpt-4o-mini"})
	for range steps {
		m.Chat(context.Background(), userRequest("x"))
	}
	want := Stats{
		Role:             "teacher",
		Model:            "gpt-4o-mini",
		Requests:         5,
		CachedHits:       1,
		Failures:         2,
		AuthFailures:     1,
		PromptTokens:     3_000_000,
		CompletionTokens: 100_000,
		// 1M in at 0.15 + 100k out at 0.60 + 2M in at 0.15.
		CostUSD: 0.15 + 0.06 + 0.30,
	}
	if diff := cmp.Diff(want, m.Snapshot(), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(m.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	json.Unmarshal(b, &back)
	for _, k := range []string{"role", "model", "requests", "cached_hits", "retries", "failures", "prompt_tokens", "completion_tokens", "cost_usd"} {
		if _, ok := back[k]; !ok {
			t.Errorf("run.json field %q missing from %s", k, b)
		}
	}
}

func TestAccountPrices(t *testing.T) {
	tests := []struct {
		model  string
		prices map[string]Price
		want   float64 // cost of 1M in + 1M out
		priced bool
	}{
		{"gpt-4o", nil, 12.50, true},
		{"gpt-4o-2024-08-06", nil, 12.50, true},
		{"gpt-4.1-mini-2025-04-14", nil, 2.00, true},
		{"gpt-4.1-nano", nil, 0.50, true},
		{"o4-mini", nil, 5.50, true},
		{"meta-llama/Meta-Llama-3-8B-Instruct", nil, 0, false},
		{"gpt-4o", map[string]Price{"gpt-4o": {Input: 1, Output: 2}}, 3, true},
		{"my-model", map[string]Price{"my-model": {Input: 1}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			next := chatFunc(func(context.Context, Request) (Response, error) {
				return Response{Model: tt.model, Usage: Usage{PromptTokens: 1e6, CompletionTokens: 1e6}}, nil
			})
			m := Account(next, AccountOptions{Model: tt.model, Prices: tt.prices})
			m.Chat(context.Background(), userRequest("x"))
			s := m.Snapshot()
			if math.Abs(s.CostUSD-tt.want) > 1e-9 {
				t.Errorf("cost: got %v, want %v", s.CostUSD, tt.want)
			}
			if got := s.Unpriced == 0; got != tt.priced {
				t.Errorf("priced: got %v, want %v", got, tt.priced)
			}
		})
	}
}

// TestStack runs the recommended stack against a server that fails a third
// of the time, from many goroutines: every call succeeds, and the Meter's
// retries match the faults the server injected.
func TestStack(t *testing.T) {
	s := newServer(t, llmtest.Options{
		Seed: 3, RateLimited: 0.1, ServerError: 0.1, Malformed: 0.05, Truncated: 0.05,
	})
	c := newClient(t, s.URL(), Config{Role: "judge", Model: "gpt-4.1-mini"})
	rec := &sleepRecorder{}
	m, err := Stack(c, StackOptions{
		Retry:    RetryOptions{Sleep: rec.Sleep, MaxAttempts: 20},
		Limits:   LimitOptions{MaxConcurrent: 4},
		CacheDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 40
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			req := userRequest("question")
			req.Seed = intPtr(i % 20) // 20 distinct requests, each asked twice
			if _, err := m.Chat(context.Background(), req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st := m.Snapshot()
	cnt := s.Counts()
	faults := cnt.RateLimited + cnt.ServerError + cnt.Malformed + cnt.Truncated
	if st.Requests != calls || st.Failures != 0 {
		t.Errorf("requests %d failures %d, want %d and 0", st.Requests, st.Failures, calls)
	}
	if st.Retries != int64(faults) || int(st.Retries) != len(rec.Waits()) {
		t.Errorf("retries: meter %d, waits %d, server faults %d; want all equal", st.Retries, len(rec.Waits()), faults)
	}
	if faults == 0 {
		t.Errorf("the server injected no faults; the test proves nothing")
	}
	if st.CachedHits+int64(cnt.OK) != calls {
		t.Errorf("cached hits %d + answered %d, want %d", st.CachedHits, cnt.OK, calls)
	}
	if s.MaxInFlight() > 4 {
		t.Errorf("in flight: got %d, want at most 4", s.MaxInFlight())
	}
	if st.CostUSD <= 0 || st.Role != "judge" {
		t.Errorf("cost %v role %q, want positive and judge", st.CostUSD, st.Role)
	}
}

func TestParsePrice(t *testing.T) {
	tests := []struct {
		in        string
		model     string
		price     Price
		wantError bool
	}{
		{"gpt-4o-mini=0.15:0.6", "gpt-4o-mini", Price{Input: 0.15, Output: 0.6}, false},
		{" llama3:8b = 0 : 0 ", "llama3:8b", Price{}, false},
		{"gpt-4o-mini", "", Price{}, true},
		{"=1:2", "", Price{}, true},
		{"m=1", "", Price{}, true},
		{"m=a:2", "", Price{}, true},
		{"m=1:-2", "", Price{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			model, price, err := ParsePrice(tc.in)
			if (err != nil) != tc.wantError {
				t.Fatalf("ParsePrice(%q) error %v, want error: %v", tc.in, err, tc.wantError)
			}
			if model != tc.model || price != tc.price {
				t.Errorf("ParsePrice(%q) = %q, %+v; want %q, %+v", tc.in, model, price, tc.model, tc.price)
			}
		})
	}
}
