// Package judge is the S2G-Judge, the controller distill exists to train:
// the small model that reads a question and the evidence gathered so far
// and says whether it suffices and, if not, what is missing.
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
//     LinearModel file.
//
// Data flows one way: a judge is given a question and a data.Context,
// shows a model Prompt(question, context.Render()) or analyses the
// evidence itself, and returns a Result whose data.Call records the raw
// output, parse error, model, template hash and tokens. The loop of
// package rollout consumes it through its own one-method interface.
package judge
