package judge

import (
	"context"
	"encoding/json"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/rolecall"
	"github.com/distill-rag/distill/llm"
)

// DefaultMaxTokens caps the answer of the LLM judge, as the method's
// reference code does: a verdict with three gap items takes about 120
// tokens, and a small model that runs on stops here.
const DefaultMaxTokens = 256

// Option adjusts the LLM judge.
type Option func(*LLM)

// WithMaxTokens caps the tokens of each answer at n; n <= 0 keeps
// DefaultMaxTokens.
func WithMaxTokens(n int) Option {
	return func(j *LLM) {
		if n > 0 {
			j.maxTokens = n
		}
	}
}

// WithNoRepair records an unusable answer (Result.ParseError: the state
// is then judged insufficient, with no gap items) without asking the model
// again, as the authors' code does.
func WithNoRepair() Option {
	return func(j *LLM) { j.noRepair = true }
}

var (
	_ Judge = (*LLM)(nil)
	// llm.DecodeJSON reads a verdictReply through its UnmarshalJSON, which
	// leaves the checks to ParseVerdict.
	_ json.Unmarshaler = (*verdictReply)(nil)
)

// LLM is the judge backed by a chat model (the S2G-Judge itself once
// trained; the untuned base judge before). It shows the model Prompt of the
// question and the rendered context, asks for {"sufficient": bool,
// "gap_items": [{"category", "target", "slot", "description"}]} (Schema)
// and reads the answer with ParseVerdict: a missing or non-boolean
// "sufficient" or a malformed gap item is a parse failure, and the gap
// items of a sufficient verdict are dropped. Its template hash is
// TemplateHash.
//
// On top of the contract of Judge:
//
//   - Decoding is greedy: temperature 0, sent to the server as such.
//   - It asks for structured output (a strict JSON Schema) and reads the
//     first JSON object of the answer; an unusable answer is asked again
//     once, showing the model what was wrong (llm.DecodeJSON), unless
//     WithNoRepair.
//   - Output that still cannot be used is not an error: Result.ParseError
//     says why and Result.Raw holds the last answer.
//   - An error of the Chatter (one that its retries did not cure) is
//     returned, wrapped; when ctx has ended, ctx.Err() is returned as is.
//   - Result.Model is the model the server says answered, else the model
//     given to NewLLM; Result.Usage adds up both calls of a re-ask.
//   - It is safe for concurrent use when its Chatter is.
type LLM struct {
	c         llm.Chatter
	model     string
	maxTokens int
	noRepair  bool
}

// NewLLM returns a judge that asks c; model is recorded when the server
// does not name the model that answered. It answers in at most
// DefaultMaxTokens tokens unless WithMaxTokens says otherwise.
func NewLLM(c llm.Chatter, model string, opts ...Option) *LLM {
	j := &LLM{c: c, model: model, maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		o(j)
	}
	return j
}

// reply is the judge's answer as its JSON Schema describes it. The enum
// must list data.GapCategories(); a test checks it.
type reply struct {
	Sufficient bool       `json:"sufficient" description:"true when the evidence alone answers the question"`
	GapItems   []gapReply `json:"gap_items" description:"what is missing, most important first; empty when sufficient"`
}

type gapReply struct {
	Category    string `json:"category" enum:"bridge_entity,attribute,relation,evidence_span,other"`
	Target      string `json:"target" description:"the entity the missing information is about"`
	Slot        string `json:"slot" description:"the missing property or relation"`
	Description string `json:"description" description:"one short sentence saying what must be found"`
}

// verdictReply decodes a judge's JSON object with ParseVerdict, so that
// llm.DecodeJSON re-asks on exactly the answers the method rejects.
type verdictReply struct {
	v data.Verdict
}

func (r *verdictReply) UnmarshalJSON(b []byte) error {
	v, err := ParseVerdict(b)
	if err != nil {
		return err
	}
	r.v = v
	return nil
}

// schema cannot fail to build for reply, which the tests confirm.
var schema = func() llm.Schema {
	s, err := llm.SchemaFor[reply]("judge_verdict")
	if err != nil {
		panic(err)
	}
	return s
}()

// Schema returns the strict JSON Schema of the judge's answer, the one the
// LLM judge asks for; a teacher that answers in the judge's schema asks for
// it too.
func Schema() llm.Schema { return schema }

// Judge implements Judge.
func (j *LLM) Judge(ctx context.Context, question string, c data.Context) (Result, error) {
	var r verdictReply
	call, err := rolecall.DecodeJSON(ctx, j.c, rolecall.JSONCall{
		Role: "llm judge", Model: j.model, Hash: TemplateHash,
		Prompt: Prompt(question, c.Render()), Schema: schema, MaxTokens: j.maxTokens, NoRepair: j.noRepair,
	}, &r)
	if err != nil {
		return Result{}, err
	}
	if call.ParseError != "" {
		return Result{Call: call}, nil
	}
	return Result{Verdict: r.v, Call: call}, nil
}
