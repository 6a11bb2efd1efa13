package rollout

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/lexical"
	"github.com/distill-rag/distill/internal/rolecall"
	"github.com/distill-rag/distill/llm"
)

// Compressor writes a round's evidence itself instead of pointing at
// sentences: the compression strategies the method compares with pointer
// extraction (a summary of each retrieved document, a short query-focused
// summary). It is given the numbered sentences of the round's documents
// (grouped by document, in retrieval order) and returns evidence entries,
// each attributed to the document it summarises (DocID, Title; Index -1
// for text that is not a sentence of the document). It meets the contract
// of the other roles (see Roles). With Roles.Compressor set, the loop calls
// it in place of the Extractor.
type Compressor interface {
	Compress(ctx context.Context, question string, gaps []data.GapItem, sentences []Numbered) (CompressResult, error)
}

// CompressResult is a compressor's output.
type CompressResult struct {
	Evidence []data.Evidence
	data.Call
}

// documents groups numbered sentences by document, in order.
func documents(sentences []Numbered) [][]Numbered {
	var docs [][]Numbered
	for i, s := range sentences {
		if i == 0 || s.DocID != sentences[i-1].DocID {
			docs = append(docs, nil)
		}
		docs[len(docs)-1] = append(docs[len(docs)-1], s)
	}
	return docs
}

// Names of the built-in compressors and extractors of the ablations.
const (
	LeadSummaryName         = "lead-summary (built-in baseline)"
	FocusedSummaryName      = "focused-summary (built-in baseline)"
	AllSentencesName        = "all-sentences (raw documents, no extractor)"
	SimilarityExtractorName = "similarity-extractor (built-in baseline)"
)

var (
	leadSummaryHash    = data.TemplateHash(LeadSummaryName, "v1")
	focusedSummaryHash = data.TemplateHash(FocusedSummaryName, "v1")
	allSentencesHash   = data.TemplateHash(AllSentencesName)
	similarityHash     = data.TemplateHash(SimilarityExtractorName, "v1")
)

// LeadSummary is the built-in stand-in for a model's summary of each
// retrieved document: its first N sentences (default 2), the classic lead
// baseline of summarisation. It is a baseline and says so in its name.
type LeadSummary struct{ N int }

// Compress implements Compressor.
func (s LeadSummary) Compress(_ context.Context, _ string, _ []data.GapItem, sentences []Numbered) (CompressResult, error) {
	n := cmp.Or(s.N, 2)
	var ev []data.Evidence
	for _, doc := range documents(sentences) {
		for _, sent := range doc[:min(n, len(doc))] {
			ev = append(ev, sent.Evidence)
		}
	}
	return CompressResult{Evidence: ev, Call: data.Call{Raw: evidenceJSON(ev), Model: LeadSummaryName, TemplateHash: leadSummaryHash}}, nil
}

// FocusedSummary is the built-in stand-in for a short query-focused
// summary: from each retrieved document, the one sentence that best
// matches the question and gap items (the lexical extractor's ranking),
// cut to Words words (default 20). Documents with no matching sentence give
// nothing. It is a baseline and says so in its name.
type FocusedSummary struct{ Words int }

// Compress implements Compressor.
func (s FocusedSummary) Compress(_ context.Context, question string, gaps []data.GapItem, sentences []Numbered) (CompressResult, error) {
	words := cmp.Or(s.Words, 20)
	var ev []data.Evidence
	for _, doc := range documents(sentences) {
		// Numbered from 1 within the document, so that an id is its index + 1.
		in := make([]lexical.Sentence, len(doc))
		for i, sent := range doc {
			in[i] = lexical.Sentence{ID: i + 1, Title: sent.Title, Text: sent.Text}
		}
		ids := lexical.Rank(question, gaps, in, 1)
		if len(ids) == 0 {
			continue
		}
		e := doc[ids[0]-1].Evidence
		if f := strings.Fields(e.Text); len(f) > words {
			e.Text = strings.Join(f[:words], " ") + " ..."
			e.Index = -1
		}
		ev = append(ev, e)
	}
	return CompressResult{Evidence: ev, Call: data.Call{Raw: evidenceJSON(ev), Model: FocusedSummaryName, TemplateHash: focusedSummaryHash}}, nil
}

func evidenceJSON(ev []data.Evidence) string {
	if ev == nil {
		ev = []data.Evidence{}
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// AllSentences is the extractor of the "no extractor" ablation: it points
// at every sentence, in order, so that the retrieved documents are
// appended whole (up to the loop's MaxSentences per document). Give the
// loop a MaxEvidence of at least TopK x MaxSentences with it.
type AllSentences struct{}

// Extract implements Extractor.
func (AllSentences) Extract(_ context.Context, _ string, _ []data.GapItem, sentences []Numbered, max int) (ExtractResult, error) {
	ids := make([]int, 0, len(sentences))
	for _, s := range sentences[:min(len(sentences), max)] {
		ids = append(ids, s.ID)
	}
	return ExtractResult{IDs: ids, Call: data.Call{Raw: idsJSON(ids), Model: AllSentencesName, TemplateHash: allSentencesHash}}, nil
}

// SimilarityExtractor is the extractive-compression baseline (in the manner
// of extractive RECOMP): the max sentences most similar to the question
// alone, by the share of the question's content words they hold, ties in
// id order. Unlike the lexical extractor it ignores gap items and the
// documents' titles and links.
type SimilarityExtractor struct{}

// Extract implements Extractor.
func (SimilarityExtractor) Extract(_ context.Context, question string, _ []data.GapItem, sentences []Numbered, max int) (ExtractResult, error) {
	ids := lexical.Similar(question, lexicalSentences(sentences), max)
	return ExtractResult{IDs: ids, Call: data.Call{Raw: idsJSON(ids), Model: SimilarityExtractorName, TemplateHash: similarityHash}}, nil
}

// The summariser's prompt, written for this project: the "LLM summary" and
// "abstractive" compression variants of the method's comparison.
const (
	summarySystem = `You compress retrieved documents for a question answering system. For each numbered document, write a summary that keeps the facts a reader would need to answer the question, and nothing the documents do not state. Write an empty summary for a document that says nothing relevant.
Reply with one JSON object and nothing else, in this form:
{"summaries": [{"doc": 1, "summary": "..."}]}`

	summaryFull    = "Summarise each document in at most three sentences."
	summaryFocused = "For each document, write at most one short sentence: only the fact that bears on the question, in your own words."

	summaryUser = `Question: {question}

{instruction}

Documents:
{documents}

Reply with the JSON object only.`
)

// SummaryTemplateHash and FocusedSummaryTemplateHash are the template
// hashes of the model-backed summariser's two modes.
var (
	SummaryTemplateHash        = data.TemplateHash(summarySystem, summaryFull, summaryUser)
	FocusedSummaryTemplateHash = data.TemplateHash(summarySystem, summaryFocused, summaryUser)
)

// LLMSummarizer is the model-backed compressor: one call per round that
// summarises each retrieved document (Focused: in one short query-focused
// sentence, the abstractive variant), each summary attributed to its
// document. See LLMExtractor for what the model-backed roles share.
type LLMSummarizer struct {
	llmRole
	focused bool
}

// NewLLMSummarizer returns a summariser that asks c.
func NewLLMSummarizer(c llm.Chatter, model string, focused bool, opts ...LLMOption) *LLMSummarizer {
	return &LLMSummarizer{llmRole: newLLMRole(c, model, 256, opts), focused: focused}
}

type summaryReply struct {
	Summaries []struct {
		Doc     int    `json:"doc" description:"the document's number"`
		Summary string `json:"summary" description:"the summary; empty when the document says nothing relevant"`
	} `json:"summaries"`
}

var summarySchema = mustSchema[summaryReply]("document_summaries")

// Compress implements Compressor.
func (s *LLMSummarizer) Compress(ctx context.Context, question string, _ []data.GapItem, sentences []Numbered) (CompressResult, error) {
	docs := documents(sentences)
	hash, instruction := SummaryTemplateHash, summaryFull
	if s.focused {
		hash, instruction = FocusedSummaryTemplateHash, summaryFocused
	}
	if len(docs) == 0 {
		return CompressResult{Call: data.Call{Model: s.model, TemplateHash: hash}}, nil
	}
	var b strings.Builder
	for i, doc := range docs {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, data.OneLine(doc[0].Title))
		for j, sent := range doc {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(data.OneLine(sent.Text))
		}
		b.WriteString("\n\n")
	}
	user := strings.NewReplacer("{question}", data.OneLine(question), "{instruction}", instruction, "{documents}", strings.TrimSpace(b.String())).Replace(summaryUser)
	var reply summaryReply
	call, err := rolecall.DecodeJSON(ctx, s.c, rolecall.JSONCall{
		Role: "llm summarizer", Model: s.model, Hash: hash,
		Prompt: data.Prompt{System: summarySystem, User: user}, Schema: summarySchema, MaxTokens: s.maxTokens,
	}, &reply)
	if err != nil {
		return CompressResult{}, err
	}
	if call.ParseError != "" {
		return CompressResult{Call: call}, nil
	}
	var ev []data.Evidence
	for _, sm := range reply.Summaries {
		if sm.Doc < 1 || sm.Doc > len(docs) || strings.TrimSpace(sm.Summary) == "" {
			continue
		}
		d := docs[sm.Doc-1][0]
		ev = append(ev, data.Evidence{DocID: d.DocID, Title: d.Title, Index: -1, Text: strings.TrimSpace(sm.Summary)})
	}
	return CompressResult{Evidence: ev, Call: call}, nil
}
