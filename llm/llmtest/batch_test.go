package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/distill-rag/distill/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

// call sends one request with plain net/http and returns the status and
// body.
func call(t *testing.T, s *Server, method, path, contentType string, body []byte, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/v1")+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, b := testkit.Do(t, s.Client(), req)
	return resp.StatusCode, resp.Header, b
}

// multipartUpload is the body of POST /v1/files as OpenAI's clients send it.
func multipartUpload(t *testing.T, purpose, name string, content []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if purpose != "" {
		if err := mw.WriteField("purpose", purpose); err != nil {
			t.Fatal(err)
		}
	}
	if name != "" {
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(content)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

type wireFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

type wireBatch struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	Endpoint         string  `json:"endpoint"`
	Status           string  `json:"status"`
	InputFileID      string  `json:"input_file_id"`
	CompletionWindow string  `json:"completion_window"`
	OutputFileID     *string `json:"output_file_id"`
	ErrorFileID      *string `json:"error_file_id"`
	CreatedAt        int64   `json:"created_at"`
	RequestCounts    struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
	Metadata map[string]string `json:"metadata"`
	Errors   *struct {
		Object string `json:"object"`
		Data   []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Line    *int   `json:"line"`
		} `json:"data"`
	} `json:"errors"`
}

// batchKeys are the members every batch object carries, null or not.
var batchKeys = []string{"id", "object", "endpoint", "errors", "input_file_id", "completion_window", "status",
	"output_file_id", "error_file_id", "created_at", "in_progress_at", "expires_at", "finalizing_at",
	"completed_at", "failed_at", "expired_at", "cancelling_at", "cancelled_at", "request_counts", "metadata"}

// decodeOK decodes the answer of a call that must have succeeded.
func decodeOK[T any](t *testing.T, what string, status int, body []byte) T {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("%s: got %d (%s), want 200", what, status, body)
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
	return v
}

// decodeObject is decodeOK for an API object that carries every one of
// keys, null or not.
func decodeObject[T any](t *testing.T, what string, status int, body []byte, keys []string) T {
	t.Helper()
	m := decodeOK[map[string]json.RawMessage](t, what, status, body)
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: object has no %q: %s", what, k, body)
		}
	}
	return decodeOK[T](t, what, status, body)
}

func decodeBatch(t *testing.T, status int, body []byte) wireBatch {
	t.Helper()
	return decodeObject[wireBatch](t, "batch call", status, body, batchKeys)
}

func uploadFile(t *testing.T, s *Server, content string) string {
	t.Helper()
	return upload(t, s, "batch", "input.jsonl", []byte(content)).ID
}

// upload posts content as a file of the purpose and returns the file
// object the server answers with.
func upload(t *testing.T, s *Server, purpose, name string, content []byte) wireFile {
	t.Helper()
	ct, body := multipartUpload(t, purpose, name, content)
	status, _, b := call(t, s, http.MethodPost, "/v1/files", ct, body, nil)
	return decodeOK[wireFile](t, "upload", status, b)
}

func createBatch(t *testing.T, s *Server, fileID string) wireBatch {
	t.Helper()
	body := `{"input_file_id":"` + fileID + `","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":null}`
	status, _, b := call(t, s, http.MethodPost, "/v1/batches", "application/json", []byte(body), nil)
	return decodeBatch(t, status, b)
}

func pollBatch(t *testing.T, s *Server, id string) wireBatch {
	t.Helper()
	status, _, b := call(t, s, http.MethodGet, "/v1/batches/"+id, "", nil, nil)
	return decodeBatch(t, status, b)
}

// runBatch uploads lines, creates a batch and polls it until it ends.
func runBatch(t *testing.T, s *Server, lines ...string) wireBatch {
	t.Helper()
	b := createBatch(t, s, uploadFile(t, s, strings.Join(lines, "\n")+"\n"))
	for range 100 {
		switch b = pollBatch(t, s, b.ID); b.Status {
		case "completed", "failed", "expired", "cancelled":
			return b
		}
	}
	t.Fatalf("batch %s never ended", b.ID)
	return b
}

// batchInput is one line of an input file.
func batchInput(id, body string) string {
	return `{"custom_id":"` + id + `","method":"POST","url":"/v1/chat/completions","body":` + body + `}`
}

func chatLine(id, text string) string {
	return batchInput(id, `{"model":"m","messages":[{"role":"user","content":"`+text+`"}],"temperature":0}`)
}

// wireLine is one line of an output or error file.
type wireLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func download(t *testing.T, s *Server, id *string) []wireLine {
	t.Helper()
	if id == nil {
		return nil
	}
	status, _, b := call(t, s, http.MethodGet, "/v1/files/"+*id+"/content", "", nil, nil)
	if status != http.StatusOK {
		t.Fatalf("content of %s: got %d (%s), want 200", *id, status, b)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("file %s does not end in a newline", *id)
	}
	var out []wireLine
	for _, raw := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var l wireLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("file %s: line %s: %v", *id, raw, err)
		}
		// Every line has all four members.
		var m map[string]json.RawMessage
		json.Unmarshal(raw, &m)
		for _, k := range []string{"id", "custom_id", "response", "error"} {
			if _, ok := m[k]; !ok {
				t.Errorf("file %s: line has no %q: %s", *id, k, raw)
			}
		}
		out = append(out, l)
	}
	return out
}

func TestFilesWireFormat(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	content := []byte(chatLine("a", "hi") + "\n")
	f := upload(t, s, "batch", "in.jsonl", content)
	if !strings.HasPrefix(f.ID, "file-") || f.CreatedAt == 0 {
		t.Errorf("file object: got id %q created_at %d, want file-... and a time", f.ID, f.CreatedAt)
	}
	want := wireFile{ID: f.ID, Object: "file", Bytes: len(content), CreatedAt: f.CreatedAt, Filename: "in.jsonl", Purpose: "batch"}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("file object (-want +got):\n%s", diff)
	}

	status, _, b := call(t, s, http.MethodGet, "/v1/files/"+f.ID, "", nil, nil)
	var again wireFile
	if err := json.Unmarshal(b, &again); status != http.StatusOK || err != nil || again != f {
		t.Errorf("GET file: got %d %+v (%v), want 200 %+v", status, again, err, f)
	}
	status, _, b = call(t, s, http.MethodGet, "/v1/files/"+f.ID+"/content", "", nil, nil)
	if status != http.StatusOK || !bytes.Equal(b, content) {
		t.Errorf("content: got %d %q, want 200 %q", status, b, content)
	}
	if got, ok := s.File(f.ID); !ok || !bytes.Equal(got, content) {
		t.Errorf("Server.File: got %q %v, want %q", got, ok, content)
	}
	if c := s.Counts(); c.Files != 1 || c.OK != 3 {
		t.Errorf("counts: got %+v, want 1 file and 3 ok", c)
	}
}

func TestFilesErrors(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	noPurposeType, noPurpose := multipartUpload(t, "", "in.jsonl", []byte("{}"))
	badPurposeType, badPurpose := multipartUpload(t, "bananas", "in.jsonl", []byte("{}"))
	noFileType, noFile := multipartUpload(t, "batch", "", nil)
	tests := []struct {
		name, method, path, ctype string
		body                      []byte
		want                      int
		param                     string
	}{
		{"no purpose", "POST", "/v1/files", noPurposeType, noPurpose, 400, "purpose"},
		{"unknown purpose", "POST", "/v1/files", badPurposeType, badPurpose, 400, "purpose"},
		{"no file", "POST", "/v1/files", noFileType, noFile, 400, "file"},
		{"not multipart", "POST", "/v1/files", "application/json", []byte(`{}`), 400, ""},
		{"unknown file", "GET", "/v1/files/file-nope", "", nil, 404, "id"},
		{"unknown content", "GET", "/v1/files/file-nope/content", "", nil, 404, "id"},
		{"list files", "GET", "/v1/files", "", nil, 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, b := call(t, s, tt.method, tt.path, tt.ctype, tt.body, nil)
			if status != tt.want {
				t.Fatalf("got %d (%s), want %d", status, b, tt.want)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" {
				t.Fatalf("error body: got %s, want an OpenAI error object", b)
			}
			if tt.param != "" && (e.Error.Param == nil || *e.Error.Param != tt.param) {
				t.Errorf("param: got %v, want %q", e.Error.Param, tt.param)
			}
		})
	}
}

func TestBatchLifecycle(t *testing.T) {
	schema := `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`
	for _, polls := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("BatchPolls=%d", polls), func(t *testing.T) {
			s := NewServer(Options{BatchPolls: polls, Text: "plain answer"})
			defer s.Close()
			fileID := uploadFile(t, s, strings.Join([]string{
				chatLine("q1", "first question"),
				batchInput("q2", `{"model":"m","messages":[{"role":"user","content":"second"}],`+
					`"response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":`+schema+`}}}`),
				"",
				chatLine("q3", "third"),
			}, "\n"))
			body := `{"input_file_id":"` + fileID + `","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"run":"r1"}}`
			status, _, raw := call(t, s, http.MethodPost, "/v1/batches", "application/json", []byte(body), nil)
			b := decodeBatch(t, status, raw)
			if !strings.HasPrefix(b.ID, "batch_") || b.Object != "batch" || b.Status != "validating" ||
				b.Endpoint != "/v1/chat/completions" || b.CompletionWindow != "24h" || b.InputFileID != fileID ||
				b.OutputFileID != nil || b.ErrorFileID != nil || b.Errors != nil || b.CreatedAt == 0 {
				t.Errorf("created batch: got %s", raw)
			}
			if diff := cmp.Diff(map[string]string{"run": "r1"}, b.Metadata); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}

			statuses := []string{b.Status}
			for b.Status != "completed" && len(statuses) < 20 {
				b = pollBatch(t, s, b.ID)
				statuses = append(statuses, b.Status)
			}
			want := []string{"validating", "in_progress"}
			for range max(1, polls) - 1 {
				want = append(want, "in_progress")
			}
			want = append(want, "completed")
			if diff := cmp.Diff(want, statuses); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if b.RequestCounts.Total != 3 || b.RequestCounts.Completed != 3 || b.RequestCounts.Failed != 0 {
				t.Errorf("request counts: got %+v, want 3 total, 3 completed", b.RequestCounts)
			}
			if b.OutputFileID == nil || b.ErrorFileID != nil {
				t.Fatalf("files: got output %v error %v, want output only", b.OutputFileID, b.ErrorFileID)
			}
			// Further polls leave a finished batch as it is.
			if again := pollBatch(t, s, b.ID); again.Status != "completed" || *again.OutputFileID != *b.OutputFileID {
				t.Errorf("poll after the end: got %+v", again)
			}

			got := map[string]string{}
			for _, l := range download(t, s, b.OutputFileID) {
				if l.Response == nil || l.Response.StatusCode != 200 || l.Error != nil ||
					!strings.HasPrefix(l.ID, "batch_req_") || !strings.HasPrefix(l.Response.RequestID, "req_") {
					t.Fatalf("output line %+v: want a 200 response and no error", l)
				}
				var cc struct {
					Object  string `json:"object"`
					Model   string `json:"model"`
					Choices []struct {
						Message struct {
							Content string `json:"content"`
						} `json:"message"`
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
					Usage map[string]int `json:"usage"`
				}
				if err := json.Unmarshal(l.Response.Body, &cc); err != nil || cc.Object != "chat.completion" ||
					len(cc.Choices) != 1 || cc.Model != "m" || cc.Usage["total_tokens"] == 0 {
					t.Fatalf("output body %s: want a chat.completion with usage (%v)", l.Response.Body, err)
				}
				got[l.CustomID] = cc.Choices[0].Message.Content
			}
			wantContent := map[string]string{"q1": "plain answer", "q2": `{"ok":false}`, "q3": "plain answer"}
			if diff := cmp.Diff(wantContent, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			info := s.Batches()
			if len(info) != 1 || info[0].Status != "completed" || info[0].Lines != 3 || info[0].Completed != 3 ||
				info[0].OutputFileID != *b.OutputFileID || info[0].Metadata["run"] != "r1" {
				t.Errorf("Batches: got %+v", info)
			}
		})
	}
}

func TestBatchInputValidation(t *testing.T) {
	good := chatLine("a", "hi")
	tests := []struct {
		name     string
		content  string
		wantCode string
		wantLine int // 0: no line
	}{
		{"not JSON", good + "\n{not json", "invalid_json_line", 2},
		{"no custom_id", `{"method":"POST","url":"/v1/chat/completions","body":{}}`, "missing_required_parameter", 1},
		{"duplicate custom_id", good + "\n" + good, "duplicate_custom_id", 2},
		{"wrong method", `{"custom_id":"a","method":"GET","url":"/v1/chat/completions","body":{}}`, "invalid_method", 1},
		{"wrong url", `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{}}`, "mismatched_endpoint", 1},
		{"body not an object", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":"x"}`, "invalid_request", 1},
		{"two models", good + "\n" + batchInput("b", `{"model":"other","messages":[{"role":"user","content":"x"}]}`), "mismatched_model", 2},
		{"empty file", "\n\n", "empty_file", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer(Options{})
			defer s.Close()
			b := createBatch(t, s, uploadFile(t, s, tt.content))
			if b.Status != "validating" {
				t.Fatalf("created: got status %s, want validating", b.Status)
			}
			b = pollBatch(t, s, b.ID)
			if b.Status != "failed" || b.Errors == nil || b.Errors.Object != "list" || len(b.Errors.Data) == 0 {
				t.Fatalf("after validation: got status %s errors %+v, want failed with a list", b.Status, b.Errors)
			}
			e := b.Errors.Data[0]
			gotLine := 0
			if e.Line != nil {
				gotLine = *e.Line
			}
			if e.Code != tt.wantCode || gotLine != tt.wantLine || e.Message == "" {
				t.Errorf("error: got %s at line %d (%q), want %s at line %d", e.Code, gotLine, e.Message, tt.wantCode, tt.wantLine)
			}
			if b.OutputFileID != nil || b.ErrorFileID != nil || b.RequestCounts.Total != 0 {
				t.Errorf("failed batch: got %+v, want no files and no requests", b)
			}
			if info := s.Batches(); info[0].Lines != 0 {
				t.Errorf("Batches: got %d lines, want 0", info[0].Lines)
			}
		})
	}
}

func TestBatchCreateErrors(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	fileID := uploadFile(t, s, chatLine("a", "hi"))
	ct, body := multipartUpload(t, "fine-tune", "train.jsonl", []byte("{}"))
	_, _, raw := call(t, s, http.MethodPost, "/v1/files", ct, body, nil)
	var ft wireFile
	json.Unmarshal(raw, &ft)
	create := func(file, endpoint, window, metadata string) string {
		return `{"input_file_id":"` + file + `","endpoint":"` + endpoint + `","completion_window":"` + window + `","metadata":` + metadata + `}`
	}
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown input file", "POST", "/v1/batches", create("file-nope", "/v1/chat/completions", "24h", "null"), 404},
		{"no input file", "POST", "/v1/batches", create("", "/v1/chat/completions", "24h", "null"), 400},
		{"input file not for batches", "POST", "/v1/batches", create(ft.ID, "/v1/chat/completions", "24h", "null"), 400},
		{"other endpoint", "POST", "/v1/batches", create(fileID, "/v1/embeddings", "24h", "null"), 400},
		{"other window", "POST", "/v1/batches", create(fileID, "/v1/chat/completions", "1h", "null"), 400},
		{"metadata not strings", "POST", "/v1/batches", create(fileID, "/v1/chat/completions", "24h", `{"n":1}`), 400},
		{"not JSON", "POST", "/v1/batches", "{", 400},
		{"unknown batch", "GET", "/v1/batches/batch_nope", "", 404},
		{"cancel unknown batch", "POST", "/v1/batches/batch_nope/cancel", "", 404},
		{"list batches", "GET", "/v1/batches", "", 405},
		{"post to a batch", "POST", "/v1/batches/batch_nope", "", 405},
		{"unknown path", "GET", "/v1/batches/x/y", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, b := call(t, s, tt.method, tt.path, "application/json", []byte(tt.body), nil)
			if status != tt.want {
				t.Errorf("got %d (%s), want %d", status, b, tt.want)
			}
		})
	}
	if n := len(s.Batches()); n != 0 {
		t.Errorf("batches: got %d, want none", n)
	}
}

func TestBatchOutcomes(t *testing.T) {
	lines := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = chatLine(fmt.Sprintf("q%d", i), "question")
		}
		return out
	}
	type fate struct {
		status int    // response status code, 0 for none
		code   string // error code, "" for none
	}
	tests := []struct {
		name       string
		outcome    BatchOutcome
		opts       Options
		lines      []string
		wantStatus string
		wantOut    map[string]fate
		wantErr    map[string]fate
	}{
		{
			name:       "expired half way",
			outcome:    BatchOutcome{Status: "expired", Complete: 0.5},
			lines:      lines(4),
			wantStatus: "expired",
			wantOut:    map[string]fate{"q0": {200, ""}, "q1": {200, ""}},
			wantErr:    map[string]fate{"q2": {0, "batch_expired"}, "q3": {0, "batch_expired"}},
		},
		{
			name:       "expired before any",
			outcome:    BatchOutcome{Status: "expired"},
			lines:      lines(2),
			wantStatus: "expired",
			wantErr:    map[string]fate{"q0": {0, "batch_expired"}, "q1": {0, "batch_expired"}},
		},
		{
			name:       "every line a 500",
			outcome:    BatchOutcome{LineErrorRate: 1},
			lines:      lines(2),
			wantStatus: "completed",
			wantErr:    map[string]fate{"q0": {500, ""}, "q1": {500, ""}},
		},
		{
			name:       "cancelled with a quarter done",
			outcome:    BatchOutcome{Status: "cancelled", Complete: 0.25},
			lines:      lines(4),
			wantStatus: "cancelled",
			wantOut:    map[string]fate{"q0": {200, ""}},
		},
		{
			name:    "bad bodies and refused formats are 400 lines",
			opts:    Options{NoJSONSchema: true},
			outcome: BatchOutcome{},
			lines: []string{
				chatLine("ok", "x"),
				batchInput("empty", `{"model":"m","messages":[]}`),
				batchInput("schema", `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"}}}}`),
			},
			wantStatus: "completed",
			wantOut:    map[string]fate{"ok": {200, ""}},
			wantErr:    map[string]fate{"empty": {400, ""}, "schema": {400, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.BatchScript = []BatchOutcome{tt.outcome}
			s := NewServer(opts)
			defer s.Close()
			b := runBatch(t, s, tt.lines...)
			if b.Status != tt.wantStatus {
				t.Fatalf("status: got %s, want %s", b.Status, tt.wantStatus)
			}
			fates := func(ls []wireLine) map[string]fate {
				if len(ls) == 0 {
					return nil
				}
				m := map[string]fate{}
				for _, l := range ls {
					var f fate
					if l.Response != nil {
						f.status = l.Response.StatusCode
						if f.status != 200 {
							var e struct {
								Error struct {
									Message string `json:"message"`
								} `json:"error"`
							}
							if json.Unmarshal(l.Response.Body, &e); e.Error.Message == "" {
								t.Errorf("line %s: error body %s has no message", l.CustomID, l.Response.Body)
							}
						}
					}
					if l.Error != nil {
						f.code = l.Error.Code
						if l.Error.Message == "" {
							t.Errorf("line %s: error without a message", l.CustomID)
						}
					}
					m[l.CustomID] = f
				}
				return m
			}
			if diff := cmp.Diff(tt.wantOut, fates(download(t, s, b.OutputFileID)), cmp.AllowUnexported(fate{})); diff != "" {
				t.Errorf("output file (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErr, fates(download(t, s, b.ErrorFileID)), cmp.AllowUnexported(fate{})); diff != "" {
				t.Errorf("error file (-want +got):\n%s", diff)
			}
			if b.RequestCounts.Completed != len(tt.wantOut) || b.RequestCounts.Failed != len(tt.wantErr) || b.RequestCounts.Total != len(tt.lines) {
				t.Errorf("request counts: got %+v, want %d completed, %d failed of %d",
					b.RequestCounts, len(tt.wantOut), len(tt.wantErr), len(tt.lines))
			}

			// The script is used up: the next batch completes.
			if next := runBatch(t, s, lines(1)...); next.Status != "completed" || next.RequestCounts.Completed != 1 {
				t.Errorf("next batch: got %s with %+v, want completed", next.Status, next.RequestCounts)
			}
		})
	}
}

func TestBatchScriptedFailure(t *testing.T) {
	s := NewServer(Options{BatchScript: []BatchOutcome{{Status: "failed"}}})
	defer s.Close()
	b := runBatch(t, s, chatLine("a", "x"))
	if b.Status != "failed" || b.Errors == nil || len(b.Errors.Data) != 1 || b.Errors.Data[0].Code != "token_limit_exceeded" {
		t.Errorf("got %s with errors %+v, want failed with token_limit_exceeded", b.Status, b.Errors)
	}
}

func TestBatchLineErrorsAreSeeded(t *testing.T) {
	run := func() []byte {
		s := NewServer(Options{Seed: 7, BatchScript: []BatchOutcome{{LineErrorRate: 0.5}}})
		defer s.Close()
		var lines []string
		for i := range 40 {
			lines = append(lines, chatLine(fmt.Sprintf("q%d", i), "x"))
		}
		b := runBatch(t, s, lines...)
		if b.RequestCounts.Failed == 0 || b.RequestCounts.Failed == 40 {
			t.Errorf("failed lines: got %d of 40, want some but not all", b.RequestCounts.Failed)
		}
		var ids []string
		for _, l := range download(t, s, b.ErrorFileID) {
			ids = append(ids, l.CustomID)
		}
		return []byte(strings.Join(ids, ","))
	}
	if a, b := run(), run(); !bytes.Equal(a, b) {
		t.Errorf("same seed, different failed lines: %s vs %s", a, b)
	}
}

func TestBatchCancel(t *testing.T) {
	s := NewServer(Options{BatchPolls: 5})
	defer s.Close()
	b := createBatch(t, s, uploadFile(t, s, chatLine("a", "x")+"\n"+chatLine("b", "y")))
	b = pollBatch(t, s, b.ID)
	if b.Status != "in_progress" {
		t.Fatalf("got %s, want in_progress", b.Status)
	}
	status, _, raw := call(t, s, http.MethodPost, "/v1/batches/"+b.ID+"/cancel", "", nil, nil)
	if b = decodeBatch(t, status, raw); b.Status != "cancelling" {
		t.Fatalf("cancel: got %s, want cancelling", b.Status)
	}
	if b = pollBatch(t, s, b.ID); b.Status != "cancelled" || b.OutputFileID != nil || b.ErrorFileID != nil {
		t.Errorf("after cancel: got %s output %v error %v, want cancelled without files", b.Status, b.OutputFileID, b.ErrorFileID)
	}
	status, _, raw = call(t, s, http.MethodPost, "/v1/batches/"+b.ID+"/cancel", "", nil, nil)
	if status != http.StatusBadRequest {
		t.Errorf("cancelling a cancelled batch: got %d (%s), want 400", status, raw)
	}
}

func TestBatchEndpointsFaultsAndAuth(t *testing.T) {
	// The upload and the create take the first two draws; the first two
	// polls fail and must not advance the batch.
	s := NewServer(Options{APIKey: "sk-x", Script: []Fault{None, None, RateLimited, ServerError}})
	defer s.Close()
	auth := map[string]string{"Authorization": "Bearer sk-x"}
	ct, body := multipartUpload(t, "batch", "in.jsonl", []byte(chatLine("a", "x")))
	if status, _, raw := call(t, s, http.MethodPost, "/v1/files", ct, body, nil); status != http.StatusUnauthorized {
		t.Fatalf("upload without key: got %d (%s), want 401", status, raw)
	}
	status, _, raw := call(t, s, http.MethodPost, "/v1/files", ct, body, auth)
	var f wireFile
	if err := json.Unmarshal(raw, &f); status != 200 || err != nil {
		t.Fatalf("upload: got %d (%s), want 200", status, raw)
	}
	create := `{"input_file_id":"` + f.ID + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`
	status, _, raw = call(t, s, http.MethodPost, "/v1/batches", "application/json", []byte(create), auth)
	b := decodeBatch(t, status, raw)
	if status, _, _ := call(t, s, http.MethodGet, "/v1/batches/"+b.ID, "", nil, nil); status != http.StatusUnauthorized {
		t.Errorf("poll without key: got %d, want 401", status)
	}

	status, h, raw := call(t, s, http.MethodGet, "/v1/batches/"+b.ID, "", nil, auth)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("first poll: got %d Retry-After %q (%s), want 429 with Retry-After", status, h.Get("Retry-After"), raw)
	}
	if status, _, raw := call(t, s, http.MethodGet, "/v1/batches/"+b.ID, "", nil, auth); status != http.StatusInternalServerError {
		t.Errorf("second poll: got %d (%s), want 500", status, raw)
	}
	status, _, raw = call(t, s, http.MethodGet, "/v1/batches/"+b.ID, "", nil, auth)
	if b = decodeBatch(t, status, raw); b.Status != "in_progress" {
		t.Errorf("third poll: got %s, want in_progress (failed polls must not advance)", b.Status)
	}
	want := Counts{Requests: 7, OK: 3, RateLimited: 1, ServerError: 1, Unauthorized: 2, Files: 1, Batches: 1}
	if diff := cmp.Diff(want, s.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestBatchTruncatedCreateStillCreates(t *testing.T) {
	s := NewServer(Options{Script: []Fault{None, Truncated}})
	defer s.Close()
	fileID := uploadFile(t, s, chatLine("a", "x"))
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/batches",
		strings.NewReader(`{"input_file_id":"`+fileID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	resp, err := s.Client().Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("truncated create: got a whole answer, want a cut one")
	}
	if info := s.Batches(); len(info) != 1 || info[0].Status != "validating" {
		t.Errorf("batches: got %+v, want one validating", info)
	}
}

func TestBatchConcurrentPolls(t *testing.T) {
	// Answer runs while one poll writes the output; the others see the
	// batch finalizing and change nothing.
	s := NewServer(Options{Answer: func(r Request) string { return "a:" + r.Messages[0].Content }})
	defer s.Close()
	var lines []string
	for i := range 20 {
		lines = append(lines, chatLine(fmt.Sprintf("q%d", i), fmt.Sprint(i)))
	}
	b := createBatch(t, s, uploadFile(t, s, strings.Join(lines, "\n")))
	b = pollBatch(t, s, b.ID)
	var wg sync.WaitGroup
	statuses := make([]string, 16)
	for i := range statuses {
		// Not pollBatch: t.Fatal belongs to the test's goroutine.
		wg.Go(func() {
			resp, err := s.Client().Get(s.URL() + "/batches/" + b.ID)
			if err != nil {
				statuses[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			var wb wireBatch
			if err := json.NewDecoder(resp.Body).Decode(&wb); err != nil {
				statuses[i] = err.Error()
				return
			}
			statuses[i] = wb.Status
		})
	}
	wg.Wait()
	for _, st := range statuses {
		if st != "completed" && st != "finalizing" {
			t.Errorf("concurrent poll: got %s, want completed or finalizing", st)
		}
	}
	if b = pollBatch(t, s, b.ID); b.Status != "completed" {
		t.Fatalf("after the polls: got %s, want completed", b.Status)
	}
	out := download(t, s, b.OutputFileID)
	if len(out) != 20 {
		t.Fatalf("output: got %d lines, want 20", len(out))
	}
	for _, l := range out {
		var cc struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal(l.Response.Body, &cc)
		if want := "a:" + strings.TrimPrefix(l.CustomID, "q"); len(cc.Choices) != 1 || cc.Choices[0].Message.Content != want {
			t.Errorf("line %s: got %s, want content %q", l.CustomID, l.Response.Body, want)
		}
	}
	if n := len(s.Batches()); n != 1 {
		t.Errorf("batches: got %d, want 1", n)
	}
	// One input file and one output file.
	if _, ok := s.File("file-llmtest000003"); ok {
		t.Error("the batch was finished more than once: a third file exists")
	}
}
