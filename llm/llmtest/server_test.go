package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func post(t *testing.T, s *Server, path, body string, header map[string]string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(s.URL(), "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hello there"}],"temperature":0}`

func TestChatWireFormat(t *testing.T) {
	s := NewServer(Options{Text: "hi"})
	defer s.Close()
	resp, body, err := post(t, s, "/v1/chat/completions", chatBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %s, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if got.ID == "" || got.Object != "chat.completion" || got.Created == 0 || got.Model != "m" {
		t.Errorf("envelope: got %+v", got)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" || got.Choices[0].Message.Content != "hi" || got.Choices[0].FinishReason != "stop" {
		t.Errorf("choices: got %+v", got.Choices)
	}
	if got.Usage.Prompt != 2 || got.Usage.Completion != 1 || got.Usage.Total != 3 {
		t.Errorf("usage: got %+v, want 2+1=3", got.Usage)
	}
	recs := s.Requests()
	if len(recs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(recs))
	}
	if raw, ok := recs[0].Member("temperature"); !ok || string(raw) != "0" {
		t.Errorf("recorded temperature: got %s, %v, want 0", raw, ok)
	}
	if diff := cmp.Diff([]Message{{Role: "user", Content: "hello there"}}, recs[0].Messages); diff != "" {
		t.Errorf("recorded messages (-want +got):\n%s", diff)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		fault      Fault
		wantStatus int
		wantErr    bool // reading the body fails
		check      func(t *testing.T, h http.Header, body []byte)
	}{
		{fault: RateLimited, wantStatus: 429, check: func(t *testing.T, h http.Header, body []byte) {
			if got := h.Get("Retry-After"); got != "2" {
				t.Errorf("Retry-After: got %q, want 2", got)
			}
			if !strings.Contains(string(body), `"code":"rate_limit_exceeded"`) {
				t.Errorf("body: got %s, want an OpenAI rate-limit error", body)
			}
		}},
		{fault: ServerError, wantStatus: 500},
		{fault: Unavailable, wantStatus: 503},
		{fault: Malformed, wantStatus: 200, check: func(t *testing.T, _ http.Header, body []byte) {
			if json.Valid(body) {
				t.Errorf("body %s is valid JSON, want malformed", body)
			}
		}},
		{fault: Truncated, wantStatus: 200, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.fault.String(), func(t *testing.T) {
			s := NewServer(Options{Script: []Fault{tt.fault}, RetryAfter: 1500 * time.Millisecond})
			defer s.Close()
			resp, body, err := post(t, s, "/v1/chat/completions", chatBody, nil)
			if resp == nil {
				t.Fatalf("no response: %v", err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := err != nil; got != tt.wantErr {
				t.Errorf("body read error: got %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("body read error: got %v, want unexpected EOF", err)
			}
			if tt.check != nil {
				tt.check(t, resp.Header, body)
			}
			if got := s.Requests()[0].Fault; got != tt.fault {
				t.Errorf("recorded fault: got %s, want %s", got, tt.fault)
			}
			// The script is spent: the next request is answered.
			if resp, _, err := post(t, s, "/v1/chat/completions", chatBody, nil); err != nil || resp.StatusCode != 200 {
				t.Errorf("second request: got %v, %v, want 200", resp, err)
			}
		})
	}
}

func TestHangEndsWithClientAndWithClose(t *testing.T) {
	hung := make(chan struct{}, 2)
	s := NewServer(Options{Hang: 1, Observe: func(Request) { hung <- struct{}{} }})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(chatBody))
	done := make(chan error, 1)
	go func() {
		resp, err := s.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-hung
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client: got %v, want context.Canceled", err)
	}

	// A request still hanging when the server closes ends too, and Close
	// returns (it waits for every handler).
	go func() {
		resp, err := s.Client().Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(chatBody))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-hung
	s.Close()
	if err := <-done; err == nil {
		t.Errorf("hanging request after Close: got nil error, want one")
	}
	if got := s.Counts().Hang; got != 2 {
		t.Errorf("hangs: got %d, want 2", got)
	}
}

func TestRatesAreSeeded(t *testing.T) {
	run := func() []Fault {
		s := NewServer(Options{Seed: 9, RateLimited: 0.2, ServerError: 0.2, Malformed: 0.2})
		defer s.Close()
		for range 30 {
			post(t, s, "/v1/chat/completions", chatBody, nil)
		}
		var fs []Fault
		for _, r := range s.Requests() {
			fs = append(fs, r.Fault)
		}
		return fs
	}
	a, b := run(), run()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different faults (-first +second):\n%s", diff)
	}
	n := 0
	for _, f := range a {
		if f != None {
			n++
		}
	}
	if n == 0 || n == len(a) {
		t.Errorf("faults: got %d of %d, want some but not all", n, len(a))
	}
}

func TestAuthAndRouting(t *testing.T) {
	s := NewServer(Options{APIKey: "sk-x"})
	defer s.Close()
	tests := []struct {
		name, path, auth string
		want             int
	}{
		{"no key", "/v1/chat/completions", "", 401},
		{"wrong key", "/v1/chat/completions", "Bearer sk-y", 401},
		{"right key", "/v1/chat/completions", "Bearer sk-x", 200},
		{"unknown path", "/v1/completions", "Bearer sk-x", 404},
	}
	for _, tt := range tests {
		resp, _, err := post(t, s, tt.path, chatBody, map[string]string{"Authorization": tt.auth})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	c := s.Counts()
	if c.Unauthorized != 2 || c.OK != 1 || c.NotFound != 1 {
		t.Errorf("counts: got %+v, want 2 unauthorized, 1 ok, 1 not found", c)
	}
}

func TestResponseFormats(t *testing.T) {
	schema := `{"type":"object","properties":{"sufficient":{"type":"boolean"},"ids":{"type":"array","items":{"type":"integer"}}},"required":["sufficient","ids"],"additionalProperties":false}`
	withFormat := func(f string) string {
		return `{"model":"m","messages":[{"role":"user","content":"q"}],"response_format":` + f + `}`
	}
	jsonSchema := withFormat(`{"type":"json_schema","json_schema":{"name":"v","strict":true,"schema":` + schema + `}}`)
	jsonObject := withFormat(`{"type":"json_object"}`)
	tests := []struct {
		name        string
		opts        Options
		body        string
		wantStatus  int
		wantContent string
	}{
		{"schema instance", Options{}, jsonSchema, 200, `{"ids":[],"sufficient":false}`},
		{"json object", Options{}, jsonObject, 200, `{}`},
		{"no json_schema", Options{NoJSONSchema: true}, jsonSchema, 400, ""},
		{"json object still fine", Options{NoJSONSchema: true}, jsonObject, 200, `{}`},
		{"no json_object", Options{NoJSONObject: true}, jsonObject, 400, ""},
		{"hook wins", Options{Answer: func(r Request) string { return "format " + r.ResponseFormat }}, jsonSchema, 200, "format json_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(tt.opts)
			defer s.Close()
			resp, body, err := post(t, s, "/v1/chat/completions", tt.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (%s)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus != 200 {
				if !strings.Contains(string(body), "response_format") {
					t.Errorf("error body %s does not name response_format", body)
				}
				return
			}
			var got struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			json.Unmarshal(body, &got)
			if got.Choices[0].Message.Content != tt.wantContent {
				t.Errorf("content: got %s, want %s", got.Choices[0].Message.Content, tt.wantContent)
			}
		})
	}
}

func TestEmbeddings(t *testing.T) {
	s := NewServer(Options{EmbeddingDim: 3})
	defer s.Close()
	for _, body := range []string{`{"model":"e","input":"one"}`, `{"model":"e","input":["one","two"]}`} {
		resp, b, err := post(t, s, "/v1/embeddings", body, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: got %v, %v", body, resp, err)
		}
		var got struct {
			Object string `json:"object"`
			Data   []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Object != "list" || len(got.Data) == 0 {
			t.Fatalf("got %s", b)
		}
		if diff := cmp.Diff(Vector("one", 3), got.Data[0].Embedding); diff != "" {
			t.Errorf("vector (-want +got):\n%s", diff)
		}
	}
	if resp, _, _ := post(t, s, "/v1/embeddings", `{"model":"e","input":[]}`, nil); resp.StatusCode != 400 {
		t.Errorf("empty input: got %d, want 400", resp.StatusCode)
	}
}

func TestInstance(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"enum and nullable", `{"type":"object","properties":{"c":{"type":"string","enum":["bridge_entity","other"]},"n":{"type":["null","integer"]}},"required":["c","n"]}`, `{"c":"bridge_entity","n":0}`},
		{"ref", `{"$ref":"#/$defs/V","$defs":{"V":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`, `{"ok":false}`},
		{"min items and length", `{"type":"array","minItems":2,"items":{"type":"string","minLength":3}}`, `["xxx","xxx"]`},
		{"optional left out", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{}`},
		{"anyOf", `{"anyOf":[{"type":"integer","minimum":5},{"type":"null"}]}`, `5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Instance(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := Instance(json.RawMessage(`{"$ref":"#/$defs/R","$defs":{"R":{"$ref":"#/$defs/R"}}}`)); err == nil {
		t.Error("endless $ref: got nil error, want one")
	}
}
