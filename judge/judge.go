package judge

import (
	"context"

	"github.com/distill-rag/distill/data"
)

// Judge reads a question and its evidence context and says whether the
// evidence suffices and, if not, what is missing (METHOD step 1).
//
// Every implementation meets this contract, which the loop of package
// rollout relies on:
//
//   - It is safe for concurrent use by many goroutines (a rollout judges
//     many questions at once with one judge) and does not modify its
//     arguments.
//   - Output that the judge gave but that could not be parsed is not an
//     error: the Result carries the raw output and ParseError. The caller
//     then ignores Verdict, applies the method's fallback (insufficient,
//     no gap items) and records the parse failure; it is never silent.
//   - An error means the judge could not give any output for this
//     question (for a model, a call that still failed after the client's
//     retries); the caller loses the question, not the run. When ctx is
//     cancelled a judge may return ctx.Err(), wrapped or not.
//   - Result.Model names what produced the verdict and Result.TemplateHash
//     the prompt it was given (TemplateHash for every judge shown Prompt),
//     so that each recorded verdict says where it came from.
type Judge interface {
	Judge(ctx context.Context, question string, c data.Context) (Result, error)
}

// QuestionJudge is a Judge that reads the whole question, gold evidence
// included, instead of its text alone: an oracle (Truth), which a
// benchmark runs to measure a ceiling. The loop of package rollout calls
// JudgeQuestion when its judge has it; the contract is Judge's.
type QuestionJudge interface {
	Judge
	JudgeQuestion(ctx context.Context, q data.Question, c data.Context) (Result, error)
}

// Result is a judge's output: the verdict and the record of the call.
// Verdict is ignored when ParseError is set.
type Result struct {
	Verdict data.Verdict
	data.Call
}
