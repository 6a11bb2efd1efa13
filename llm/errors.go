package llm

import (
	"errors"
	"strings"

	"github.com/distill-rag/distill/llm/httperr"
)

// ErrAuth is matched (errors.Is) by errors for answers 401 and 403: the
// server refused the credentials. It is systemic: retrying cannot help and a
// run should stop.
var ErrAuth = httperr.ErrAuth

// ErrTimeout is matched by errors for a request that ran past the
// per-request timeout (Config.Timeout) while the caller's context was still
// live. It is retryable.
var ErrTimeout = httperr.ErrTimeout

// StatusError is an error answer (HTTP status 4xx or 5xx) from the server:
// its StatusCode, the server's Message (or the start of the body when it
// was not an OpenAI error object), the OpenAI error Type and Code when
// given, and RetryAfter, the wait the server asked for (Retry-After or
// retry-after-ms; zero when it did not say). 401 and 403 match ErrAuth;
// Temporary reports the statuses worth another attempt (408, 409, 425, 429
// and 5xx but 501 and 505). It is the error type of every HTTP client of
// distill, the Elasticsearch one included.
type StatusError = httperr.Error

// BodyError is a successful status whose body could not be read or decoded:
// a truncated or malformed answer, or one without choices. It is retryable.
type BodyError = httperr.BodyError

// IsRetryable reports whether err is worth another attempt: a per-request
// timeout, 408/409/425/429/5xx, a truncated or malformed body, or a
// connection-level failure. Cancellation, bad requests and refused
// credentials are not.
func IsRetryable(err error) bool { return httperr.Retryable(err) }

// IsContextLength reports whether err is the server refusing a request
// whose prompt and answer budget do not fit the model's context window:
// OpenAI's code context_length_exceeded (which llama.cpp's Python server
// also sends) or a 400 saying "maximum context length" (vLLM) or "context
// window". Retrying the same request cannot help; a shorter prompt or a
// smaller max_tokens can.
func IsContextLength(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 {
		return false
	}
	if se.Code == "context_length_exceeded" {
		return true
	}
	msg := strings.ToLower(se.Message)
	return strings.Contains(msg, "maximum context length") || strings.Contains(msg, "context window")
}
