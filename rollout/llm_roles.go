package rollout

import (
	"context"
	"fmt"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/rolecall"
	"github.com/distill-rag/distill/llm"
)

// The answer caps of the model-backed extractor and reader: the reference
// code's caps.
const (
	DefaultExtractorMaxTokens = 64
	DefaultReaderMaxTokens    = 128
)

// LLMOption adjusts a model-backed role.
type LLMOption func(*llmRole)

// llmRole is what every model-backed role holds: its model client, the
// model recorded when the server names none, and the cap on the tokens of
// an answer.
type llmRole struct {
	c           llm.Chatter
	model       string
	maxTokens   int
	readerInput ReaderInput // the reader's alone
}

// ReaderInput is what LLMReader shows its model.
type ReaderInput string

const (
	// ReaderInputDistill is the question and the rendered context, the
	// same rendering the judge sees, answered in a line "Answer: ...".
	ReaderInputDistill ReaderInput = "distill"
	// ReaderInputReference is the authors' code: the question, then each
	// round's query and evidence (ReaderPromptRounds), answered in lines
	// "Answer: ..." and "Rationale: ...", read by ParseRoundsAnswer,
	// without a second ask.
	ReaderInputReference ReaderInput = "reference"
)

// ParseReaderInput returns the reader input named s ("" is
// ReaderInputDistill).
func ParseReaderInput(s string) (ReaderInput, error) {
	switch in := ReaderInput(s); in {
	case "", ReaderInputDistill:
		return ReaderInputDistill, nil
	case ReaderInputReference:
		return in, nil
	}
	return "", fmt.Errorf("unknown reader input %q (want distill or reference)", s)
}

// WithReaderInput sets what an LLMReader shows its model (default
// ReaderInputDistill); other roles ignore it.
func WithReaderInput(in ReaderInput) LLMOption {
	return func(r *llmRole) { r.readerInput = in }
}

// WithMaxTokens caps the tokens of each answer at n; n <= 0 keeps the
// role's default.
func WithMaxTokens(n int) LLMOption {
	return func(r *llmRole) {
		if n > 0 {
			r.maxTokens = n
		}
	}
}

func newLLMRole(c llm.Chatter, model string, maxTokens int, opts []LLMOption) llmRole {
	r := llmRole{c: c, model: model, maxTokens: maxTokens}
	for _, o := range opts {
		o(&r)
	}
	return r
}

var (
	_ Extractor = (*LLMExtractor)(nil)
	_ Reader    = (*LLMReader)(nil)
)

// extractReply is the extractor's answer, for its schema and its decoding:
// the ids must be JSON integers; null means none.
type extractReply struct {
	IDs []int `json:"evidence_global_ids" description:"ids of the sentences to keep, most useful first, each once"`
}

var extractorSchema = mustSchema[extractReply]("evidence_pointers")

// mustSchema makes the schema of a reply type of this file; it cannot fail
// for them, which the tests confirm.
func mustSchema[T any](name string) llm.Schema {
	s, err := llm.SchemaFor[T](name)
	if err != nil {
		panic(err)
	}
	return s
}

// LLMExtractor is the extractor backed by a chat model (METHOD step 5). It
// shows the model ExtractorPrompt (the question, up to ExtractorGaps gap
// items, the numbered sentences and the most ids to give), asks for
// {"evidence_global_ids": [...]} and returns the ids as the model gave
// them: the loop drops and counts invalid, repeated and surplus ids. Ids
// that are not JSON integers make the answer unusable. With no sentences,
// or max < 1, it returns no ids without asking. Its template hash is
// ExtractorTemplateHash.
//
// The model-backed roles of this package (LLMExtractor, LLMReader,
// LLMSummarizer) share these guarantees, on top of the contract of Roles,
// as does the LLM judge of package judge:
//
//   - Decoding is greedy: temperature 0, sent to the server as such.
//   - The extractor and the summarizer ask for structured output (a strict
//     JSON Schema) and read the first JSON object of the answer; an
//     unusable answer is asked again once, showing the model what was
//     wrong (llm.DecodeJSON). The reader answers in plain text.
//   - Output that still cannot be used is not an error: Call.ParseError
//     says why and Call.Raw holds the last answer.
//   - An error of the Chatter (one that its retries did not cure) is
//     returned, wrapped; when ctx has ended, ctx.Err() is returned as is.
//   - Call.Model is the model the server says answered, else the model
//     given to the constructor; Call.Usage adds up both calls of a re-ask.
//   - They are safe for concurrent use when their Chatter is.
type LLMExtractor struct{ llmRole }

// NewLLMExtractor returns an extractor that asks c; model is recorded when
// the server does not name the model that answered. It answers in at most
// DefaultExtractorMaxTokens tokens unless WithMaxTokens says otherwise.
func NewLLMExtractor(c llm.Chatter, model string, opts ...LLMOption) *LLMExtractor {
	return &LLMExtractor{newLLMRole(c, model, DefaultExtractorMaxTokens, opts)}
}

// Extract implements Extractor.
func (x *LLMExtractor) Extract(ctx context.Context, question string, gaps []data.GapItem, sentences []Numbered, max int) (ExtractResult, error) {
	if max < 1 || len(sentences) == 0 {
		return ExtractResult{IDs: []int{}, Call: data.Call{Model: x.model, TemplateHash: ExtractorTemplateHash}}, nil
	}
	var reply extractReply
	call, err := rolecall.DecodeJSON(ctx, x.c, rolecall.JSONCall{
		Role: "llm extractor", Model: x.model, Hash: ExtractorTemplateHash,
		Prompt: ExtractorPrompt(question, gaps, sentences, max), Schema: extractorSchema, MaxTokens: x.maxTokens,
	}, &reply)
	if err != nil {
		return ExtractResult{}, err
	}
	if call.ParseError != "" {
		return ExtractResult{Call: call}, nil
	}
	ids := reply.IDs
	if ids == nil {
		ids = []int{}
	}
	return ExtractResult{IDs: ids, Call: call}, nil
}

// LLMReader is the reader backed by a chat model (METHOD step 2). It shows
// the model ReaderPrompt (the question and the rendered context, to be
// answered from the context only), asks for a line "Answer: ..." in plain
// text and reads it with ParseAnswer; an output without an answer is a
// parse failure with an empty answer after one re-ask that shows the model
// its reply and the form the answer must take (Call.Repaired). Its template
// hash is ReaderTemplateHash. See LLMExtractor for what the model-backed
// roles share.
type LLMReader struct{ llmRole }

// NewLLMReader returns a reader that asks c; model is recorded when the
// server does not name the model that answered. It answers in at most
// DefaultReaderMaxTokens tokens unless WithMaxTokens says otherwise.
func NewLLMReader(c llm.Chatter, model string, opts ...LLMOption) *LLMReader {
	return &LLMReader{newLLMRole(c, model, DefaultReaderMaxTokens, opts)}
}

// Answer implements Reader.
func (r *LLMReader) Answer(ctx context.Context, question string, c data.Context) (ReadResult, error) {
	if r.readerInput == ReaderInputReference {
		return r.answerRounds(ctx, question, c)
	}
	req := llm.Request{
		Messages:    rolecall.Messages(ReaderPrompt(question, c.Render())),
		Temperature: 0,
		MaxTokens:   r.maxTokens,
	}
	resp, err := r.c.Chat(ctx, req)
	if err != nil {
		return ReadResult{}, rolecall.Error(ctx, "llm reader", err)
	}
	answer, perr := readAnswer(resp)
	if perr != nil {
		// One repair, as for the roles that answer in JSON: the model sees
		// its reply and the form it must take.
		again := req
		again.Messages = llm.RepairMessages(req.Messages, resp.Content, readerRepair)
		first := resp
		resp, err = r.c.Chat(ctx, again)
		if err != nil {
			return ReadResult{}, rolecall.Error(ctx, "llm reader", fmt.Errorf("re-ask after an answer without %q: %w", "Answer:", err))
		}
		resp.Usage.PromptTokens += first.Usage.PromptTokens
		resp.Usage.CompletionTokens += first.Usage.CompletionTokens
		resp.Reasked = true
		answer, perr = readAnswer(resp)
	}
	call := rolecall.New(resp, r.model, ReaderTemplateHash)
	if perr != nil {
		call.ParseError = perr.Error()
		return ReadResult{Call: call}, nil
	}
	return ReadResult{Answer: answer, Call: call}, nil
}

// answerRounds answers under ReaderInputReference: one ask, and a reply
// without "Answer:" and "Rationale:" is AnswerNotFound, recorded as a
// parse failure.
func (r *LLMReader) answerRounds(ctx context.Context, question string, c data.Context) (ReadResult, error) {
	resp, err := r.c.Chat(ctx, llm.Request{
		Messages:    rolecall.Messages(ReaderPromptRounds(question, c.Rounds())),
		Temperature: 0,
		MaxTokens:   r.maxTokens,
	})
	if err != nil {
		return ReadResult{}, rolecall.Error(ctx, "llm reader", err)
	}
	call := rolecall.New(resp, r.model, ReaderRoundsTemplateHash)
	answer, ok := ParseRoundsAnswer(resp.Content)
	if !ok {
		call.ParseError = fmt.Sprintf("the reply has no %q followed by %q: read as %q", "Answer:", "Rationale:", AnswerNotFound)
	}
	return ReadResult{Answer: answer, Call: call}, nil
}

// readAnswer reads the reader's answer from a response (ParseAnswer),
// saying when a reply without one was cut off at the token limit.
func readAnswer(resp llm.Response) (string, error) {
	answer, err := ParseAnswer(resp.Content)
	if err != nil && resp.FinishReason == "length" {
		return "", fmt.Errorf("%w (the reply was cut off at the token limit)", err)
	}
	return answer, err
}
