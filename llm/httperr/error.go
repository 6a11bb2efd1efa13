package httperr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrAuth is matched (errors.Is) by an *Error for answers 401 and 403: the
// server refused the credentials. Retrying cannot help.
var ErrAuth = errors.New("authentication failed")

// ErrTimeout is matched by the error of an attempt that ran past its own
// timeout (see Begin) while the caller's context was still live. It is
// retryable.
var ErrTimeout = errors.New("request timed out")

// Error is an error answer: an HTTP status of 400 or more.
type Error struct {
	// Op is what was asked ("search index \"wiki\""); empty when the
	// caller names the call in an error that wraps this one.
	Op string
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the server's message (OpenAI's message, the cluster's
	// reason with its causes), or the start of the body when it was not an
	// error object.
	Message string
	// Type and Code are the error's type ("invalid_request_error",
	// "index_not_found_exception") and code ("rate_limit_exceeded"), when
	// given.
	Type, Code string
	// RetryAfter is how long the server asked the client to wait (from
	// retry-after-ms or Retry-After); zero when it did not say.
	RetryAfter time.Duration
	// Err, when set, is what the answer means to the client that read it,
	// a sentinel its callers test with errors.Is (elastic.ErrNotFound for
	// a missing index).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op + ": ")
	}
	fmt.Fprintf(&b, "server answered %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Is makes a 401 or 403 match ErrAuth.
func (e *Error) Is(target error) bool {
	return target == ErrAuth && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether the status is one that a later attempt may not
// see: 408, 409, 425, 429 and 5xx other than 501 and 505.
func (e *Error) Temporary() bool {
	switch c := e.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusConflict, c == http.StatusTooEarly, c == http.StatusTooManyRequests:
		return true
	case c == http.StatusNotImplemented, c == http.StatusHTTPVersionNotSupported:
		return false
	default:
		return c >= 500
	}
}

// BodyError is an answer with a success status whose body could not be
// read or decoded: truncated, not JSON, or without what the API promises
// (choices, hits). It is retryable.
type BodyError struct {
	// Op is what was asked, as in Error.
	Op string
	// Err says what is wrong with the body.
	Err error
	// Excerpt is the start of the body, when it helps to see it.
	Excerpt string
}

// Malformed returns the BodyError of an answer to op whose body says err;
// body, when given, is shown in part.
func Malformed(op string, err error, body []byte) *BodyError {
	return &BodyError{Op: op, Err: err, Excerpt: Excerpt(body)}
}

func (e *BodyError) Error() string {
	s := "malformed answer: " + e.Err.Error()
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	if e.Excerpt != "" {
		s += ": " + e.Excerpt
	}
	return s
}

func (e *BodyError) Unwrap() error { return e.Err }

// Retryable reports whether err is worth another attempt: a per-attempt
// timeout, 408/409/425/429/5xx, a truncated or malformed body, or a
// connection-level failure. Cancellation, bad requests and refused
// credentials are not.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var se *Error
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
