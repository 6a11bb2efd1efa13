package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/google/go-cmp/cmp"
)

func TestBatchLineMatchesChatBody(t *testing.T) {
	schema := &Schema{Name: "verdict", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`)}
	absent := "<absent>"
	tests := []struct {
		name  string
		model string
		req   Request
		want  map[string]string // members of the body: raw JSON, or absent
	}{
		{
			name: "greedy",
			req:  userRequest("hello"),
			want: map[string]string{"temperature": "0", "seed": absent, "response_format": absent},
		},
		{
			name: "seeded with a schema",
			req: Request{
				Messages:    []Message{{Role: "system", Content: "judge"}, {Role: "user", Content: "is it <ok> & fine?"}},
				Temperature: 0, TopP: 0.9, MaxTokens: 128, Seed: intPtr(0), Schema: schema,
			},
			want: map[string]string{"temperature": "0", "seed": "0", "top_p": "0.9", "max_tokens": "128"},
		},
		{
			name: "sampled",
			req:  Request{Messages: []Message{{Role: "user", Content: "q"}}, Temperature: 0.7, Seed: intPtr(42)},
			want: map[string]string{"temperature": "0.7", "seed": "42"},
		},
		{
			name:  "reasoning model",
			model: "o3-mini",
			req:   Request{Messages: []Message{{Role: "user", Content: "q"}}, MaxTokens: 64, Schema: schema},
			want:  map[string]string{"temperature": absent, "top_p": absent, "max_tokens": absent, "max_completion_tokens": "64"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, llmtest.Options{})
			c := newClient(t, s.URL(), Config{Model: tt.model})
			if _, err := c.Chat(context.Background(), tt.req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			chatBody := s.Requests()[0].Body

			line, err := c.BatchLine("q-1", tt.req)
			if err != nil {
				t.Fatalf("BatchLine: %v", err)
			}
			if bytes.ContainsAny(line, "\r\n") {
				t.Errorf("line has a line break: %q", line)
			}
			var l struct {
				CustomID string          `json:"custom_id"`
				Method   string          `json:"method"`
				URL      string          `json:"url"`
				Body     json.RawMessage `json:"body"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatalf("line is not JSON: %v: %s", err, line)
			}
			if l.CustomID != "q-1" || l.Method != "POST" || l.URL != "/v1/chat/completions" {
				t.Errorf("line head: got %q %q %q, want q-1 POST /v1/chat/completions", l.CustomID, l.Method, l.URL)
			}
			if !bytes.Equal(l.Body, chatBody) {
				t.Errorf("line body differs from the chat body:\n got %s\nwant %s", l.Body, chatBody)
			}
			var members map[string]json.RawMessage
			if err := json.Unmarshal(l.Body, &members); err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.want {
				got, ok := members[k]
				switch {
				case want == absent && ok:
					t.Errorf("%s: got %s, want it absent", k, got)
				case want != absent && string(got) != want:
					t.Errorf("%s: got %s, want %s", k, got, want)
				}
			}
			if tt.req.Schema != nil {
				var rf struct {
					Type       string `json:"type"`
					JSONSchema struct {
						Name   string `json:"name"`
						Strict bool   `json:"strict"`
					} `json:"json_schema"`
				}
				if err := json.Unmarshal(members["response_format"], &rf); err != nil || rf.Type != "json_schema" ||
					rf.JSONSchema.Name != tt.req.Schema.Name || !rf.JSONSchema.Strict {
					t.Errorf("response_format: got %s, want strict json_schema %q", members["response_format"], tt.req.Schema.Name)
				}
			}
		})
	}
}

func TestBatchLineRefuses(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1/v1", Config{})
	if _, err := c.BatchLine("", userRequest("x")); err == nil {
		t.Error("no custom id: got nil error, want one")
	}
	if _, err := c.BatchLine("a", Request{}); err == nil {
		t.Error("no messages: got nil error, want one")
	}
}

// batchInput joins BatchLine lines into an input file.
func batchInput(t *testing.T, c *Client, reqs map[string]Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(reqs)) {
		line, err := c.BatchLine(id, reqs[id])
		if err != nil {
			t.Fatalf("BatchLine %s: %v", id, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// submitBatch uploads input as a batch file named name and creates a
// batch of it.
func submitBatch(t *testing.T, c *Client, name string, input []byte) Batch {
	t.Helper()
	ctx := context.Background()
	fileID, err := c.UploadBatchFile(ctx, name, input)
	if err != nil {
		t.Fatalf("UploadBatchFile: %v", err)
	}
	b, err := c.CreateBatch(ctx, fileID, nil)
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	return b
}

// waitBatch polls until the batch ends; the test server advances a batch
// on every poll, so no time passes.
func waitBatch(t *testing.T, c *Client, b Batch) Batch {
	t.Helper()
	for range 50 {
		if b.Terminal() {
			return b
		}
		var err error
		if b, err = c.GetBatch(context.Background(), b.ID); err != nil {
			t.Fatalf("GetBatch: %v", err)
		}
	}
	t.Fatalf("batch %s never ended (status %s)", b.ID, b.Status)
	return b
}

// results downloads and reads a batch file; "" reads nothing.
func results(t *testing.T, c *Client, fileID string) map[string]BatchResult {
	t.Helper()
	out := map[string]BatchResult{}
	if fileID == "" {
		return out
	}
	data, err := c.FileContent(context.Background(), fileID)
	if err != nil {
		t.Fatalf("FileContent: %v", err)
	}
	err = ReadBatchResults(bytes.NewReader(data), func(r BatchResult) error {
		if _, dup := out[r.CustomID]; dup {
			return fmt.Errorf("custom id %s twice", r.CustomID)
		}
		out[r.CustomID] = r
		return nil
	})
	if err != nil {
		t.Fatalf("ReadBatchResults: %v", err)
	}
	return out
}

func TestBatchRoundTrip(t *testing.T) {
	s := newServer(t, llmtest.Options{Answer: func(r llmtest.Request) string {
		if r.ResponseFormat == "json_schema" {
			return `{"ok":true}`
		}
		return "re: " + r.Messages[len(r.Messages)-1].Content
	}})
	c := newClient(t, s.URL(), Config{Model: "gpt-4o-mini"})
	ctx := context.Background()
	reqs := map[string]Request{
		"q1": userRequest("first"),
		"q2": userRequest("second"),
		"q3": {Messages: []Message{{Role: "user", Content: "third"}}, Seed: intPtr(1),
			Schema: &Schema{Name: "v", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)}},
	}
	fileID, err := c.UploadBatchFile(ctx, "questions.jsonl", batchInput(t, c, reqs))
	if err != nil {
		t.Fatalf("UploadBatchFile: %v", err)
	}
	b, err := c.CreateBatch(ctx, fileID, map[string]string{"run": "r7"})
	if err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	if b.Status != "validating" || b.InputFileID != fileID || b.ID == "" || b.Terminal() {
		t.Errorf("created: got %+v, want a validating batch on %s", b, fileID)
	}
	b = waitBatch(t, c, b)
	want := Batch{ID: b.ID, Status: "completed", InputFileID: fileID, OutputFileID: b.OutputFileID, Total: 3, Completed: 3}
	if diff := cmp.Diff(want, b); diff != "" || b.OutputFileID == "" {
		t.Errorf("finished batch (-want +got):\n%s", diff)
	}

	got := results(t, c, b.OutputFileID)
	if len(got) != 3 {
		t.Fatalf("results: got %d, want 3", len(got))
	}
	for id, want := range map[string]string{"q1": "re: first", "q2": "re: second", "q3": `{"ok":true}`} {
		r := got[id]
		if r.Err != nil {
			t.Errorf("%s: got error %v", id, r.Err)
			continue
		}
		if r.Response.Content != want || r.Response.Model != "gpt-4o-mini" || r.Response.FinishReason != "stop" ||
			r.Response.Mode != ModeJSONSchema || r.Response.Usage.PromptTokens == 0 || r.Response.Usage.CompletionTokens == 0 {
			t.Errorf("%s: got %+v, want content %q with model, usage and mode", id, r.Response, want)
		}
	}

	// What went over the wire.
	var create struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	for _, r := range s.Requests() {
		if r.Path == "/v1/batches" {
			if err := json.Unmarshal(r.Body, &create); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantCreate := create
	wantCreate.InputFileID, wantCreate.Endpoint, wantCreate.CompletionWindow = fileID, "/v1/chat/completions", "24h"
	wantCreate.Metadata = map[string]string{"run": "r7"}
	if diff := cmp.Diff(wantCreate, create); diff != "" {
		t.Errorf("create body (-want +got):\n%s", diff)
	}
	if c := s.Counts(); c.Files != 1 || c.Batches != 1 {
		t.Errorf("server counts: got %+v, want 1 file, 1 batch", c)
	}
}

func TestBatchExpiredAndCancelled(t *testing.T) {
	reqs := map[string]Request{"a": userRequest("1"), "b": userRequest("2"), "c": userRequest("3"), "d": userRequest("4")}
	t.Run("expired", func(t *testing.T) {
		s := newServer(t, llmtest.Options{BatchScript: []llmtest.BatchOutcome{{Status: "expired", Complete: 0.5}}})
		c := newClient(t, s.URL(), Config{})
		b := waitBatch(t, c, submitBatch(t, c, "", batchInput(t, c, reqs)))
		if b.Status != "expired" || b.OutputFileID == "" || b.ErrorFileID == "" || b.Completed != 2 || b.Failed != 2 {
			t.Fatalf("got %+v, want expired with both files, 2 completed, 2 failed", b)
		}
		for id, r := range results(t, c, b.OutputFileID) {
			if r.Err != nil || r.Response.Content != "OK" {
				t.Errorf("output %s: got %+v", id, r)
			}
		}
		failed := results(t, c, b.ErrorFileID)
		if len(failed) != 2 {
			t.Fatalf("error file: got %d lines, want 2", len(failed))
		}
		for id, r := range failed {
			var le *BatchLineError
			if !errors.As(r.Err, &le) || le.Code != "batch_expired" || le.Message == "" {
				t.Errorf("error line %s: got %v, want a BatchLineError batch_expired", id, r.Err)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		s := newServer(t, llmtest.Options{BatchPolls: 10})
		c := newClient(t, s.URL(), Config{})
		b, err := c.CancelBatch(context.Background(), submitBatch(t, c, "in.jsonl", batchInput(t, c, reqs)).ID)
		if err != nil || b.Status != "cancelling" || b.Terminal() {
			t.Fatalf("CancelBatch: got %+v, %v; want cancelling", b, err)
		}
		if b = waitBatch(t, c, b); b.Status != "cancelled" {
			t.Errorf("got %s, want cancelled", b.Status)
		}
	})
	t.Run("failed input", func(t *testing.T) {
		s := newServer(t, llmtest.Options{})
		c := newClient(t, s.URL(), Config{})
		line, _ := c.BatchLine("same", userRequest("x"))
		b := waitBatch(t, c, submitBatch(t, c, "in.jsonl", []byte(string(line)+"\n"+string(line)+"\n")))
		if b.Status != "failed" || len(b.Errors) != 1 || !strings.HasPrefix(b.Errors[0], "line 2: duplicate_custom_id: ") {
			t.Errorf("got %s with errors %q, want failed with line 2: duplicate_custom_id", b.Status, b.Errors)
		}
	})
}

func TestBatchTerminal(t *testing.T) {
	for status, want := range map[string]bool{
		"validating": false, "in_progress": false, "finalizing": false, "cancelling": false,
		"completed": true, "failed": true, "expired": true, "cancelled": true,
	} {
		if got := (Batch{Status: status}).Terminal(); got != want {
			t.Errorf("Terminal(%s): got %v, want %v", status, got, want)
		}
	}
}

// batchOps calls each batch method; setup is how many calls to the server
// the call needs before it (each takes one scripted fault).
var batchOps = []struct {
	name  string
	setup int
	call  func(ctx context.Context, c *Client, fileID, batchID string) error
}{
	{"UploadBatchFile", 0, func(ctx context.Context, c *Client, _, _ string) error {
		_, err := c.UploadBatchFile(ctx, "in.jsonl", []byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"x"}]}}`))
		return err
	}},
	{"CreateBatch", 1, func(ctx context.Context, c *Client, fileID, _ string) error {
		_, err := c.CreateBatch(ctx, fileID, nil)
		return err
	}},
	{"GetBatch", 2, func(ctx context.Context, c *Client, _, batchID string) error {
		_, err := c.GetBatch(ctx, batchID)
		return err
	}},
	{"CancelBatch", 2, func(ctx context.Context, c *Client, _, batchID string) error {
		_, err := c.CancelBatch(ctx, batchID)
		return err
	}},
	{"FileContent", 1, func(ctx context.Context, c *Client, fileID, _ string) error {
		_, err := c.FileContent(ctx, fileID)
		return err
	}},
}

// batchSetup makes the file and batch that a batch op needs.
func batchSetup(t *testing.T, c *Client, setup int) (fileID, batchID string) {
	t.Helper()
	ctx := context.Background()
	if setup >= 1 {
		var err error
		if fileID, err = c.UploadBatchFile(ctx, "in.jsonl", batchInput(t, c, map[string]Request{"a": userRequest("x")})); err != nil {
			t.Fatalf("setup upload: %v", err)
		}
	}
	if setup >= 2 {
		b, err := c.CreateBatch(ctx, fileID, nil)
		if err != nil {
			t.Fatalf("setup create: %v", err)
		}
		batchID = b.ID
	}
	return fileID, batchID
}

func TestBatchCallsRetry(t *testing.T) {
	faults := map[string][]llmtest.Fault{
		"429 then 500":  {llmtest.RateLimited, llmtest.ServerError},
		"503":           {llmtest.Unavailable},
		"truncated":     {llmtest.Truncated},
		"not JSON body": {llmtest.Malformed},
	}
	for _, op := range batchOps {
		for _, name := range slices.Sorted(maps.Keys(faults)) {
			if name == "not JSON body" && op.name == "FileContent" {
				continue // raw bytes: a file may be anything
			}
			fs := faults[name]
			t.Run(op.name+"/"+name, func(t *testing.T) {
				script := append(make([]llmtest.Fault, op.setup), fs...)
				s := newServer(t, llmtest.Options{Script: script, RetryAfter: 2 * time.Second})
				rec := &sleepRecorder{}
				cl, err := New(Config{BaseURL: s.URL(), Model: "m"},
					WithBatchRetry(RetryOptions{Sleep: rec.Sleep, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Second}))
				if err != nil {
					t.Fatal(err)
				}
				fileID, batchID := batchSetup(t, cl, op.setup)
				if err := op.call(context.Background(), cl, fileID, batchID); err != nil {
					t.Fatalf("%s: %v", op.name, err)
				}
				waits := rec.Waits()
				if len(waits) != len(fs) {
					t.Fatalf("retries: got %d (%v), want %d", len(waits), waits, len(fs))
				}
				if fs[0] == llmtest.RateLimited && waits[0] < 2*time.Second {
					t.Errorf("first wait: got %s, want at least the Retry-After of 2s", waits[0])
				}
				if got, want := s.Counts().Requests, op.setup+len(fs)+1; got != want {
					t.Errorf("server requests: got %d, want %d", got, want)
				}
			})
		}
	}
}

func TestBatchCallsGiveUp(t *testing.T) {
	s := newServer(t, llmtest.Options{Script: []llmtest.Fault{llmtest.None, llmtest.None}, ServerError: 1})
	rec := &sleepRecorder{}
	c, err := New(Config{BaseURL: s.URL(), Model: "m"}, WithBatchRetry(RetryOptions{MaxAttempts: 3, Sleep: rec.Sleep}))
	if err != nil {
		t.Fatal(err)
	}
	_, batchID := batchSetup(t, c, 2)
	_, err = c.GetBatch(context.Background(), batchID)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || !strings.Contains(err.Error(), "giving up after 3 attempts") {
		t.Errorf("got %v, want a 500 after 3 attempts", err)
	}
}

// cancelOnRetry is a slog handler that cancels a context when Retry
// announces a retry, which it does just before it starts to wait.
type cancelOnRetry struct{ cancel context.CancelFunc }

func (h cancelOnRetry) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOnRetry) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "retrying model request" {
		h.cancel()
	}
	return nil
}
func (h cancelOnRetry) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h cancelOnRetry) WithGroup(string) slog.Handler      { return h }

func TestBatchCallsStopWaitingWithContext(t *testing.T) {
	// A 429 asks for an hour; the wait must end when the context does.
	s := newServer(t, llmtest.Options{Script: []llmtest.Fault{llmtest.None, llmtest.None, llmtest.RateLimited}, RetryAfter: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := New(Config{BaseURL: s.URL(), Model: "m"},
		WithBatchRetry(RetryOptions{MaxDelay: time.Hour, Logger: slog.New(cancelOnRetry{cancel})}))
	if err != nil {
		t.Fatal(err)
	}
	_, batchID := batchSetup(t, c, 2)
	_, err = c.GetBatch(ctx, batchID)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if n := s.Counts().Requests; n != 3 {
		t.Errorf("server requests: got %d, want 3", n)
	}
}

func TestBatchCallsClientErrors(t *testing.T) {
	for _, op := range batchOps {
		t.Run(op.name, func(t *testing.T) {
			rec := &sleepRecorder{}
			s := newServer(t, llmtest.Options{APIKey: "sk-right"})
			c, err := New(Config{BaseURL: s.URL(), Model: "m", APIKey: "sk-wrong"}, WithBatchRetry(RetryOptions{Sleep: rec.Sleep}))
			if err != nil {
				t.Fatal(err)
			}
			err = op.call(context.Background(), c, "file-x", "batch_x")
			if !errors.Is(err, ErrAuth) {
				t.Errorf("wrong key: got %v, want ErrAuth", err)
			}
			if strings.Contains(fmt.Sprint(err), "sk-wrong") {
				t.Errorf("error %q shows the key", err)
			}
			if w := rec.Waits(); len(w) != 0 {
				t.Errorf("retries on a 401: got %d, want none", len(w))
			}
		})
	}
	t.Run("unknown ids", func(t *testing.T) {
		rec := &sleepRecorder{}
		s := newServer(t, llmtest.Options{})
		c, err := New(Config{BaseURL: s.URL(), Model: "m"}, WithBatchRetry(RetryOptions{Sleep: rec.Sleep}))
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range batchOps[1:] {
			err := op.call(context.Background(), c, "file-nope", "batch_nope")
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
				t.Errorf("%s: got %v, want a 404 StatusError", op.name, err)
			}
		}
		if w := rec.Waits(); len(w) != 0 {
			t.Errorf("retries on 404: got %d, want none", len(w))
		}
	})
}

// Lines as OpenAI writes them to output and error files.
const (
	okLine = `{"id": "batch_req_123", "custom_id": "request-2", "response": {"status_code": 200, "request_id": "req_123", ` +
		`"body": {"id": "chatcmpl-123", "object": "chat.completion", "created": 1711652795, "model": "gpt-3.5-turbo-0125", ` +
		`"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."}, "logprobs": null, "finish_reason": "stop"}], ` +
		`"usage": {"prompt_tokens": 22, "completion_tokens": 2, "total_tokens": 24}, "system_fingerprint": "fp_123"}}, "error": null}`
	serverErrorLine = `{"id":"batch_req_456","custom_id":"request-3","response":{"status_code":500,"request_id":"req_456",` +
		`"body":{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}},"error":null}`
	badRequestLine = `{"id":"batch_req_457","custom_id":"request-4","response":{"status_code":400,"request_id":"req_457",` +
		`"body":{"error":{"message":"Invalid 'messages': empty array.","type":"invalid_request_error","param":"messages","code":"empty_array"}}},"error":null}`
	expiredLine = `{"id":"batch_req_789","custom_id":"request-5","response":null,` +
		`"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}`
)

func TestReadBatchResults(t *testing.T) {
	hello := Response{Content: "Hello.", FinishReason: "stop", Model: "gpt-3.5-turbo-0125",
		Usage: Usage{PromptTokens: 22, CompletionTokens: 2}, Mode: ModeJSONSchema}
	tests := []struct {
		name    string
		input   string
		want    []BatchResult
		wantErr string // a substring; "" for none
	}{
		{name: "empty", input: ""},
		{name: "answered", input: okLine + "\n", want: []BatchResult{{CustomID: "request-2", Response: hello}}},
		{name: "no final newline, CRLF and blank lines", input: "\r\n" + okLine + "\r\n\n" + expiredLine, want: []BatchResult{
			{CustomID: "request-2", Response: hello},
			{CustomID: "request-5", Err: &BatchLineError{Code: "batch_expired", Message: "This request could not be executed before the completion window expired."}},
		}},
		{name: "500 body", input: serverErrorLine, want: []BatchResult{{CustomID: "request-3", Err: &StatusError{
			StatusCode: 500, Message: "The server had an error while processing your request.", Type: "server_error"}}}},
		{name: "400 body with a code", input: badRequestLine, want: []BatchResult{{CustomID: "request-4", Err: &StatusError{
			StatusCode: 400, Message: "Invalid 'messages': empty array.", Type: "invalid_request_error", Code: "empty_array"}}}},
		{name: "error body that is not an error object", input: `{"custom_id":"x","response":{"status_code":502,"body":"bad gateway"},"error":null}`,
			want: []BatchResult{{CustomID: "x", Err: &StatusError{StatusCode: 502, Message: `"bad gateway"`}}}},
		{name: "error and status", input: `{"custom_id":"x","response":{"status_code":429,"body":{}},"error":{"code":"rate_limit_exceeded","message":"slow down"}}`,
			want: []BatchResult{{CustomID: "x", Err: &BatchLineError{Code: "rate_limit_exceeded", Message: "slow down", Status: 429}}}},
		{name: "200 without choices", input: `{"custom_id":"x","response":{"status_code":200,"body":{"object":"chat.completion","choices":[]}},"error":null}`,
			want: []BatchResult{{CustomID: "x", Err: &BodyError{}}}},
		{name: "200 with a body that is not an object", input: `{"custom_id":"x","response":{"status_code":200,"body":[1]},"error":null}`,
			want: []BatchResult{{CustomID: "x", Err: &BodyError{}}}},
		{name: "neither response nor error", input: `{"custom_id":"x","response":null,"error":null}`,
			want: []BatchResult{{CustomID: "x", Err: &BodyError{}}}},
		{name: "malformed line", input: okLine + "\n" + `{"custom_id": "y", "response": {` + "\n" + expiredLine,
			want: []BatchResult{{CustomID: "request-2", Response: hello}}, wantErr: "line 2"},
		{name: "missing custom_id", input: "\n" + `{"id":"batch_req_1","response":null,"error":{"code":"batch_expired","message":"m"}}`,
			wantErr: "line 2: no custom_id"},
		{name: "custom_id not a string", input: `{"custom_id":7,"response":null,"error":null}`, wantErr: "line 1"},
		{name: "JSON but not an object", input: `null`, wantErr: "line 1: no custom_id"},
	}
	opts := cmp.Comparer(func(a, b *BodyError) bool { return (a == nil) == (b == nil) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []BatchResult
			err := ReadBatchResults(strings.NewReader(tt.input), func(r BatchResult) error {
				got = append(got, r)
				return nil
			})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got error %v, want one with %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, opts); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadBatchResultsStopsAtCallbackError(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := ReadBatchResults(strings.NewReader(okLine+"\n"+expiredLine+"\n"), func(BatchResult) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("got %v after %d calls, want stop after 1", err, calls)
	}
}

func FuzzReadBatchResults(f *testing.F) {
	for _, seed := range []string{
		"", okLine, serverErrorLine, badRequestLine, expiredLine,
		okLine + "\n" + expiredLine + "\n",
		`{"custom_id":"x","response":{"status_code":200,"body":{"choices":[{"message":{"content":null}}]}}}`,
		`{"custom_id":"x","response":{"status_code":-1,"body":null},"error":{}}`,
		`{"custom_id": "y", "response": {`,
		"\n\r\n \t\n",
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := ReadBatchResults(bytes.NewReader(data), func(r BatchResult) error {
			n++
			if r.CustomID == "" {
				t.Errorf("result without a custom id: %+v", r)
			}
			if r.Err == nil && r.Response.Mode != ModeJSONSchema {
				t.Errorf("result with neither an answer nor an error: %+v", r)
			}
			return nil
		})
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Errorf("error does not name the line: %v", err)
		}
		if lines := bytes.Count(data, []byte("\n")) + 1; n > lines {
			t.Errorf("%d results from %d lines", n, lines)
		}
	})
}
