package httperr

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

// answer is an error answer as a server writes it.
type answer struct {
	status int
	header map[string]string
	body   string
}

// get serves a from a loopback server and returns what a client reads of
// it: the status, headers and body.
func get(t *testing.T, a answer) (int, http.Header, []byte) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := testkit.Do(t, srv.Client(), req)
	return resp.StatusCode, resp.Header, body
}

func TestDecode(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name string
		in   answer
		want Error
	}{
		{
			name: "openai 429 with retry-after",
			in: answer{429, map[string]string{"Retry-After": "7"},
				`{"error":{"message":"Rate limit reached. Please try again in 7s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
			want: Error{StatusCode: 429, Message: "Rate limit reached. Please try again in 7s.", Type: "requests", Code: "rate_limit_exceeded", RetryAfter: 7 * time.Second},
		},
		{
			name: "openai 500 without code",
			in:   answer{500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`},
			want: Error{StatusCode: 500, Message: "The server had an error while processing your request.", Type: "server_error"},
		},
		{
			name: "numeric code",
			in:   answer{400, nil, `{"error":{"message":"bad","type":"BadRequestError","code":400}}`},
			want: Error{StatusCode: 400, Message: "bad", Type: "BadRequestError", Code: "400"},
		},
		{
			name: "cluster 404 with causes",
			in: answer{404, nil, `{"error":{"root_cause":[{"type":"index_not_found_exception","reason":"no such index [wiki]"}],` +
				`"type":"index_not_found_exception","reason":"no such index [wiki]","caused_by":{"type":"x_exception","reason":"deeper"}},"status":404}`},
			want: Error{StatusCode: 404, Message: "no such index [wiki] (caused by x_exception: deeper)", Type: "index_not_found_exception"},
		},
		{
			name: "cluster 429 with retry-after-ms",
			in: answer{429, map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
				`{"error":{"type":"es_rejected_execution_exception","reason":"rejected execution"},"status":429}`},
			want: Error{StatusCode: 429, Message: "rejected execution", Type: "es_rejected_execution_exception", RetryAfter: 1500 * time.Millisecond},
		},
		{
			name: "error as text",
			in:   answer{406, nil, `{"error":"Content-Type header [application/vnd.elasticsearch+json] is not supported","status":406}`},
			want: Error{StatusCode: 406, Message: "Content-Type header [application/vnd.elasticsearch+json] is not supported"},
		},
		{
			name: "proxy page",
			in:   answer{502, nil, "<html><body>502 Bad Gateway</body></html>\n"},
			want: Error{StatusCode: 502, Message: "<html><body>502 Bad Gateway</body></html>"},
		},
		{
			name: "empty error object",
			in:   answer{503, nil, `{"error":{}}`},
			want: Error{StatusCode: 503, Message: `{"error":{}}`},
		},
		{
			name: "truncated error object",
			in:   answer{500, nil, `{"error":{"message":"cut sho`},
			want: Error{StatusCode: 500, Message: `{"error":{"message":"cut sho`},
		},
		{
			name: "long body",
			in:   answer{500, nil, long},
			want: Error{StatusCode: 500, Message: long[:200] + "..."},
		},
		{
			name: "empty body",
			in:   answer{503, nil, ""},
			want: Error{StatusCode: 503},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := get(t, tt.in)
			got := Decode("search", status, h, body)
			tt.want.Op = "search"
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&Error{StatusCode: 429, Message: "slow down"}, "server answered 429 Too Many Requests: slow down"},
		{&Error{Op: "search index \"wiki\"", StatusCode: 404, Type: "index_not_found_exception", Message: "no such index [wiki]"},
			`search index "wiki": server answered 404 Not Found: index_not_found_exception: no such index [wiki]`},
		{&Error{StatusCode: 599}, "server answered 599"},
		{&BodyError{Err: io.ErrUnexpectedEOF}, "malformed answer: unexpected EOF"},
		{Malformed("count", errors.New("no count"), []byte(` {"took": 1} `)), `count: malformed answer: no count: {"took": 1}`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestErrorMatches(t *testing.T) {
	missing := errors.New("index not found")
	for _, status := range []int{401, 403} {
		if !errors.Is(&Error{StatusCode: status}, ErrAuth) {
			t.Errorf("%d does not match ErrAuth", status)
		}
	}
	if errors.Is(&Error{StatusCode: 404}, ErrAuth) {
		t.Error("404 matches ErrAuth")
	}
	if err := error(&Error{StatusCode: 404, Err: missing}); !errors.Is(err, missing) {
		t.Errorf("%v does not match its Err", err)
	}
	var be *BodyError
	if err := Malformed("get", io.ErrUnexpectedEOF, nil); !errors.As(err, &be) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("%v: not a *BodyError wrapping its cause", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"far date", map[string]string{"Retry-After": now.Add(1000 * time.Hour).Format(http.TimeFormat)}, maxWait},
		{"milliseconds win", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"bad milliseconds", map[string]string{"Retry-After": "2", "Retry-After-Ms": "soon"}, 2 * time.Second},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0},
		{"huge", map[string]string{"Retry-After": "1e300"}, maxWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
