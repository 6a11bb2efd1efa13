package judge

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
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// promptQuestion and promptContext are the fixed input of the LLM judge's
// tests and golden file; rollout's model-backed roles are tested on the
// same.
const promptQuestion = testkit.PromptQuestion

var promptContext = testkit.PromptContext

// scripted starts a server that answers with answers in turn.
var scripted = llmtest.Scripted

// client returns a real model client for a server.
func client(t *testing.T, baseURL, model string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: baseURL, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// billed is the usage llmtest bills for requests answered with answers.
func billed(reqs []llmtest.Request, answers []string) data.Usage {
	p, c := llmtest.Billed(reqs, answers)
	return data.Usage{PromptTokens: p, CompletionTokens: c}
}

// checkReask checks that a second request asked again.
var checkReask = llmtest.CheckReask

// ignoreParseErrorAndUsage leaves those fields of Call to separate checks.
var ignoreParseErrorAndUsage = cmpopts.IgnoreFields(data.Call{}, "ParseError", "Usage")

// callLLM runs the LLM judge on the fixed prompt input.
func callLLM(ctx context.Context, c llm.Chatter, opts ...Option) (data.Call, error) {
	r, err := NewLLM(c, "judge-model", opts...).Judge(ctx, promptQuestion, promptContext())
	return r.Call, err
}

// sufficientAnswer is a usable answer of the judge.
const sufficientAnswer = `{"sufficient": true, "gap_items": []}`

func TestLLM(t *testing.T) {
	gap := `{"category": "attribute", "target": "Orla Venn", "slot": "birthplace city", "description": "Find the city where Orla Venn was born."}`
	gapItem := data.GapItem{Category: "attribute", Target: "Orla Venn", Slot: "birthplace city", Description: "Find the city where Orla Venn was born."}
	insufficient := `{"sufficient": false, "gap_items": [` + gap + `]}`
	tests := []struct {
		name    string
		answers []string
		want    data.Verdict
		// wantParseError is a part of the parse error; empty means none.
		wantParseError string
	}{
		{name: "insufficient with a gap", answers: []string{insufficient}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "sufficient", answers: []string{`{"sufficient": true, "gap_items": []}`}, want: data.Verdict{Sufficient: true}},
		{name: "gaps of a sufficient verdict dropped", answers: []string{`{"sufficient": true, "gap_items": [` + gap + `]}`}, want: data.Verdict{Sufficient: true}},
		{name: "object in a code fence", answers: []string{"Here is my verdict:\n```json\n" + insufficient + "\n```"}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "insufficient without gap items", answers: []string{`{"sufficient": false}`}, want: data.Verdict{}},
		{name: "malformed, then valid", answers: []string{`{"sufficient": false, "gap_items": [`, insufficient}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "non-boolean, then valid", answers: []string{`{"sufficient": "no", "gap_items": []}`, insufficient}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "malformed twice", answers: []string{"The evidence is not enough.", `{"sufficient": tru`}, wantParseError: "no JSON object"},
		{name: "non-boolean twice", answers: []string{`{"sufficient": "yes", "gap_items": []}`}, wantParseError: `"sufficient" is "yes", want true or false`},
		{name: "sufficient missing twice", answers: []string{`{"gap_items": []}`}, wantParseError: `no "sufficient" field`},
		{name: "gap item not an object twice", answers: []string{`{"sufficient": false, "gap_items": ["Orla Venn"]}`}, wantParseError: "gap item 0 is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, tt.answers...)
			j := NewLLM(client(t, s.URL(), "judge-model"), "configured-judge")
			c := promptContext()
			got, err := j.Judge(context.Background(), promptQuestion, c)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			reqs := s.Requests()
			wantRequests := min(len(tt.answers), 2)
			if tt.wantParseError != "" {
				wantRequests = 2
			}
			if len(reqs) != wantRequests {
				t.Fatalf("got %d requests, want %d", len(reqs), wantRequests)
			}
			if wantRequests == 2 {
				checkReask(t, reqs, tt.answers[0])
			}
			want := Result{Verdict: tt.want, Call: data.Call{Raw: tt.answers[min(wantRequests, len(tt.answers))-1], Model: "judge-model", Repaired: wantRequests == 2, TemplateHash: TemplateHash}}
			if diff := cmp.Diff(want, got, ignoreParseErrorAndUsage); diff != "" {
				t.Errorf("result differs (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantParseError == "" && got.ParseError != "":
				t.Errorf("got parse error %q, want none", got.ParseError)
			case !strings.Contains(got.ParseError, tt.wantParseError):
				t.Errorf("got parse error %q, want one containing %q", got.ParseError, tt.wantParseError)
			}
			if want := billed(reqs, tt.answers); got.Usage != want {
				t.Errorf("got usage %+v, want %+v (every request)", got.Usage, want)
			}
			wantUser := Prompt(promptQuestion, c.Render()).User
			if got := reqs[0].Messages; len(got) != 2 || got[1].Content != wantUser {
				t.Errorf("got messages %q, want the system prompt and the user message of Prompt", got)
			}
		})
	}
}

func TestLLMSamplingParameters(t *testing.T) {
	for _, tt := range []struct {
		name          string
		opts          []Option
		wantMaxTokens int
	}{
		{"default", nil, DefaultMaxTokens},
		{"with max tokens", []Option{WithMaxTokens(300)}, 300},
		{"non-positive max tokens keeps the default", []Option{WithMaxTokens(0)}, DefaultMaxTokens},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, sufficientAnswer)
			call, err := callLLM(context.Background(), client(t, s.URL(), "judge-model"), tt.opts...)
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
			r := reqs[0]
			for member, want := range map[string]string{"temperature": "0", "max_tokens": fmt.Sprint(tt.wantMaxTokens)} {
				if got, ok := r.Member(member); !ok || string(got) != want {
					t.Errorf("got %s %s (sent: %v), want %s", member, got, ok, want)
				}
			}
			if r.ResponseFormat != llm.ModeJSONSchema {
				t.Errorf("got response_format %q, want %q", r.ResponseFormat, llm.ModeJSONSchema)
			}
			if !jsonEqual(r.Schema, Schema().Schema) {
				t.Errorf("got schema %s, want %s", r.Schema, Schema().Schema)
			}
		})
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

func TestLLMServerErrors(t *testing.T) {
	s := llmtest.NewServer(llmtest.Options{ServerError: 1})
	t.Cleanup(s.Close)
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	c := llm.Retry(client(t, s.URL(), "judge-model"), llm.RetryOptions{MaxAttempts: 3, Sleep: noWait})
	_, err := callLLM(context.Background(), c)
	var se *llm.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError {
		t.Fatalf("got error %v, want a 500 *llm.StatusError", err)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("got %d requests, want 3 (the client's attempts)", n)
	}
}

func TestLLMServerErrorOnReask(t *testing.T) {
	// The first answer is unusable and the re-ask fails: the call failed,
	// it was not a parse failure.
	s := llmtest.NewServer(llmtest.Options{Script: []llmtest.Fault{llmtest.None, llmtest.ServerError}, Answer: func(llmtest.Request) string { return "no JSON" }})
	t.Cleanup(s.Close)
	_, err := NewLLM(client(t, s.URL(), "judge-model"), "judge-model").Judge(context.Background(), promptQuestion, promptContext())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError {
		t.Fatalf("got error %v, want a 500 *llm.StatusError", err)
	}
}

func TestLLMCancelled(t *testing.T) {
	s := scripted(t, sufficientAnswer)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := callLLM(ctx, client(t, s.URL(), "judge-model"))
	if err != context.Canceled {
		t.Errorf("got error %v, want context.Canceled as is", err)
	}
}

// TestLLMModelFallback uses a server that names no model.
func TestLLMModelFallback(t *testing.T) {
	content, _ := json.Marshal(sufficientAnswer)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`, content)
	}))
	t.Cleanup(ts.Close)
	call, err := callLLM(context.Background(), client(t, ts.URL+"/v1", "sent-model"))
	if err != nil {
		t.Fatal(err)
	}
	want := data.Call{Raw: sufficientAnswer, Model: "judge-model", TemplateHash: TemplateHash, Usage: data.Usage{PromptTokens: 7, CompletionTokens: 3}}
	if diff := cmp.Diff(want, call); diff != "" {
		t.Errorf("call differs (-want +got):\n%s", diff)
	}
}

func TestSchemaCategories(t *testing.T) {
	var s struct {
		Properties struct {
			GapItems struct {
				Items struct {
					Properties struct {
						Category struct {
							Enum []string `json:"enum"`
						} `json:"category"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"gap_items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema().Schema, &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(data.GapCategories(), s.Properties.GapItems.Items.Properties.Category.Enum); diff != "" {
		t.Errorf("category enum differs from data.GapCategories() (-want +got):\n%s", diff)
	}
}

// TestLLMPromptGolden records the judge's request as the server received
// it for the fixed input: sampling parameters, schema and messages.
func TestLLMPromptGolden(t *testing.T) {
	s := scripted(t, sufficientAnswer)
	if _, err := callLLM(context.Background(), client(t, s.URL(), "judge-model")); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	var b strings.Builder
	b.WriteString("=== request\n")
	for _, member := range []string{"model", "temperature", "max_tokens"} {
		v, _ := r.Member(member)
		fmt.Fprintf(&b, "%s: %s\n", member, v)
	}
	fmt.Fprintf(&b, "response_format: %q\n", r.ResponseFormat)
	var indented bytes.Buffer
	if err := json.Indent(&indented, r.Schema, "", "  "); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "=== schema\n%s\n", indented.String())
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "=== %s\n%s\n", m.Role, m.Content)
	}
	testkit.Golden(t, "llm_prompt.golden", b.String())
}
