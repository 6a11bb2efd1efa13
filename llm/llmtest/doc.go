// Package llmtest serves a fault-injecting, OpenAI-compatible API on
// loopback for tests and benchmarks: chat completions and embeddings in the
// real wire format, with configurable latency and seeded, reproducible
// rates of 429 (with Retry-After), 500, 503, malformed bodies, truncated
// bodies and hangs; optional bearer-key checking; and a switch that makes
// it refuse response_format json_schema (or json_object) as servers without
// structured output do. Answers come from a hook, else a minimal instance
// of the requested JSON Schema, else a fixed text. Every request is
// recorded for assertions.
//
// It also serves the Files, Batches and fine-tuning jobs endpoints
// (files.go, batch.go, finetune.go): batches and jobs advance one step per
// poll, with scripted outcomes (expired batches with partial output and an
// error file, failed validation, failed or slow fine-tuning jobs selected
// by the model name), and the same fault rates apply to them.
//
// It does not import the client package, so the client's own tests can use
// it.
//
// Typical use:
//
//	s := llmtest.NewServer(llmtest.Options{Seed: 1, RateLimited: 0.1, Latency: 50 * time.Millisecond})
//	defer s.Close()
//	client, _ := llm.New(llm.Config{BaseURL: s.URL(), Model: "test"})
//	// ... then assert on s.Requests(), s.Counts(), s.MaxInFlight().
package llmtest
