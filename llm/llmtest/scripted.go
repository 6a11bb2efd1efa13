package llmtest

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// Scripted starts a server that answers chat requests with answers in
// turn, repeating the last one, and closes it when the test ends.
func Scripted(t testing.TB, answers ...string) *Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	s := NewServer(Options{Answer: func(Request) string {
		mu.Lock()
		defer mu.Unlock()
		a := answers[min(n, len(answers)-1)]
		n++
		return a
	}})
	t.Cleanup(s.Close)
	return s
}

// Billed returns the tokens the server bills for requests answered with
// answers in turn (the last one repeated): white-space separated words of
// the messages, and of the answers, at least one each.
func Billed(reqs []Request, answers []string) (prompt, completion int64) {
	words := func(s string) int64 { return int64(max(1, len(strings.Fields(s)))) }
	for i, r := range reqs {
		for _, m := range r.Messages {
			prompt += words(m.Content)
		}
		completion += words(answers[min(i, len(answers)-1)])
	}
	return prompt, completion
}

// CheckReask checks that the second of two requests asks again after an
// unusable answer (llm.DecodeJSON's repair): the first request's messages,
// the model's answer and a user message saying what was wrong.
func CheckReask(t testing.TB, reqs []Request, firstAnswer string) {
	t.Helper()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	first, second := reqs[0].Messages, reqs[1].Messages
	if len(second) != len(first)+2 || !slices.Equal(second[:len(first)], first) {
		t.Fatalf("got re-ask messages %q, want the first request's %d messages and two more", second, len(first))
	}
	if got := second[len(first)]; got.Role != "assistant" || got.Content != firstAnswer {
		t.Errorf("got re-ask message %+v, want the assistant's answer %q", got, firstAnswer)
	}
	if got := second[len(first)+1]; got.Role != "user" || !strings.Contains(got.Content, "could not be used") {
		t.Errorf("got re-ask message %+v, want a user message giving the error", got)
	}
}
