// Package roletest holds the checks that every model-backed role passes
// (the judge, and rollout's extractor and reader): how it asks the model
// (sampling parameters, schema, the golden request), how it records its
// call (model, template, usage, the one re-ask after an unusable answer),
// and what it does when the server fails, the context is cancelled or the
// answer names no model. The roles run against llmtest's loopback server
// through the real model client.
//
// It is imported by tests only.
package roletest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// Role is a model-backed role under test, with O its option type.
type Role[O any] struct {
	// Name names the role; the tests serve it as the model Name+"-model".
	Name string
	// MaxTokens is the role's default max_tokens, and WithMaxTokens its
	// option that sets them.
	MaxTokens     int
	WithMaxTokens func(int) O
	// Answer is a usable answer of the model.
	Answer string
	// Schema is the JSON Schema the role asks for; nil for free text.
	Schema *llm.Schema
	// TemplateHash is the hash of the role's prompt template.
	TemplateHash string
	// Call makes the role over c, configured with the model name
	// Name+"-model" and opts, and runs it once on the fixed prompt input.
	Call func(ctx context.Context, c llm.Chatter, opts ...O) (data.Call, error)
}

func (r Role[O]) model() string { return r.Name + "-model" }

// Client returns a real model client for a server.
func Client(t testing.TB, baseURL, model string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: baseURL, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Billed is the usage llmtest bills for requests answered with answers.
func Billed(reqs []llmtest.Request, answers []string) data.Usage {
	p, c := llmtest.Billed(reqs, answers)
	return data.Usage{PromptTokens: p, CompletionTokens: c}
}

// Repair checks the requests a role made, and the call it recorded, when a
// server answered with answers in turn: a role that expects JSON asks once
// more after an unusable answer, and records the last answer, the model
// that gave it, whether it asked again, its template, the usage of every
// request, and a parse error containing wantParseError (none when that is
// empty). It returns the number of requests.
func Repair(t testing.TB, reqs []llmtest.Request, answers []string, wantParseError string, got data.Call, model, templateHash string) int {
	t.Helper()
	wantRequests := min(len(answers), 2)
	if wantParseError != "" {
		wantRequests = 2
	}
	if len(reqs) != wantRequests {
		t.Fatalf("got %d requests, want %d", len(reqs), wantRequests)
	}
	if wantRequests == 2 {
		llmtest.CheckReask(t, reqs, answers[0])
	}
	want := data.Call{Raw: answers[min(wantRequests, len(answers))-1], Model: model, Repaired: wantRequests == 2,
		TemplateHash: templateHash, Usage: Billed(reqs, answers), ParseError: got.ParseError}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call differs (-want +got):\n%s", diff)
	}
	switch {
	case wantParseError == "" && got.ParseError != "":
		t.Errorf("got parse error %q, want none", got.ParseError)
	case !strings.Contains(got.ParseError, wantParseError):
		t.Errorf("got parse error %q, want one containing %q", got.ParseError, wantParseError)
	}
	return wantRequests
}

// SamplingParameters checks that the role asks at temperature 0 with its
// max_tokens (by default, as set, and by default again for a non-positive
// setting), for its schema if it has one.
func SamplingParameters[O any](t *testing.T, role Role[O]) {
	for _, tt := range []struct {
		name          string
		opts          []O
		wantMaxTokens int
	}{
		{"default", nil, role.MaxTokens},
		{"with max tokens", []O{role.WithMaxTokens(300)}, 300},
		{"non-positive max tokens keeps the default", []O{role.WithMaxTokens(0)}, role.MaxTokens},
	} {
		t.Run(role.Name+"/"+tt.name, func(t *testing.T) {
			r := one(t, role, tt.opts...)
			for member, want := range map[string]string{"temperature": "0", "max_tokens": fmt.Sprint(tt.wantMaxTokens)} {
				if got, ok := r.Member(member); !ok || string(got) != want {
					t.Errorf("got %s %s (sent: %v), want %s", member, got, ok, want)
				}
			}
			wantFormat := ""
			if role.Schema != nil {
				wantFormat = llm.ModeJSONSchema
			}
			if r.ResponseFormat != wantFormat {
				t.Errorf("got response_format %q, want %q", r.ResponseFormat, wantFormat)
			}
			if role.Schema != nil && !jsonEqual(r.Schema, role.Schema.Schema) {
				t.Errorf("got schema %s, want %s", r.Schema, role.Schema.Schema)
			}
		})
	}
}

// one runs the role once against a server that gives its usable answer,
// and returns the one request the server got.
func one[O any](t *testing.T, role Role[O], opts ...O) llmtest.Request {
	t.Helper()
	s := llmtest.Scripted(t, role.Answer)
	call, err := role.Call(context.Background(), Client(t, s.URL(), role.model()), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if call.ParseError != "" {
		t.Fatalf("got parse error %q, want none", call.ParseError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

// Failures checks what the role returns when the server fails every
// request (the client's error, after its attempts), when it fails the
// re-ask after an unusable answer (the error: the call failed, it was not
// a parse failure), and when the context is cancelled (context.Canceled
// as it is).
func Failures[O any](t *testing.T, role Role[O]) {
	t.Run(role.Name+"/server errors", func(t *testing.T) {
		s := llmtest.NewServer(llmtest.Options{ServerError: 1})
		t.Cleanup(s.Close)
		noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
		c := llm.Retry(Client(t, s.URL(), role.model()), llm.RetryOptions{MaxAttempts: 3, Sleep: noWait})
		_, err := role.Call(context.Background(), c)
		checkServerError(t, err)
		if n := len(s.Requests()); n != 3 {
			t.Errorf("got %d requests, want 3 (the client's attempts)", n)
		}
	})
	t.Run(role.Name+"/server error on the re-ask", func(t *testing.T) {
		s := llmtest.NewServer(llmtest.Options{Script: []llmtest.Fault{llmtest.None, llmtest.ServerError}, Answer: func(llmtest.Request) string { return "no JSON" }})
		t.Cleanup(s.Close)
		_, err := role.Call(context.Background(), Client(t, s.URL(), role.model()))
		checkServerError(t, err)
	})
	t.Run(role.Name+"/cancelled", func(t *testing.T) {
		s := llmtest.Scripted(t, role.Answer)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := role.Call(ctx, Client(t, s.URL(), role.model())); err != context.Canceled {
			t.Errorf("got error %v, want context.Canceled as is", err)
		}
	})
}

func checkServerError(t *testing.T, err error) {
	t.Helper()
	var se *llm.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError {
		t.Fatalf("got error %v, want a 500 *llm.StatusError", err)
	}
}

// ModelFallback checks the call of a role whose server names no model in
// its answer: the role's configured model is recorded.
func ModelFallback[O any](t *testing.T, role Role[O]) {
	t.Run(role.Name+"/model fallback", func(t *testing.T) {
		content, _ := json.Marshal(role.Answer)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`, content)
		}))
		t.Cleanup(ts.Close)
		call, err := role.Call(context.Background(), Client(t, ts.URL+"/v1", "sent-model"))
		if err != nil {
			t.Fatal(err)
		}
		want := data.Call{Raw: role.Answer, Model: role.model(), TemplateHash: role.TemplateHash, Usage: data.Usage{PromptTokens: 7, CompletionTokens: 3}}
		if diff := cmp.Diff(want, call); diff != "" {
			t.Errorf("call differs (-want +got):\n%s", diff)
		}
	})
}

// PromptGolden records the role's request as the server received it for
// the fixed input (sampling parameters, schema and messages) in the golden
// file testdata/name.
func PromptGolden[O any](t *testing.T, role Role[O], name string) {
	t.Run(role.Name+"/golden prompt", func(t *testing.T) {
		r := one(t, role)
		var b strings.Builder
		b.WriteString("=== request\n")
		for _, member := range []string{"model", "temperature", "max_tokens"} {
			v, _ := r.Member(member)
			fmt.Fprintf(&b, "%s: %s\n", member, v)
		}
		fmt.Fprintf(&b, "response_format: %q\n", r.ResponseFormat)
		if len(r.Schema) > 0 {
			var indented bytes.Buffer
			if err := json.Indent(&indented, r.Schema, "", "  "); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "=== schema\n%s\n", indented.String())
		}
		for _, m := range r.Messages {
			fmt.Fprintf(&b, "=== %s\n%s\n", m.Role, m.Content)
		}
		testkit.Golden(t, name, b.String())
	})
}
