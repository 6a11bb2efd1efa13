package rollout

import (
	"fmt"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
)

// EstimateTokens is the loop's count of the tokens of a text, for the token
// budgets of Options: the count of OpenAI's cl100k_base encoding
// (llm.CountTokens) raised by a quarter. It leans high on purpose, so that
// a prompt that fits by this count fits models whose tokenizers are less
// efficient than cl100k_base too (SmolLM2's needs about 9% more tokens on
// Wikipedia paragraphs, 24% at worst; Llama 3's and Gemma's fewer). It is
// deterministic: the same text always counts the same, so trimming is
// reproducible whatever server answers.
func EstimateTokens(s string) int {
	if s == "" {
		return 0
	}
	return (llm.CountTokens("", s)*5 + 3) / 4
}

// chatOverhead is what a chat template adds to a request, in tokens: role
// markers and separators of the two messages, and the start of the answer.
const chatOverhead = 32

// reservedGapTokens is what the extractor's prompt keeps for its gap items
// (up to ExtractorGaps JSON lines).
const reservedGapTokens = 64 * ExtractorGaps

// minBudget is the least room for evidence or candidates that a window
// must leave for a budget to make sense.
const minBudget = 256

// Budgets are the token budgets of Options (EvidenceTokens,
// CandidateTokens) for models whose context window is Window tokens,
// answering in at most the given tokens each (zero: the role's default).
type Budgets struct {
	Window                                              int
	JudgeMaxTokens, ExtractorMaxTokens, ReaderMaxTokens int
}

// Apply sets o.EvidenceTokens and o.CandidateTokens from the window: what
// the judge's and the reader's prompts (the one with the longer template
// and answer) leave for the question and the evidence, and what the
// extractor's prompt leaves for the question, the gap items and the
// numbered sentences, each less the chat template's overhead. Window zero
// leaves o unchanged (no bound). A window too small to leave minBudget
// tokens for either is an error wrapping ErrOptions.
func (b Budgets) Apply(o *Options) error {
	if b.Window == 0 {
		return nil
	}
	if b.Window < 0 {
		return fmt.Errorf("context window %d: %w", b.Window, ErrOptions)
	}
	jp := judge.Prompt("", "")
	rp := ReaderPrompt("", "")
	xp := ExtractorPrompt("", nil, nil, DefaultMaxEvidence)
	reader := promptTokens(rp) + orDefault(b.ReaderMaxTokens, DefaultReaderMaxTokens)
	judgeCost := promptTokens(jp) + orDefault(b.JudgeMaxTokens, judge.DefaultMaxTokens)
	evidence := b.Window - max(reader, judgeCost) - chatOverhead
	candidates := b.Window - promptTokens(xp) - orDefault(b.ExtractorMaxTokens, DefaultExtractorMaxTokens) - reservedGapTokens - chatOverhead
	if evidence < minBudget || candidates < minBudget {
		return fmt.Errorf("context window %d leaves %d tokens for the evidence and %d for the extractor's sentences, want at least %d each: %w",
			b.Window, evidence, candidates, minBudget, ErrOptions)
	}
	o.EvidenceTokens, o.CandidateTokens = evidence, candidates
	return nil
}

func promptTokens(p data.Prompt) int { return EstimateTokens(p.System) + EstimateTokens(p.User) }

func orDefault(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// fitCandidates returns the longest prefix of sentences whose lines, with
// the question, fit budget tokens (all of them when budget is 0).
func fitCandidates(question string, sentences []Numbered, budget int) []Numbered {
	if budget <= 0 {
		return sentences
	}
	used := EstimateTokens(question)
	for i, n := range sentences {
		line := n.Line
		if line == "" {
			line = NumberedLine(n.ID, n.Evidence)
		}
		used += EstimateTokens(line) + 1 // the line break
		if used > budget {
			return sentences[:i]
		}
	}
	return sentences
}

// fitEvidence appends to c the longest prefix of chosen whose rendering,
// with the question, fits budget tokens (all of chosen when budget is 0),
// and returns the blocks added and the number of sentences left out.
func fitEvidence(c *data.Context, question string, chosen []data.Evidence, budget int) (added, left int) {
	if budget <= 0 {
		return c.Append(chosen), 0
	}
	q := EstimateTokens(question)
	for n := len(chosen); n > 0; n-- {
		try := *c
		a := try.Append(chosen[:n])
		if q+EstimateTokens(try.Render()) <= budget {
			*c = try
			return a, len(chosen) - n
		}
	}
	return 0, len(chosen)
}
