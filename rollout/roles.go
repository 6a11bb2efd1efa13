package rollout

import (
	"context"
	"strconv"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/retrieve"
)

// Judge is what the loop needs of the judge: every judge.Judge is one, with
// the contract written in package judge.
type Judge interface {
	Judge(ctx context.Context, question string, c data.Context) (judge.Result, error)
}

// Extractor points at the evidence sentences worth keeping: given the
// question, up to three current gap items and the numbered sentences of the
// documents just retrieved, it returns at most max sentence ids. It only
// points; the loop copies the sentences verbatim.
type Extractor interface {
	Extract(ctx context.Context, question string, gaps []data.GapItem, sentences []Numbered, max int) (ExtractResult, error)
}

// Reader answers the question from the evidence context.
type Reader interface {
	Answer(ctx context.Context, question string, c data.Context) (ReadResult, error)
}

// Retriever is what the loop needs of a retrieval backend; every
// retrieve.Retriever is one, with the contract written in package retrieve.
type Retriever interface {
	Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error)
}

// Roles are the parts the loop runs: the three roles and the retriever.
//
// Every Judge, Extractor and Reader meets the same contract (the judge's
// is written on judge.Judge, and says the same):
//
//   - It is safe for concurrent use by many goroutines (a rollout runs
//     questions in parallel with the same roles) and does not modify its
//     arguments.
//   - Output that the model gave but that could not be parsed is not an
//     error: the result carries the raw output and ParseError, and the loop
//     applies the method's fallback (an insufficient verdict with no gaps,
//     no sentence chosen, an empty answer) and records it.
//   - An error means the role could not produce output for this question
//     (for a model, a call that still failed after the client's retries).
//     The loop returns it as a *RoleError, and the caller records the
//     question as failed and goes on. When ctx is cancelled a role may
//     return ctx.Err(), wrapped or not; the loop then reports cancellation,
//     not a failed question.
//
// The Retriever meets the contract of package retrieve; its errors are
// systemic.
//
// Compressor, when set, writes each round's evidence in place of the
// Extractor (which may then be nil): the compression variants of the
// ablations.
type Roles struct {
	Judge      Judge
	Extractor  Extractor
	Compressor Compressor
	Reader     Reader
	Retriever  Retriever
}

// ExtractResult is an extractor's output: the sentence ids it gave, in its
// order, unchecked (the loop drops invalid, repeated and surplus ids).
type ExtractResult struct {
	IDs []int
	data.Call
}

// ReadResult is a reader's output: the answer, without any "Answer:" prefix.
type ReadResult struct {
	// Answer is the answer scored: empty when the reply could not be read
	// (ParseError), unless the reader's rule gives an answer then
	// (AnswerNotFound under ReaderInputReference).
	Answer string
	data.Call
}

// Numbered is one sentence of a retrieved document as the extractor is
// shown it: ID is its global number within the round (from 1, in the order
// of the retrieved documents, then of the sentences within each), Evidence
// its provenance and verbatim text, and Line its display line
// "[id] (title | s#index) sentence", where index is the sentence's 0-based
// position in its document (Evidence.Index, the numbering HotpotQA's
// supporting facts use). Title and sentence are shown on one line
// (data.OneLine).
type Numbered struct {
	ID int
	data.Evidence
	Line string
}

// NumberedLine returns the display line of a sentence.
func NumberedLine(id int, e data.Evidence) string {
	title, text := data.OneLine(e.Title), data.OneLine(e.Text)
	b := make([]byte, 0, len(title)+len(text)+24)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, "] ("...)
	b = append(b, title...)
	b = append(b, " | s#"...)
	b = strconv.AppendInt(b, int64(e.Index), 10)
	b = append(b, ") "...)
	b = append(b, text...)
	return string(b)
}
