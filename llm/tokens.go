package llm

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// DefaultCompletionEstimate is the completion length EstimateTokens
// assumes for a request without MaxTokens.
const DefaultCompletionEstimate = 512

// EstimateTokens is a cheap upper-leaning guess of the tokens a request
// will use, for rate limiting: about one token per four bytes of each
// message plus a few per message for the chat template, the schema when
// there is one, and MaxTokens (or DefaultCompletionEstimate) for the
// answer. Use CountTokens when an exact prompt count matters.
func EstimateTokens(req Request) int {
	n := 3
	for _, m := range req.Messages {
		n += 4 + estimateText(m.Content)
	}
	if req.Schema != nil {
		n += estimateText(string(req.Schema.Schema))
	}
	if req.MaxTokens > 0 {
		n += req.MaxTokens
	} else {
		n += DefaultCompletionEstimate
	}
	return n
}

func estimateText(s string) int { return (len(s) + 3) / 4 }

// CountTokens counts the tokens of text with the byte-pair encoding of
// model: o200k_base for the gpt-4o, gpt-4.1, gpt-5 and o-series families,
// cl100k_base for gpt-4, gpt-3.5 and every model tiktoken does not know
// (self-hosted models such as Llama 3, whose tokenizers differ, get a close
// estimate). The vocabularies are compiled into the binary by
// github.com/tiktoken-go/tokenizer: nothing is downloaded. Chat template
// overhead is not included.
func CountTokens(model, text string) int {
	c := codecFor(model)
	if c == nil {
		return estimateText(text)
	}
	n, err := c.Count(text)
	if err != nil {
		return estimateText(text)
	}
	return n
}

// The codecs are built once, on first use (building one compiles its
// split pattern and loads its vocabulary).
var (
	o200k  = sync.OnceValue(func() tokenizer.Codec { return mustCodec(tokenizer.O200kBase) })
	cl100k = sync.OnceValue(func() tokenizer.Codec { return mustCodec(tokenizer.Cl100kBase) })
)

func mustCodec(enc tokenizer.Encoding) tokenizer.Codec {
	c, err := tokenizer.Get(enc)
	if err != nil {
		return nil // CountTokens falls back to the estimate
	}
	return c
}

// o200kPrefixes are the model families that use o200k_base.
var o200kPrefixes = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"}

func codecFor(model string) tokenizer.Codec {
	m := strings.ToLower(strings.TrimPrefix(model, "ft:"))
	for _, p := range o200kPrefixes {
		if strings.HasPrefix(m, p) {
			return o200k()
		}
	}
	return cl100k()
}

// TokenMemo counts tokens as CountTokens does, remembering the last text
// counted at each position of a prompt, so that a text repeated at its
// place is counted once: the system message that every prompt of a run
// shares, or the messages of the several samples of one prompt. Memory
// holds one text per position. It is not safe for concurrent use.
type TokenMemo struct {
	// Model chooses the encoding, as for CountTokens.
	Model string
	last  []countedText
}

type countedText struct {
	text string
	n    int
}

// Count returns the tokens of text, the message at position pos of a
// prompt.
func (m *TokenMemo) Count(pos int, text string) int {
	if pos >= len(m.last) {
		m.last = append(m.last, make([]countedText, pos+1-len(m.last))...)
	}
	if c := m.last[pos]; c.n > 0 && c.text == text {
		return c.n
	}
	n := CountTokens(m.Model, text)
	m.last[pos] = countedText{text, n}
	return n
}
