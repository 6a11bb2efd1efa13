package llm

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/llm/llmtest"
)

func TestDialerSharesStacksAndCountsGroupsApart(t *testing.T) {
	srv := newServer(t, llmtest.Options{Text: "ok"})
	var made []string
	d := &Dialer{
		Client: func(role, model, baseURL string) (Endpoint, error) {
			made = append(made, role+" "+model)
			return newClient(t, baseURL, Config{Model: model, Role: role}), nil
		},
		Stack: StackOptions{Prices: map[string]Price{"m": {Input: 1, Output: 1}}},
	}
	if d.Dialed() {
		t.Error("Dialed before any Dial: true")
	}
	ctx := context.Background()
	for _, call := range []struct{ group, role string }{{"a", "judge"}, {"b", "judge"}, {"b", "judge"}, {"b", "reader"}} {
		ch, err := d.Dial(call.group, call.role, "m", srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Chat(ctx, userRequest("hi")); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"judge m", "reader m"}; !cmp.Equal(made, want) {
		t.Errorf("clients made: got %q, want %q (one per role, model and server)", made, want)
	}
	requests := func(group string) map[string]int64 {
		out := map[string]int64{}
		for _, s := range d.Usage(group) {
			out[s.Role] = s.Requests
			if s.CostUSD <= 0 {
				t.Errorf("group %s, role %s: cost %v, want it priced", group, s.Role, s.CostUSD)
			}
		}
		return out
	}
	if got, want := requests("a"), map[string]int64{"judge": 1}; !cmp.Equal(got, want) {
		t.Errorf("group a: got %v, want %v", got, want)
	}
	if got, want := requests("b"), map[string]int64{"judge": 2, "reader": 1}; !cmp.Equal(got, want) {
		t.Errorf("group b: got %v, want %v", got, want)
	}
	if got := d.Usage("none"); got != nil {
		t.Errorf("a group never dialed: got %v, want no usage", got)
	}
	if !d.Dialed() {
		t.Error("Dialed after Dial: false")
	}
}

func TestDialerClientError(t *testing.T) {
	want := errors.New("no such server")
	d := &Dialer{Client: func(string, string, string) (Endpoint, error) { return nil, want }}
	if _, err := d.Dial("", "judge", "m", "http://x/v1"); !errors.Is(err, want) {
		t.Errorf("Dial = %v, want %v", err, want)
	}
	if d.Dialed() {
		t.Error("Dialed after a failed Dial: true")
	}
}
