package label

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/llm"
)

// ExpectedCompletionTokens is the completion length a preflight assumes on
// average: a verdict with two or three gap items. The upper bound uses the
// request's max tokens.
const ExpectedCompletionTokens = 120

// BatchDiscount is the share of the standard price that OpenAI's Batch API
// charges.
const BatchDiscount = 0.5

// Estimate is what a preflight (--dry-run) found: how much work a run
// would do and what it would cost, before anything is spent.
type Estimate struct {
	Counts Counts `json:"counts"`
	// States to label now and the requests they take (states x samples).
	States   int   `json:"states"`
	Requests int64 `json:"requests"`
	// PromptTokens counts the prompts exactly with the model's tokenizer
	// (llm.CountTokens; an estimate for models tiktoken does not know),
	// plus a few tokens per message for the chat format.
	PromptTokens int64 `json:"prompt_tokens"`
	// Completion tokens expected (ExpectedCompletionTokens per request) and
	// at most (max tokens per request).
	CompletionTokensExpected int64 `json:"completion_tokens_expected"`
	CompletionTokensMax      int64 `json:"completion_tokens_max"`
	// Priced is false when the model has no price: the costs are then 0.
	Priced          bool    `json:"priced"`
	CostExpectedUSD float64 `json:"cost_expected_usd"`
	CostMaxUSD      float64 `json:"cost_max_usd"`
	// Batch is set when the costs are at the Batch API's discount.
	Batch bool `json:"batch"`
	// MaxPromptTokens is the longest prompt, to compare with the model's
	// context window.
	MaxPromptTokens int `json:"max_prompt_tokens"`
}

// requester is a teacher that makes chat requests (LLMTeacher).
type requester interface {
	Request(s Input, sample int) llm.Request
}

// Preflight counts what Run with these options would do, without
// labelling anything or writing anything: the states to label (those
// already in Out's parts excluded when Resume is set), the requests, their
// prompt tokens and the cost at prices (model, the teacher's model). A
// built-in teacher costs nothing.
func Preflight(ctx context.Context, opts Options, model string, prices map[string]llm.Price) (Estimate, error) {
	r, err := newRun(opts)
	if err != nil {
		return Estimate{}, err
	}
	parts := "" // what Out holds does not count
	if opts.Resume && opts.Out != "" {
		parts = filepath.Join(opts.Out, PartsDir)
	}
	plan, err := stage.Select(ctx, r.job(), parts)
	if err != nil {
		return Estimate{}, err
	}
	c := r.rep.Counts
	c.Selected, c.AlreadyDone = plan.Selected, plan.AlreadyDone
	e := Estimate{Counts: c, States: plan.Todo, Requests: int64(plan.Todo) * int64(r.opts.Samples), Batch: opts.Batch != nil}
	rq, ok := opts.Teacher.(requester)
	if opts.Batch != nil {
		rq, ok = opts.Batch.Teacher, opts.Batch.Teacher != nil
	}
	if !ok {
		return e, nil
	}
	memo := llm.TokenMemo{Model: model}
	for it, err := range plan.Left(ctx) {
		if err != nil {
			return e, err
		}
		for k := range r.opts.Samples {
			req := rq.Request(it.State, k)
			n := 3
			for i, m := range req.Messages {
				n += 4 + memo.Count(i, m.Content)
			}
			e.PromptTokens += int64(n)
			e.MaxPromptTokens = max(e.MaxPromptTokens, n)
			e.CompletionTokensExpected += int64(min(ExpectedCompletionTokens, req.MaxTokens))
			e.CompletionTokensMax += int64(req.MaxTokens)
		}
	}
	price, ok := llm.PriceOf(prices, model)
	e.Priced = ok
	if opts.Batch != nil {
		price.Input *= BatchDiscount
		price.Output *= BatchDiscount
	}
	e.CostExpectedUSD = price.Cost(llm.Usage{PromptTokens: int(e.PromptTokens), CompletionTokens: int(e.CompletionTokensExpected)})
	e.CostMaxUSD = price.Cost(llm.Usage{PromptTokens: int(e.PromptTokens), CompletionTokens: int(e.CompletionTokensMax)})
	return e, nil
}

// String summarises the estimate in one line.
func (e Estimate) String() string {
	return fmt.Sprintf("%d states, %d requests, %d prompt tokens, $%.4f expected, $%.4f at most",
		e.States, e.Requests, e.PromptTokens, e.CostExpectedUSD, e.CostMaxUSD)
}
