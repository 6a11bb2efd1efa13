// Package llm is the model client shared by rollout, label and eval: chat
// completions and embeddings against any OpenAI-compatible server (OpenAI,
// vLLM, Ollama, llama.cpp) through github.com/sashabaranov/go-openai, with
// structured output, retries, client-side limits, an on-disk response cache
// and usage accounting.
//
// # The pieces
//
// Consumers depend on Chatter (and Embedder), the one-method interfaces
// declared in this package. Everything else is either an implementation or
// a decorator that wraps a Chatter and is a Chatter:
//
//   - Client (New) makes one HTTP attempt per call. With Request.Schema set
//     it asks for response_format json_schema (strict); a server that
//     rejects that with a 400 about the format gets json_object next, then
//     plain text with the schema written into the last user message. The
//     mode that worked is remembered per Client, so later calls do not pay
//     for the failed ones; Response.Mode says which was used. Errors are
//     typed: *StatusError (401 and 403 match ErrAuth), ErrTimeout for the
//     per-request timeout (Config.Timeout), *BodyError for truncated or
//     malformed answers.
//   - Limit (or a shared Limiter) caps requests in flight, requests per
//     minute and tokens per minute.
//   - Retry retries what IsRetryable accepts, with exponential backoff,
//     full jitter from a seeded source and the server's Retry-After.
//   - Cache replays answers from a directory, keyed by CacheKey.
//   - Account counts requests, tokens, retries, failures, cache hits and
//     cost per role; its Meter's Snapshot goes into run.json.
//   - DecodeJSON asks a Chatter for a JSON object and decodes it into a Go
//     value, re-asking once with the parse error; SchemaFor makes the
//     strict schema from the same Go type.
//
// # Stacking
//
// The recommended order, built by Stack, is
//
//	Account(Cache(Retry(Limit(client))))
//
// Account is outermost so that it sees every call the caller makes, cache
// hits included, and the final outcome of each. Cache sits outside Retry
// and Limit so that a hit costs neither a rate-limit token nor a slot.
// Retry sits outside Limit so that every attempt waits for the limits
// again and a request waiting out its backoff holds no slot. Retries are
// invisible to callers; Account learns of them through a counter that it
// puts in the context and Retry increments, so Account must be outside
// Retry to count them. DecodeJSON goes on top of the stack: its re-ask is
// an ordinary second call.
//
// # Temperature zero
//
// go-openai v1.43 declares ChatCompletionRequest.Temperature as float32
// with omitempty, so a temperature of 0 is silently left out of the body
// and servers fall back to their default (often 1.0): greedy decoding would
// never happen. Client installs its own HTTPDoer as go-openai's HTTP
// client; for POSTs to /chat/completions it adds "temperature":0 to any
// body that has no temperature member. That is exact because Client always
// sets the temperature the caller asked for, so a missing member can only
// be an omitted zero. top_p, seed and max_tokens are sent by go-openai as
// asked (top_p when non-zero, seed when set, max_tokens when positive).
// For OpenAI's reasoning models (o1, o3, o4, gpt-5 families), which reject
// sampling parameters, temperature and top_p are not sent and MaxTokens is
// sent as max_completion_tokens.
//
// # Keys
//
// The key comes from the caller (KeyFromEnv reads DISTILL_<ROLE>_API_KEY,
// then OPENAI_API_KEY); it is held as a Secret, which redacts itself in
// fmt, slog and JSON. An empty key sends no Authorization header.
//
// # Batches
//
// For OpenAI's Batch API (half price, answers within 24 hours), Client
// writes request lines with BatchLine (the very body Chat would send) and
// calls the Files and Batches endpoints (UploadBatchFile, CreateBatch,
// GetBatch, CancelBatch, FileContent), each retried on its own;
// ReadBatchResults maps output and error files back by custom id. See
// Batch for the life of a batch.
//
// Sub-package llmtest is a fault-injecting OpenAI-compatible server for
// tests and benchmarks; it also serves the Files and Batches endpoints,
// with scripted outcomes (expired batches with partial output, failures).
package llm
