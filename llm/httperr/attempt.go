package httperr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Exchange is what the transport saw of one attempt's answer, for
// Classify. The call that owns it sends its requests one at a time, so it
// needs no lock.
type Exchange struct {
	status  int
	header  http.Header
	timeout time.Duration
}

type exchangeKey struct{}

// Begin derives the context of one attempt: bounded by timeout (no bound
// when it is zero or negative) and carrying a fresh Exchange that a
// Recorder fills in. Call cancel when the attempt is over.
func Begin(ctx context.Context, timeout time.Duration) (actx context.Context, ex *Exchange, cancel context.CancelFunc) {
	ex = &Exchange{timeout: timeout}
	actx = context.WithValue(ctx, exchangeKey{}, ex)
	if timeout > 0 {
		actx, cancel = context.WithTimeout(actx, timeout)
		return actx, ex, cancel
	}
	return actx, ex, func() {}
}

// Doer sends an HTTP request: an *http.Client is one, and go-openai takes
// one as its HTTP client.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Recorder is a Doer that notes the status and headers of every answer in
// the Exchange of the request's context (see Begin), so that Classify can
// tell an error answer from a bad body or no answer, and read the wait a
// 429 asks for.
type Recorder struct {
	Next Doer
}

func (r Recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.Next.Do(req)
	if ex, ok := req.Context().Value(exchangeKey{}).(*Exchange); ok && resp != nil {
		ex.status, ex.header = resp.StatusCode, resp.Header
	}
	return resp, err
}

// Classify turns the error of an attempt (made with actx, derived from
// ctx by Begin) into this package's errors:
//
//   - when ctx has ended, its error (wrapping err when err is another);
//   - when the attempt's own timeout passed, ErrTimeout;
//   - an *Error or *BodyError as it is;
//   - an error answer, read by go-openai (an APIError, or a RequestError
//     whose body was no error object) or seen by the Recorder, as an
//     *Error with the Retry-After the answer carried;
//   - a success whose body could not be read or decoded as a *BodyError;
//   - anything else (no answer: a failed connection) as it is.
func (ex *Exchange) Classify(ctx, actx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w: %w", cerr, err)
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %s", ErrTimeout, ex.timeout)
	}
	var (
		se *Error
		be *BodyError
	)
	if errors.As(err, &se) || errors.As(err, &be) {
		return err
	}
	wait := RetryAfter(ex.header, time.Now())
	// A RequestError first: when go-openai cannot read an error body as
	// its error object ({"error": "text"}, an object without a message),
	// it wraps the half-read APIError, which has no status.
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return Decode("", reqErr.HTTPStatusCode, ex.header, reqErr.Body)
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		se := &Error{StatusCode: apiErr.HTTPStatusCode, Message: apiErr.Message, Type: apiErr.Type, RetryAfter: wait}
		if apiErr.Code != nil {
			se.Code = fmt.Sprint(apiErr.Code)
		}
		return se
	}
	switch {
	case ex.status >= 400:
		// The error body itself could not be read.
		return &Error{StatusCode: ex.status, Message: err.Error(), RetryAfter: wait}
	case ex.status != 0:
		return &BodyError{Err: err}
	default:
		return err
	}
}
