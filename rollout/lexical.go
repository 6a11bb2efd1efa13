package rollout

import (
	"context"
	"strconv"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/lexical"
)

// Names of the built-in extractor and reader, recorded as their model
// names so that every report says what produced an output.
const (
	LexicalExtractorName = "lexical-extractor (built-in baseline)"
	LexicalReaderName    = "lexical-reader (built-in baseline)"
)

// The template hashes of the built-in extractor and reader: hashes of their
// names and rule versions. Bump a version when a role's rules change.
var (
	lexicalExtractorHash = data.TemplateHash(LexicalExtractorName, "rules v1")
	lexicalReaderHash    = data.TemplateHash(LexicalReaderName, "rules v1")
)

// LexicalExtractor is a deterministic extractor that needs no model: it
// ranks the numbered sentences by a BM25 score against the question and the
// gap items, counting related words half and favouring the sentences of a
// document that the question's names lead to (the next hop), and points at
// the best max of them that match at all, ties in id order. The rules are
// written on lexical.Rank.
//
// Its raw output is {"evidence_global_ids": [...]}, as a model's would be.
// It is safe for concurrent use.
type LexicalExtractor struct{}

// Extract implements Extractor.
func (LexicalExtractor) Extract(_ context.Context, question string, gaps []data.GapItem, sentences []Numbered, max int) (ExtractResult, error) {
	ids := lexical.Rank(question, gaps, lexicalSentences(sentences), max)
	return ExtractResult{IDs: ids, Call: data.Call{Raw: idsJSON(ids), Model: LexicalExtractorName, TemplateHash: lexicalExtractorHash}}, nil
}

// lexicalSentences gives numbered sentences to the analysis.
func lexicalSentences(sentences []Numbered) []lexical.Sentence {
	out := make([]lexical.Sentence, len(sentences))
	for i, s := range sentences {
		out[i] = lexical.Sentence{ID: s.ID, Title: s.Title, Text: s.Text}
	}
	return out
}

// idsJSON renders ids as the extractor's JSON answer.
func idsJSON(ids []int) string {
	b := []byte(`{"evidence_global_ids":[`)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(append(b, "]}"...))
}

// LexicalReader is a deterministic extractive reader that needs no model, a
// baseline for the answer stage. It answers from the evidence context only:
// a choice question with one of its options (by the dates or numbers the
// evidence states when the question asks for the earlier or larger one, else
// the more mentioned), a yes/no question with "yes" or "no" (by shared
// attributes for "... of the same X?", else by whether the evidence covers
// the question), any other question with a span of the type it asks for
// (place, person, date, year, number, nationality) from the evidence
// sentence that best matches it, on the question's chain of documents
// first. The rules are written on lexical.Answer.
//
// Its raw output is "Answer: " and the answer. It is safe for concurrent use.
type LexicalReader struct{}

// Answer implements Reader.
func (LexicalReader) Answer(_ context.Context, question string, c data.Context) (ReadResult, error) {
	answer := lexical.Answer(question, c.Evidence())
	return ReadResult{Answer: answer, Call: data.Call{Raw: "Answer: " + answer, Model: LexicalReaderName, TemplateHash: lexicalReaderHash}}, nil
}
