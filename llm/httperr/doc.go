// Package httperr reads the error answers of the HTTP APIs distill talks
// to, OpenAI-compatible servers and Elasticsearch or OpenSearch clusters,
// into one error type, so that every client reports, retries and branches
// on them alike. It sits under llm, the first of those clients, and imports
// no other distill package; retrieve/elastic and finetune/openai use it too.
//
// An answer with status 400 or more becomes an *Error: Decode reads its
// body in either wire format (OpenAI's {"error": {"message", "type",
// "code"}}, the cluster's {"error": {"type", "reason", "caused_by"}} or
// {"error": "text"}, else the start of the body as it is) and its
// Retry-After or retry-after-ms header. A success whose body cannot be
// read or decoded (truncated, not JSON, missing what the API promises) is
// a *BodyError. Retryable says which errors are worth another attempt.
//
// The clients built on github.com/sashabaranov/go-openai run each attempt
// under Begin, send through a Recorder, and hand go-openai's error to
// Exchange.Classify, which tells an error answer from a bad body, a
// per-attempt timeout or a failed connection.
package httperr
