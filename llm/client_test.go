package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

// TestTemperatureZeroReachesServer proves, against a plain httptest server
// reading the raw body, that a temperature of 0 is sent as 0 despite
// go-openai's omitempty.
func TestTemperatureZeroReachesServer(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	defer ts.Close()

	c := newClient(t, ts.URL+"/v1", Config{})
	if _, err := c.Chat(context.Background(), userRequest("hello")); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(bodies[0], &m); err != nil {
		t.Fatalf("server got a body that is not JSON: %v: %s", err, bodies[0])
	}
	got, ok := m["temperature"]
	if !ok {
		t.Fatalf("body has no temperature: %s", bodies[0])
	}
	if string(got) != "0" {
		t.Errorf("temperature: got %s, want 0", got)
	}
}

func TestSamplingParametersSentAsAsked(t *testing.T) {
	absent := "<absent>"
	tests := []struct {
		name  string
		model string
		req   Request
		want  map[string]string // member -> raw JSON, or absent
	}{
		{
			name: "greedy",
			req:  Request{Temperature: 0},
			want: map[string]string{"temperature": "0", "top_p": absent, "seed": absent, "max_tokens": absent},
		},
		{
			name: "all set",
			req:  Request{Temperature: 0.7, TopP: 0.9, Seed: intPtr(42), MaxTokens: 64},
			want: map[string]string{"temperature": "0.7", "top_p": "0.9", "seed": "42", "max_tokens": "64"},
		},
		{
			name: "zero seed is sent",
			req:  Request{Temperature: 1, Seed: intPtr(0), MaxTokens: 512},
			want: map[string]string{"temperature": "1", "seed": "0", "max_tokens": "512"},
		},
		{
			name:  "reasoning model",
			model: "o4-mini",
			req:   Request{Temperature: 0, TopP: 0.5, MaxTokens: 100},
			want:  map[string]string{"temperature": absent, "top_p": absent, "max_tokens": absent, "max_completion_tokens": "100"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, llmtest.Options{})
			c := newClient(t, s.URL(), Config{Model: tt.model})
			tt.req.Messages = []Message{{Role: "user", Content: "q"}}
			if _, err := c.Chat(context.Background(), tt.req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			rec := s.Requests()[0]
			for name, want := range tt.want {
				raw, ok := rec.Member(name)
				got := absent
				if ok {
					got = string(raw)
				}
				if got != want {
					t.Errorf("%s: got %s, want %s (body %s)", name, got, want, rec.Body)
				}
			}
		})
	}
}

func TestEnsureTemperature(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"model":"m"}`, `{"temperature":0,"model":"m"}`},
		{`  {}`, `{"temperature":0}`},
		{`{ }`, `{"temperature":0 }`},
		{`{"temperature":0.5,"model":"m"}`, `{"temperature":0.5,"model":"m"}`},
		{`not json`, `not json`},
		{`null`, `null`},
	}
	for _, tt := range tests {
		if got := string(ensureTemperature([]byte(tt.in))); got != tt.want {
			t.Errorf("ensureTemperature(%s): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestChatResponse(t *testing.T) {
	s := newServer(t, llmtest.Options{Text: "the answer"})
	c := newClient(t, s.URL(), Config{Model: "m1"})
	got, err := c.Chat(context.Background(), userRequest("two words"))
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := Response{
		Content:      "the answer",
		FinishReason: "stop",
		Model:        "m1",
		Usage:        Usage{PromptTokens: 2, CompletionTokens: 2},
		Mode:         ModeText,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestChatWithoutV1Prefix(t *testing.T) {
	s := newServer(t, llmtest.Options{})
	c := newClient(t, strings.TrimSuffix(s.URL(), "/v1"), Config{})
	if _, err := c.Chat(context.Background(), userRequest("x")); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if got := s.Requests()[0].Path; got != "/chat/completions" {
		t.Errorf("path: got %s, want /chat/completions", got)
	}
}

type verdict struct {
	Sufficient bool `json:"sufficient"`
	GapItems   []struct {
		Category string `json:"category" enum:"bridge_entity,attribute,relation,evidence_span,other"`
		Target   string `json:"target"`
	} `json:"gap_items"`
}

func TestStructuredOutputFallback(t *testing.T) {
	schema, err := SchemaFor[verdict]("verdict")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		opts      llmtest.Options
		wantMode  string
		wantFirst []string // response formats of the first call's requests
	}{
		{"json_schema works", llmtest.Options{}, ModeJSONSchema, []string{"json_schema"}},
		{"no json_schema", llmtest.Options{NoJSONSchema: true}, ModeJSONObjectSchema, []string{"json_schema", "json_object"}},
		{"neither", llmtest.Options{NoJSONSchema: true, NoJSONObject: true}, ModeText, []string{"json_schema", "json_object", "json_object", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Answer = func(llmtest.Request) string { return `{"sufficient":true,"gap_items":[]}` }
			s := newServer(t, tt.opts)
			c := newClient(t, s.URL(), Config{})
			req := userRequest("is it enough?")
			req.Schema = &schema
			for call := range 2 {
				resp, err := c.Chat(context.Background(), req)
				if err != nil {
					t.Fatalf("call %d: %v", call, err)
				}
				if resp.Mode != tt.wantMode {
					t.Errorf("call %d mode: got %s, want %s", call, resp.Mode, tt.wantMode)
				}
			}
			var formats []string
			for _, r := range s.Requests() {
				formats = append(formats, r.ResponseFormat)
			}
			// The second call goes straight to the mode that worked.
			want := append(append([]string(nil), tt.wantFirst...), tt.wantFirst[len(tt.wantFirst)-1])
			if diff := cmp.Diff(want, formats); diff != "" {
				t.Errorf("response formats sent (-want +got):\n%s", diff)
			}
			last := s.Requests()[len(s.Requests())-1]
			switch tt.wantMode {
			case ModeJSONSchema:
				var rf struct {
					ResponseFormat struct {
						JSONSchema struct {
							Name   string          `json:"name"`
							Strict bool            `json:"strict"`
							Schema json.RawMessage `json:"schema"`
						} `json:"json_schema"`
					} `json:"response_format"`
				}
				if err := json.Unmarshal(last.Body, &rf); err != nil {
					t.Fatal(err)
				}
				js := rf.ResponseFormat.JSONSchema
				if js.Name != "verdict" || !js.Strict || !bytes.Equal(js.Schema, schema.Schema) {
					t.Errorf("json_schema: got name %q strict %v schema %s, want verdict, true, %s", js.Name, js.Strict, js.Schema, schema.Schema)
				}
			default:
				var rf struct {
					ResponseFormat struct {
						Schema json.RawMessage `json:"schema"`
					} `json:"response_format"`
				}
				if err := json.Unmarshal(last.Body, &rf); err != nil {
					t.Fatal(err)
				}
				if got, want := tt.wantMode == ModeJSONObjectSchema, rf.ResponseFormat.Schema != nil; got != want {
					t.Errorf("response_format.schema: got %s, want it sent only in mode %s", rf.ResponseFormat.Schema, ModeJSONObjectSchema)
				}
				if tt.wantMode == ModeJSONObjectSchema && !bytes.Equal(rf.ResponseFormat.Schema, schema.Schema) {
					t.Errorf("response_format.schema: got %s, want %s", rf.ResponseFormat.Schema, schema.Schema)
				}
				// The server holds the answer to the schema in
				// json_object+schema: the prompt is left as it is.
				msgs := last.Messages
				switch {
				case tt.wantMode == ModeJSONObjectSchema && (len(msgs) != 1 || msgs[0].Content != "is it enough?"):
					t.Errorf("messages: got %+v, want the user message alone", msgs)
				case tt.wantMode == ModeText && (len(msgs) != 1 || !strings.Contains(msgs[0].Content, string(schema.Schema)) || !strings.HasPrefix(msgs[0].Content, "is it enough?")):
					t.Errorf("messages: got %+v, want the user message followed by the schema instruction", msgs)
				}
			}
		})
	}
}

// TestServerErrorNamingResponseFormatFallsBack follows what llama.cpp's
// Python server answers to response_format json_schema: 500 with the
// validation error. The client falls back at once, without retrying.
func TestServerErrorNamingResponseFormatFallsBack(t *testing.T) {
	var (
		mu    sync.Mutex
		types []string
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ResponseFormat struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("decode request: %v", err)
		}
		mu.Lock()
		types = append(types, body.ResponseFormat.Type)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if body.ResponseFormat.Type == "json_schema" {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}","type":"internal_server_error","param":null,"code":null}}`)
			return
		}
		if body.ResponseFormat.Schema == nil {
			t.Errorf("json_object request without the schema member")
		}
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	}))
	defer ts.Close()
	var logs strings.Builder
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	c, err := New(Config{BaseURL: ts.URL, Model: "test-model"}, WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("x")
	req.Schema = &Schema{Name: "s", Schema: json.RawMessage(`{"type":"object"}`)}
	// Several first calls at once all meet the refusal: one warning, and
	// only the first line of the server's message in it.
	const calls = 6
	var wg sync.WaitGroup
	modes := make([]string, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			modes[i] = resp.Mode
		}()
	}
	wg.Wait()
	for i, m := range modes {
		if m != ModeJSONObjectSchema {
			t.Errorf("call %d mode: got %s, want %s", i, m, ModeJSONObjectSchema)
		}
	}
	if n := strings.Count(logs.String(), "falling back"); n != 1 {
		t.Errorf("got %d fallback warnings, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "literal_error") {
		t.Errorf("the warning carries the server's whole message: %s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(types); n < calls+1 || n > 2*calls {
		t.Errorf("got %d requests, want between %d and %d", n, calls+1, 2*calls)
	}
	if types[len(types)-1] != "json_object" {
		t.Errorf("last response format sent: got %s, want json_object", types[len(types)-1])
	}
}

// writerFunc is an io.Writer from a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestEmbedInputType(t *testing.T) {
	for _, inputType := range []string{"", "query", "passage"} {
		t.Run("input type "+inputType, func(t *testing.T) {
			var got map[string]json.RawMessage
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Errorf("decode request: %v", err)
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}],"model":"e","usage":{"prompt_tokens":2,"total_tokens":2}}`)
			}))
			defer ts.Close()
			c := newClient(t, ts.URL, Config{InputType: inputType})
			if _, _, err := c.Embed(context.Background(), []string{"hello"}); err != nil {
				t.Fatal(err)
			}
			raw, ok := got["input_type"]
			switch {
			case inputType == "" && ok:
				t.Errorf("input_type sent as %s, want none", raw)
			case inputType != "" && string(raw) != `"`+inputType+`"`:
				t.Errorf("input_type: got %s, want %q", raw, inputType)
			}
			if _, ok := got["input"]; !ok {
				t.Errorf("request %v has no input", got)
			}
		})
	}
}

func TestUnrelatedBadRequestDoesNotFallBack(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	}))
	defer ts.Close()
	c := newClient(t, ts.URL, Config{})
	req := userRequest("x")
	req.Schema = &Schema{Name: "s", Schema: json.RawMessage(`{"type":"object"}`)}
	_, err := c.Chat(context.Background(), req)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.Code != "context_length_exceeded" {
		t.Fatalf("got %v, want a 400 StatusError with code context_length_exceeded", err)
	}
	if got := structuredModes[c.mode.Load()]; got != ModeJSONSchema {
		t.Errorf("mode after an unrelated 400: got %s, want %s", got, ModeJSONSchema)
	}
	if IsRetryable(err) {
		t.Errorf("a 400 is retryable, want not")
	}
	if !IsContextLength(err) {
		t.Errorf("IsContextLength(%v): got false, want true", err)
	}
}

func TestIsContextLength(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"openai and llama.cpp code", &StatusError{StatusCode: 400, Code: "context_length_exceeded", Message: "too long"}, true},
		{"vllm message", fmt.Errorf("chat m: %w", &StatusError{StatusCode: 400, Message: "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens"}), true},
		{"context window", &StatusError{StatusCode: 400, Message: "Requested tokens (9000) exceed context window of 8192"}, true},
		{"other bad request", &StatusError{StatusCode: 400, Message: "unknown field"}, false},
		{"server error", &StatusError{StatusCode: 500, Message: "maximum context length"}, false},
		{"not a status", errors.New("maximum context length"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsContextLength(tt.err); got != tt.want {
				t.Errorf("IsContextLength(%v): got %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name    string
		key     Secret
		wantErr bool
	}{
		{"right key", "sk-right", false},
		{"wrong key", "sk-wrong", true},
		{"no key", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, llmtest.Options{APIKey: "sk-right"})
			c := newClient(t, s.URL(), Config{APIKey: tt.key})
			_, err := c.Chat(context.Background(), userRequest("x"))
			if got := errors.Is(err, ErrAuth); got != tt.wantErr {
				t.Fatalf("errors.Is(%v, ErrAuth): got %v, want %v", err, got, tt.wantErr)
			}
			if tt.wantErr && strings.Contains(err.Error(), string(tt.key)) && tt.key != "" {
				t.Errorf("error %q shows the key", err)
			}
		})
	}
}

func TestNoKeySendsNoAuthorization(t *testing.T) {
	s := newServer(t, llmtest.Options{})
	c := newClient(t, s.URL(), Config{})
	if _, err := c.Chat(context.Background(), userRequest("x")); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization: got %q, want none", got)
	}
}

func TestEmptyRequest(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1/v1", Config{})
	if _, err := c.Chat(context.Background(), Request{}); err == nil {
		t.Error("Chat with no messages: got nil error, want one")
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without a model: got nil error, want one")
	}
}

func TestEmbed(t *testing.T) {
	s := newServer(t, llmtest.Options{EmbeddingDim: 4, Script: []llmtest.Fault{llmtest.ServerError}})
	c := newClient(t, s.URL(), Config{Model: "text-embedding-3-small"})
	rec := &sleepRecorder{}
	e := StackEmbedder(c, StackOptions{Retry: RetryOptions{Sleep: rec.Sleep}, Limits: LimitOptions{MaxConcurrent: 2}})
	inputs := []string{"query: who", "passage: what"}
	got, usage, err := e.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	want := [][]float32{llmtest.Vector(inputs[0], 4), llmtest.Vector(inputs[1], 4)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
	if usage.PromptTokens != 4 {
		t.Errorf("usage: got %d prompt tokens, want 4", usage.PromptTokens)
	}
	if n := len(rec.Waits()); n != 1 {
		t.Errorf("retries: got %d, want 1", n)
	}
	if got, _, err := c.Embed(context.Background(), nil); err != nil || got != nil {
		t.Errorf("Embed(nil): got %v, %v, want nil, nil", got, err)
	}
}

// TestChatExtra: the members of Config.ChatExtra go into every chat
// request's body, beside the client's own (and in json_object+schema mode
// beside the schema); a ChatExtra that is not an object, or names a member
// the client sets, is refused by New.
func TestChatExtra(t *testing.T) {
	schema, err := SchemaFor[verdict]("verdict")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, llmtest.Options{NoJSONSchema: true, Answer: func(llmtest.Request) string { return `{"sufficient":true,"gap_items":[]}` }})
	c := newClient(t, s.URL(), Config{ChatExtra: json.RawMessage(`{"repeat_penalty": 1, "top_k": 0}`)})
	req := userRequest("is it enough?")
	req.Schema = &schema
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	for i, r := range s.Requests() {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if string(body["repeat_penalty"]) != "1" || string(body["top_k"]) != "0" || body["messages"] == nil || body["model"] == nil {
			t.Errorf("request %d body %s: want the extra members beside the client's", i, r.Body)
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"temperature": 0.5}`, `{"max_tokens": 9}`, `{`} {
		if _, err := New(Config{Model: "m", ChatExtra: json.RawMessage(bad)}); err == nil {
			t.Errorf("chat extra %s: got no error, want one", bad)
		}
	}
}
