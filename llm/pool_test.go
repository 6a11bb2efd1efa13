package llm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distill-rag/distill/llm/llmtest"
)

func TestPoolSpreadsRequests(t *testing.T) {
	var clients []*Client
	var servers []*llmtest.Server
	for range 3 {
		s := llmtest.NewServer(llmtest.Options{Latency: 5 * time.Millisecond})
		defer s.Close()
		c, err := New(Config{BaseURL: s.URL(), Model: "m", Role: "judge"})
		if err != nil {
			t.Fatal(err)
		}
		clients, servers = append(clients, c), append(servers, s)
	}
	p, err := NewPool(clients...)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			if _, err := p.Chat(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, s := range servers {
		if n := s.Counts().Requests; n < 10 {
			t.Errorf("replica %d got %d of 60 requests", i, n)
		}
	}
	if _, _, err := p.Embed(context.Background(), []string{"x"}); err != nil {
		t.Error(err)
	}
	if p.Model() != "m" || p.Role() != "judge" || p.BaseURL() != servers[0].URL()+","+servers[1].URL()+","+servers[2].URL() {
		t.Errorf("names %q %q %q", p.Model(), p.Role(), p.BaseURL())
	}
	// A pool goes under the usual stack.
	if _, err := Stack(p, StackOptions{}); err != nil {
		t.Fatal(err)
	}
	other, _ := New(Config{BaseURL: servers[0].URL(), Model: "other", Role: "judge"})
	if _, err := NewPool(clients[0], other); !errors.Is(err, ErrPool) {
		t.Errorf("a pool of two models: %v", err)
	}
}
