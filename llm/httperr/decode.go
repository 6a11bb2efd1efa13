package httperr

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Object is the error object of an answer's body, {"error": {...}}, in
// either wire format: OpenAI's message, type and code, or the cluster's
// type and reason with the chain of causes (a bulk answer carries one per
// failed document too).
type Object struct {
	Message  string  `json:"message"`
	Type     string  `json:"type"`
	Code     any     `json:"code"`
	Reason   string  `json:"reason"`
	CausedBy *Object `json:"caused_by"`
}

// Text is the message, or else the reason followed by those of up to three
// causes, most general first.
func (o *Object) Text() string {
	if o.Message != "" {
		return o.Message
	}
	r := o.Reason
	for x, depth := o.CausedBy, 0; x != nil && depth < 3; x, depth = x.CausedBy, depth+1 {
		if x.Reason != "" && x.Reason != r {
			r += " (caused by " + x.Type + ": " + x.Reason + ")"
		}
	}
	return r
}

// Decode reads the error answer to op with the given status, headers (nil
// for none) and body: the error object of either wire format, the text of
// {"error": "text"} as proxies and old clusters answer, or else the start
// of the body.
func Decode(op string, status int, h http.Header, body []byte) *Error {
	e := &Error{Op: op, StatusCode: status, RetryAfter: RetryAfter(h, time.Now())}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && len(v.Error) > 0 {
		var o Object
		if json.Unmarshal(v.Error, &o) == nil && (o.Text() != "" || o.Type != "") {
			e.Message, e.Type = o.Text(), o.Type
			if o.Code != nil {
				e.Code = fmt.Sprint(o.Code)
			}
			return e
		}
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			e.Message = s
			return e
		}
	}
	e.Message = Excerpt(body)
	return e
}

// Excerpt returns the start of a body for an error message.
func Excerpt(body []byte) string {
	const n = 200
	s := strings.TrimSpace(string(body))
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}

// maxWait bounds the wait a server asks for before any caller's cap, so
// that absurd values cannot overflow a Duration.
const maxWait = 24 * time.Hour

// RetryAfter reads the wait a server asks for: retry-after-ms (sent by
// OpenAI), else Retry-After as seconds or as an HTTP date, at most a day.
// It is zero when there is none, it cannot be read, or the date has
// passed.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampSeconds(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampSeconds(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, maxWait)
		}
	}
	return 0
}

func clampSeconds(s float64) time.Duration {
	switch {
	case !(s > 0): // also NaN
		return 0
	case s >= maxWait.Seconds():
		return maxWait
	default:
		return time.Duration(s * float64(time.Second))
	}
}
