package httperr

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

const okEmbeddings = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`

// embed makes one go-openai embeddings call to a server that answers with
// handler, as the clients of this module make it: under Begin, through a
// Recorder, its error classified.
func embed(t *testing.T, ctx context.Context, timeout time.Duration, handler http.HandlerFunc) error {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	defer srv.CloseClientConnections() // ends a hanging handler first
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL + "/v1"
	cfg.HTTPClient = Recorder{Next: srv.Client()}
	api := openai.NewClientWithConfig(cfg)
	actx, ex, cancel := Begin(ctx, timeout)
	defer cancel()
	_, err := api.CreateEmbeddings(actx, openai.EmbeddingRequest{Input: []string{"x"}, Model: "m"})
	if err == nil {
		return nil
	}
	return ex.Classify(ctx, actx, err)
}

func reply(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		status    int // of the *Error; 0 when it is not one
		body      bool
		timeout   bool
		retryable bool
		check     func(t *testing.T, se *Error)
	}{
		{name: "ok", handler: reply(200, nil, okEmbeddings)},
		{
			name:    "429 with retry-after",
			handler: reply(429, map[string]string{"Retry-After": "3"}, `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			status:  429, retryable: true,
			check: func(t *testing.T, se *Error) {
				if se.RetryAfter != 3*time.Second || se.Code != "rate_limit_exceeded" || se.Message != "Rate limit reached." {
					t.Errorf("got %+v, want the message, code and a 3s wait", se)
				}
			},
		},
		{
			name:    "401",
			handler: reply(401, nil, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			status:  401,
			check: func(t *testing.T, se *Error) {
				if !errors.Is(se, ErrAuth) {
					t.Errorf("%v does not match ErrAuth", se)
				}
			},
		},
		{
			name:    "500 with a proxy page",
			handler: reply(502, map[string]string{"Content-Type": "text/html"}, "<html>bad gateway</html>"),
			status:  502, retryable: true,
			check: func(t *testing.T, se *Error) {
				if se.Message != "<html>bad gateway</html>" {
					t.Errorf("message %q, want the page", se.Message)
				}
			},
		},
		{
			name:    "503 with the error as text",
			handler: reply(503, map[string]string{"Retry-After-Ms": "250"}, `{"error":"overloaded"}`),
			status:  503, retryable: true,
			check: func(t *testing.T, se *Error) {
				if se.Message != "overloaded" || se.RetryAfter != 250*time.Millisecond {
					t.Errorf("got %+v, want message overloaded and a 250ms wait", se)
				}
			},
		},
		{
			name:    "502 with a cluster error object",
			handler: reply(502, nil, `{"error":{"type":"proxy_exception","reason":"upstream closed"},"status":502}`),
			status:  502, retryable: true,
			check: func(t *testing.T, se *Error) {
				if se.Message != "upstream closed" || se.Type != "proxy_exception" {
					t.Errorf("got %+v, want the reason and type", se)
				}
			},
		},
		{name: "malformed", handler: reply(200, nil, `{"object": list, "data": [}`), body: true, retryable: true},
		{
			name: "truncated",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(okEmbeddings)))
				w.WriteHeader(200)
				io.WriteString(w, okEmbeddings[:len(okEmbeddings)/2])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			body: true, retryable: true,
		},
		{
			name: "hang",
			handler: func(w http.ResponseWriter, r *http.Request) {
				// Once the body is read the server notices the client
				// going away.
				io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			},
			timeout: true, retryable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := 10 * time.Second
			if tt.timeout {
				timeout = 50 * time.Millisecond
			}
			err := embed(t, context.Background(), timeout, tt.handler)
			var se *Error
			var be *BodyError
			switch {
			case tt.status != 0:
				if !errors.As(err, &se) || se.StatusCode != tt.status {
					t.Fatalf("got %v, want an *Error with status %d", err, tt.status)
				}
				tt.check(t, se)
			case tt.body:
				if !errors.As(err, &be) {
					t.Fatalf("got %v, want a *BodyError", err)
				}
			case tt.timeout:
				if !errors.Is(err, ErrTimeout) {
					t.Fatalf("got %v, want ErrTimeout", err)
				}
			case err != nil:
				t.Fatalf("got %v, want no error", err)
			}
			if got := Retryable(err); got != tt.retryable {
				t.Errorf("Retryable(%v): got %v, want %v", err, got, tt.retryable)
			}
		})
	}
}

func TestClassifyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := embed(t, ctx, time.Minute, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		cancel()
		<-r.Context().Done()
	})
	if !errors.Is(err, context.Canceled) || Retryable(err) {
		t.Errorf("got %v (retryable %v), want context.Canceled, not retryable", err, Retryable(err))
	}
}

func TestClassifyNoServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = "http://" + addr + "/v1"
	cfg.HTTPClient = Recorder{Next: http.DefaultClient}
	ctx := context.Background()
	actx, ex, cancel := Begin(ctx, time.Minute)
	defer cancel()
	_, err = openai.NewClientWithConfig(cfg).CreateEmbeddings(actx, openai.EmbeddingRequest{Input: []string{"x"}, Model: "m"})
	err = ex.Classify(ctx, actx, err)
	var se *Error
	var be *BodyError
	if errors.As(err, &se) || errors.As(err, &be) || !Retryable(err) {
		t.Errorf("got %v, want a retryable connection error", err)
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"canceled", context.Canceled, false},
		{"deadline", context.DeadlineExceeded, true},
		{"timeout", ErrTimeout, true},
		{"400", &Error{StatusCode: 400}, false},
		{"401", &Error{StatusCode: 401}, false},
		{"403", &Error{StatusCode: 403}, false},
		{"404", &Error{StatusCode: 404}, false},
		{"408", &Error{StatusCode: 408}, true},
		{"409", &Error{StatusCode: 409}, true},
		{"425", &Error{StatusCode: 425}, true},
		{"429", &Error{StatusCode: 429}, true},
		{"500", &Error{StatusCode: 500}, true},
		{"501", &Error{StatusCode: 501}, false},
		{"502", &Error{StatusCode: 502}, true},
		{"505", &Error{StatusCode: 505}, false},
		{"body", &BodyError{Err: errors.New("unexpected EOF")}, true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"unknown", errors.New("something else"), false},
	}
	for _, tt := range tests {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
