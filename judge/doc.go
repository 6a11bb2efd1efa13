// Package judge is what it takes to run the S2G-Judge, the small model
// distill trains to say whether the evidence gathered for a question
// suffices and, if not, what is missing.
//
// It is public library surface: a Go program puts a trained judge into its
// own RAG loop with this package alone. It holds what makes a judge a
// judge, in one place:
//
//   - the prompt: Prompt renders (question, evidence) the one way the judge
//     sees it, in the loop, for the teacher and in SFT export alike, and
//     TemplateHash names that template in every recorded output;
//   - the answer: Schema is its JSON Schema, ParseVerdict reads it with the
//     method's strictness (ErrVerdict), VerdictJSON writes it as a training
//     completion;
//   - the contract, Judge (concurrency safety, parse failures recorded and
//     never errors, what an error means), and its Result;
//   - the implementations: LLM, the judge behind any OpenAI-compatible
//     model (the untuned base judge, or the fine-tuned one); Lexical, a
//     deterministic baseline; Never and Always, the fixed policies of the
//     ablations; Linear, the built-in trained baseline, with its
//     LinearModel file;
//   - the hand-back of a training job (Handback, in HandbackFile), which
//     says what was trained, on which template, and how to serve it.
//
// A judge is opened from a Spec, the way a user names it: a kind
// ("lexical", "never", "always", "llm" with a model and base URL,
// "builtin:PATH"), or the hand-back directory of a training job. Open
// follows a hand-back to the judge it names, refuses a judge trained on
// another prompt template unless allowed, and reports every bad spec as a
// *SpecError; the caller supplies how to reach a model (ChatterFunc), as
// its client stack of limits, cache and accounting is its own. Resolve
// does the same checks without opening.
//
// Data flows one way: a judge is given a question and a data.Context,
// shows a model Prompt(question, context.Render()) or analyses the
// evidence itself (internal/lexical), and returns a Result whose data.Call
// records the raw output, parse error, model, template hash and tokens.
// The loop of package rollout consumes it through its own one-method
// interface.
package judge
