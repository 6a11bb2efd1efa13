package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrAuth is matched (errors.Is) by errors for answers 401 and 403: the
// server refused the credentials. It is systemic: retrying cannot help and a
// run should stop.
var ErrAuth = errors.New("llm: authentication failed")

// ErrTimeout is matched by errors for a request that ran past the
// per-request timeout (Config.Timeout) while the caller's context was still
// live. It is retryable.
var ErrTimeout = errors.New("llm: request timed out")

// StatusError is an error answer (HTTP status 4xx or 5xx) from the server.
type StatusError struct {
	StatusCode int
	// Message is the server's error message, or the start of its body when
	// the body was not an OpenAI error object.
	Message string
	// Type and Code are the OpenAI error type and code, when given.
	Type string
	Code string
	// RetryAfter is how long the server asked the client to wait (from
	// Retry-After or retry-after-ms); zero when it did not say.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("server answered %d: %s", e.StatusCode, msg)
}

// Is makes a 401 or 403 match ErrAuth.
func (e *StatusError) Is(target error) bool {
	return target == ErrAuth && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// Temporary reports whether the status is one that a later attempt may not
// see: 408, 409, 425, 429 and 5xx other than 501 and 505.
func (e *StatusError) Temporary() bool {
	switch c := e.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusConflict, c == http.StatusTooEarly, c == http.StatusTooManyRequests:
		return true
	case c == http.StatusNotImplemented, c == http.StatusHTTPVersionNotSupported:
		return false
	default:
		return c >= 500
	}
}

// BodyError is a successful status whose body could not be read or decoded:
// a truncated or malformed answer, or one without choices. It is retryable.
type BodyError struct {
	Err error
}

func (e *BodyError) Error() string { return "bad response body: " + e.Err.Error() }

func (e *BodyError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is worth another attempt: a per-request
// timeout, 408/409/425/429/5xx, a truncated or malformed body, or a
// connection-level failure. Cancellation, bad requests and refused
// credentials are not.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Temporary()
	}
	var be *BodyError
	if errors.As(err, &be) || errors.Is(err, ErrTimeout) {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	return errors.As(err, &ue)
}

// parseRetryAfter reads the wait a server asks for: retry-after-ms (sent by
// OpenAI), else Retry-After as seconds or as an HTTP date. It returns zero
// when there is none, it cannot be read, or the date has passed.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampWait(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampWait(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// maxServerWait bounds a server's Retry-After before any caller's cap, so
// that absurd values cannot overflow a Duration.
const maxServerWait = 24 * time.Hour

func clampWait(seconds float64) time.Duration {
	switch {
	case !(seconds > 0): // also NaN
		return 0
	case seconds >= maxServerWait.Seconds():
		return maxServerWait
	default:
		return time.Duration(seconds * float64(time.Second))
	}
}
