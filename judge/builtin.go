package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/lexical"
)

// Names of the built-in judges, recorded as their model names so that
// every report says what produced a verdict.
const (
	LexicalName = "lexical-judge (built-in baseline)"
	NeverName   = "never (fixed policy: always insufficient)"
	AlwaysName  = "always (fixed policy: always sufficient)"
	TruthName   = "retrieval truth (oracle: sees the gold evidence)"
)

// The template hashes of the built-in judges: hashes of their names and
// rule versions. Bump a version when a judge's rules change.
var (
	lexicalHash = data.TemplateHash(LexicalName, "rules v1")
	neverHash   = data.TemplateHash(NeverName)
	alwaysHash  = data.TemplateHash(AlwaysName)
	truthHash   = data.TemplateHash(TruthName, "rules v1")
)

var (
	_ Judge         = Lexical{}
	_ Judge         = Never{}
	_ Judge         = Always{}
	_ QuestionJudge = Truth{}
)

// Lexical is a deterministic judge that needs no model: it names the
// parts of the question the evidence does not mention as gap items. It
// reads the question as names, the type of its answer and its content
// words; the evidence is sufficient when it covers them all on the
// question's chain of documents and, for a question that asks for a place,
// person, date, year, number or nationality, shows a span of that type.
// Otherwise the gap items are the uncovered names (bridge_entity), then one
// item for the missing words about the entity the evidence points to next.
// The rules are written on lexical.Verdict.
//
// Its raw output is the verdict as JSON. It is safe for concurrent use.
type Lexical struct{}

// Judge implements Judge.
func (Lexical) Judge(_ context.Context, question string, c data.Context) (Result, error) {
	v := lexical.Verdict(question, c.Evidence())
	raw, err := json.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("lexical judge: %w", err)
	}
	return Result{Verdict: v, Call: data.Call{Raw: string(raw), Model: LexicalName, TemplateHash: lexicalHash}}, nil
}

// Never is the fixed policy that always calls the evidence insufficient,
// with no gap items: the loop then spends its whole budget with the bare
// question as query (the "without judge" ablation).
type Never struct{}

// Judge implements Judge.
func (Never) Judge(context.Context, string, data.Context) (Result, error) {
	return Result{
		Verdict: data.Verdict{GapItems: []data.GapItem{}},
		Call:    data.Call{Raw: `{"sufficient":false,"gap_items":[]}`, Model: NeverName, TemplateHash: neverHash},
	}, nil
}

// Always is the fixed policy that always calls the evidence sufficient: with
// the t = 0 override, the loop retrieves once and answers (standard RAG).
type Always struct{}

// Judge implements Judge.
func (Always) Judge(context.Context, string, data.Context) (Result, error) {
	return Result{
		Verdict: data.Verdict{Sufficient: true, GapItems: []data.GapItem{}},
		Call:    data.Call{Raw: `{"sufficient":true,"gap_items":[]}`, Model: AlwaysName, TemplateHash: alwaysHash},
	}, nil
}

// Truth is retrieval truth as a judge, an oracle: it reads the question's
// gold evidence and calls the evidence sufficient exactly when retrieval
// truth does (data.Truth.Sufficient, the retrieval-truth teacher's rule), with
// no gap items, so that the loop queries the bare question until then. Its
// stop decisions are all right by that measure, which makes a benchmark
// row with it a yardstick for trained judges; it is not a judge a user can
// deploy. It needs the whole question, which the loop passes to a
// QuestionJudge; asked through Judge, it fails with ErrNeedsQuestion.
type Truth struct{}

// ErrNeedsQuestion: a QuestionJudge was asked with the question's text
// alone.
var ErrNeedsQuestion = errors.New("this judge reads the question's gold evidence: it runs only inside the loop")

// Judge implements Judge: it always fails, with ErrNeedsQuestion.
func (Truth) Judge(context.Context, string, data.Context) (Result, error) {
	return Result{}, fmt.Errorf("%s: %w", TruthName, ErrNeedsQuestion)
}

// JudgeQuestion implements QuestionJudge.
func (Truth) JudgeQuestion(_ context.Context, q data.Question, c data.Context) (Result, error) {
	sufficient := data.JudgeTruth(q, c.Evidence()).Sufficient()
	return Result{
		Verdict: data.Verdict{Sufficient: sufficient, GapItems: []data.GapItem{}},
		Call:    data.Call{Raw: fmt.Sprintf(`{"sufficient":%t,"gap_items":[]}`, sufficient), Model: TruthName, TemplateHash: truthHash},
	}, nil
}
