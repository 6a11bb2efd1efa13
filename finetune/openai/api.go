package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/distill-rag/distill/llm"
)

// jobObject is the part of a fine_tuning.job object the backend reads.
type jobObject struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"`
	FineTunedModel *string `json:"fine_tuned_model"`
	FinishedAt     *int64  `json:"finished_at"`
	TrainedTokens  *int64  `json:"trained_tokens"`
	Error          *struct {
		Code    any     `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// check rejects a job object that no real answer would be: it is then a
// bad body, and the call is retried.
func (j jobObject) check() error {
	switch {
	case j.ID == "":
		return errors.New("job object has no id")
	case j.Status == "":
		return errors.New("job object has no status")
	case j.Status == "succeeded" && (j.FineTunedModel == nil || *j.FineTunedModel == ""):
		return errors.New("succeeded job has no fine_tuned_model")
	}
	return nil
}

// event is one fine_tuning.job.event.
type event struct {
	ID        string         `json:"id"`
	CreatedAt int64          `json:"created_at"`
	Level     string         `json:"level"`
	Message   string         `json:"message"`
	Type      string         `json:"type"`
	Data      map[string]any `json:"data"`
}

type eventList struct {
	Data    []event `json:"data"`
	HasMore bool    `json:"has_more"`
}

// exchange is what the transport saw of one attempt's HTTP answer; the
// call that owns it runs synchronously, so it needs no lock.
type exchange struct {
	status int
	header http.Header
}

type exchangeKey struct{}

// recorder notes each answer's status and headers in the attempt's
// exchange, so that an error of go-openai can be told apart (an error
// answer, a bad body, no answer) and a Retry-After read.
type recorder struct{ next *http.Client }

func (r recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.next.Do(req)
	if ex, ok := req.Context().Value(exchangeKey{}).(*exchange); ok && resp != nil {
		ex.status, ex.header = resp.StatusCode, resp.Header
	}
	return resp, err
}

// try makes one call with retries. Each attempt is bounded by the
// per-attempt timeout; its error is classified as the llm package's
// client does.
func (b *Backend) try(ctx context.Context, what string, op func(actx context.Context) error) error {
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		ex := &exchange{}
		actx := context.WithValue(ctx, exchangeKey{}, ex)
		cancel := context.CancelFunc(func() {})
		if b.timeout > 0 {
			actx, cancel = context.WithTimeout(actx, b.timeout)
		}
		defer cancel()
		if err := op(actx); err != nil {
			return b.classify(ctx, actx, ex, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (b *Backend) classify(ctx, actx context.Context, ex *exchange, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w: %w", cerr, err)
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %s", llm.ErrTimeout, b.timeout)
	}
	var (
		se *llm.StatusError
		be *llm.BodyError
	)
	if errors.As(err, &se) || errors.As(err, &be) {
		return err
	}
	wait := retryAfter(ex.header, time.Now())
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		se := &llm.StatusError{StatusCode: apiErr.HTTPStatusCode, Message: apiErr.Message, Type: apiErr.Type, RetryAfter: wait}
		if apiErr.Code != nil {
			se.Code = fmt.Sprint(apiErr.Code)
		}
		return se
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		return &llm.StatusError{StatusCode: reqErr.HTTPStatusCode, Message: excerpt(reqErr.Body), RetryAfter: wait}
	}
	switch {
	case ex.status >= 400:
		return &llm.StatusError{StatusCode: ex.status, Message: err.Error(), RetryAfter: wait}
	case ex.status != 0:
		// An answer came but could not be read.
		return &llm.BodyError{Err: err}
	default:
		return err
	}
}

// fetch sends one JSON request to path under the base URL and decodes
// the answer, with retries; each attempt decodes into a fresh T. check,
// when set, vets the decoded answer: its error counts as a bad body.
func fetch[T any](ctx context.Context, b *Backend, what, method, path string, query url.Values, body []byte, check func(T) error) (T, error) {
	u := b.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var out T
	err := b.try(ctx, what, func(actx context.Context) error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(actx, method, u, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if b.key != "" {
			req.Header.Set("Authorization", "Bearer "+string(b.key))
		}
		resp, err := recorder{b.http}.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 {
			return statusError(resp.StatusCode, resp.Header, raw)
		}
		if err != nil {
			return err // classified as a bad body, or a timeout
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return &llm.BodyError{Err: err}
		}
		if check != nil {
			if err := check(v); err != nil {
				return &llm.BodyError{Err: err}
			}
		}
		out = v
		return nil
	})
	return out, err
}

// statusError reads an error answer as llm's client does.
func statusError(status int, h http.Header, body []byte) *llm.StatusError {
	se := &llm.StatusError{StatusCode: status, RetryAfter: retryAfter(h, time.Now())}
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil {
		se.Message, se.Type = e.Error.Message, e.Error.Type
		if e.Error.Code != nil {
			se.Code = fmt.Sprint(e.Error.Code)
		}
		return se
	}
	se.Message = excerpt(body)
	return se
}

func excerpt(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// retryAfter reads the wait a server asks for: retry-after-ms (sent by
// OpenAI), else Retry-After in seconds or as an HTTP date; zero when
// there is none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	const most = 24 * time.Hour
	secs := func(s float64) time.Duration {
		if !(s > 0) {
			return 0
		}
		return min(time.Duration(s*float64(time.Second)), most)
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return secs(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return secs(s)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), most)
	}
	return 0
}

// upload sends a local file with purpose fine-tune and returns its id.
func (b *Backend) upload(ctx context.Context, path string) (string, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	name := filepath.Base(path)
	var id string
	err = b.try(ctx, "upload "+name, func(actx context.Context) error {
		f, err := b.api.CreateFileBytes(actx, goopenai.FileBytesRequest{Name: name, Bytes: content, Purpose: goopenai.PurposeFineTune})
		if err != nil {
			return err
		}
		if f.ID == "" {
			return &llm.BodyError{Err: errors.New("file object has no id")}
		}
		id = f.ID
		return nil
	})
	return id, err
}
