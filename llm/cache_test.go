package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

func TestCacheKeyCoversEveryParameter(t *testing.T) {
	base := Request{
		Messages:    []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}},
		Temperature: 0,
		TopP:        1,
		MaxTokens:   512,
		Seed:        intPtr(1),
		Schema:      &Schema{Name: "judge", Schema: json.RawMessage(`{"type":"object"}`)},
	}
	baseKey := CacheKey("http://h/v1", "m", nil, base)
	tests := []struct {
		name    string
		baseURL string
		model   string
		extra   string
		change  func(*Request)
	}{
		{name: "base url", baseURL: "http://other/v1"},
		{name: "chat extra", extra: `{"repeat_penalty": 1}`},
		{name: "other chat extra", extra: `{"repeat_penalty": 1.1}`},
		{name: "model", model: "m2"},
		{name: "message text", change: func(r *Request) { r.Messages[1].Content = "u2" }},
		{name: "message role", change: func(r *Request) { r.Messages[0].Role = "user" }},
		{name: "extra message", change: func(r *Request) { r.Messages = append(r.Messages, Message{Role: "user", Content: ""}) }},
		{name: "temperature", change: func(r *Request) { r.Temperature = 0.1 }},
		{name: "top_p", change: func(r *Request) { r.TopP = 0.9 }},
		{name: "max tokens", change: func(r *Request) { r.MaxTokens = 64 }},
		{name: "seed", change: func(r *Request) { r.Seed = intPtr(2) }},
		{name: "no seed", change: func(r *Request) { r.Seed = nil }},
		{name: "schema body", change: func(r *Request) { r.Schema = &Schema{Name: "judge", Schema: json.RawMessage(`{"type":"array"}`)} }},
		{name: "schema name", change: func(r *Request) { r.Schema = &Schema{Name: "judge2", Schema: r.Schema.Schema} }},
		{name: "no schema", change: func(r *Request) { r.Schema = nil }},
	}
	seen := map[string]string{baseKey: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := base
			req.Messages = append([]Message(nil), base.Messages...)
			if tt.change != nil {
				tt.change(&req)
			}
			url, model := "http://h/v1", "m"
			if tt.baseURL != "" {
				url = tt.baseURL
			}
			if tt.model != "" {
				model = tt.model
			}
			var extra json.RawMessage
			if tt.extra != "" {
				extra = json.RawMessage(tt.extra)
			}
			k := CacheKey(url, model, extra, req)
			if other, ok := seen[k]; ok {
				t.Errorf("key equals the key of %s", other)
			}
			seen[k] = tt.name
		})
	}
	// What does not change the answer does not change the key.
	same := base
	same.Schema = &Schema{Name: "judge", Schema: json.RawMessage("{ \"type\" : \"object\" }")}
	if k := CacheKey("http://h/v1/", "m", nil, same); k != baseKey {
		t.Errorf("schema white space or a trailing slash changed the key")
	}
	if a, b := CacheKey("u", "m", json.RawMessage(`{"top_k": 0}`), base), CacheKey("u", "m", json.RawMessage(`{ "top_k" : 0 }`), base); a != b {
		t.Errorf("white space in the chat extra changed the key")
	}
}

func TestCacheHitReplaysExactly(t *testing.T) {
	s := newServer(t, llmtest.Options{Text: "  exact bytes \u00e9\n\"quoted\"\t"})
	c := newClient(t, s.URL(), Config{})
	dir := t.TempDir()
	cached, err := Cache(c, CacheOptions{Dir: dir, BaseURL: c.BaseURL(), Model: c.Model()})
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("q")
	first, err := cached.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached {
		t.Errorf("first call: Cached is true, want false")
	}
	second, err := cached.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := first
	want.Cached = true
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if got := s.Counts().Requests; got != 1 {
		t.Errorf("server requests: got %d, want 1", got)
	}

	// A second cache over the same directory (another process) hits too.
	other, err := Cache(chatFunc(func(context.Context, Request) (Response, error) {
		t.Fatal("the second cache asked the model")
		return Response{}, nil
	}), CacheOptions{Dir: dir, BaseURL: c.BaseURL(), Model: c.Model()})
	if err != nil {
		t.Fatal(err)
	}
	third, err := other.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, third); diff != "" {
		t.Errorf("replay from another cache (-want +got):\n%s", diff)
	}
}

func TestCacheCorruptEntryIsAMiss(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	next := chatFunc(func(context.Context, Request) (Response, error) {
		calls++
		return Response{Content: fmt.Sprint("answer ", calls)}, nil
	})
	c, err := Cache(next, CacheOptions{Dir: dir, BaseURL: "u", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("q")
	key := CacheKey("u", "m", nil, req)
	path := filepath.Join(dir, key[:2], key+".json")
	for _, corrupt := range []string{`{"v":1,"key":"`, `{"v":1,"key":"someone else","content":"x"}`, ""} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(corrupt), 0o644); err != nil {
			t.Fatal(err)
		}
		before := calls
		resp, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Cached || calls != before+1 {
			t.Errorf("corrupt entry %q: got Cached %v after %d calls, want a miss", corrupt, resp.Cached, calls-before)
		}
		// Overwritten: the next call hits.
		resp, err = c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Cached || resp.Content != fmt.Sprint("answer ", calls) {
			t.Errorf("after overwrite: got %+v, want a hit of the last answer", resp)
		}
	}
}

func TestCacheConcurrent(t *testing.T) {
	s := newServer(t, llmtest.Options{Answer: func(r llmtest.Request) string { return "re: " + r.Messages[0].Content }})
	cl := newClient(t, s.URL(), Config{})
	dir := t.TempDir()
	// Two caches on one directory stand for two processes.
	var caches [2]Chatter
	for i := range caches {
		c, err := Cache(cl, CacheOptions{Dir: dir, BaseURL: cl.BaseURL(), Model: cl.Model()})
		if err != nil {
			t.Fatal(err)
		}
		caches[i] = c
	}
	const workers, keys = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*keys)
	for w := range workers {
		wg.Go(func() {
			for k := range keys {
				q := fmt.Sprint("question ", k)
				resp, err := caches[w%2].Chat(context.Background(), userRequest(q))
				if err != nil {
					errs <- err
					return
				}
				if resp.Content != "re: "+q {
					errs <- fmt.Errorf("question %d: got %q, want %q", k, resp.Content, "re: "+q)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != keys {
		t.Errorf("entries: got %d, want %d", len(entries), keys)
	}
	temps, _ := filepath.Glob(filepath.Join(dir, "*", ".tmp-*"))
	if len(temps) != 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

func TestCacheDoesNotStoreErrors(t *testing.T) {
	s := newServer(t, llmtest.Options{Script: []llmtest.Fault{llmtest.ServerError}})
	cl := newClient(t, s.URL(), Config{})
	c, err := Cache(cl, CacheOptions{Dir: t.TempDir(), BaseURL: cl.BaseURL(), Model: cl.Model()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(context.Background(), userRequest("q")); err == nil {
		t.Fatal("got nil error, want the 500")
	}
	resp, err := c.Chat(context.Background(), userRequest("q"))
	if err != nil || resp.Cached {
		t.Errorf("after an error: got %+v, %v, want a fresh answer", resp, err)
	}
}
