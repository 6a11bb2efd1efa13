// Package openai is the fine-tuning backend for OpenAI's fine-tuning API
// and the servers that copy it (any base URL that serves /files and
// /fine_tuning/jobs).
//
// Submit uploads the job's OpenAI chat JSONL (Files.TrainOpenAI, and
// Files.ValOpenAI when there is one) with purpose "fine-tune" and creates a
// supervised job on Job.BaseModel: n_epochs from Hyper.Epochs, batch_size
// the effective batch Hyper.BatchSize x Hyper.GradAccum, seed from
// Hyper.Seed, suffix from Job.Name. OpenAI trains its own adapters and has
// no absolute learning rate, so the LoRA settings and Hyper.LearningRate
// are not sent; a learning_rate_multiplier can be given in Job.Extra,
// whose members are passed through into the request body (see Submit).
//
// Status reads the job and its events. The events, which the API lists
// newest first, are paged back to the last one already seen (its id is
// kept in State.Data) and appended oldest first to the job's log,
// train.log; its metrics events give State's Step, TotalSteps and Loss.
//
// The files are uploaded through go-openai. The fine-tuning endpoints are
// spoken directly, in JSON: go-openai v1.43's types drop members this
// backend needs (the job's error and seed, each event's id, type and data,
// and any body member it does not model, which Job.Extra must be able to
// pass).
//
// Every call is retried on 408, 409, 425, 429 (waiting as Retry-After
// asks), 5xx, per-attempt timeouts, malformed or truncated answers and
// connection failures, with the policy of llm.Retry; 401 and 403 match
// llm.ErrAuth and are not retried. A retried upload may leave an unused
// file, and a retried creation a second job, on the server: the API has
// no idempotency key.
package openai
