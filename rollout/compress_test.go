package rollout

import (
	"context"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// roundSentences numbers two documents of three sentences each.
func roundSentences() []Numbered {
	var out []Numbered
	for _, d := range []struct{ id, title string }{{"d1", "Ann Lee"}, {"d2", "Bob Roe"}} {
		for i, text := range []string{d.title + " is a painter.", d.title + " was born in Paris in 1901.", "The weather was fine."} {
			e := data.Evidence{DocID: d.id, Title: d.title, Index: int32(i), Text: text}
			out = append(out, Numbered{ID: len(out) + 1, Evidence: e, Line: NumberedLine(len(out)+1, e)})
		}
	}
	return out
}

func TestBuiltinCompressionRoles(t *testing.T) {
	ctx := context.Background()
	s := roundSentences()
	lead, err := LeadSummary{}.Compress(ctx, "Where was Ann Lee born?", nil, s)
	if err != nil || len(lead.Evidence) != 4 || lead.Evidence[2].DocID != "d2" || lead.Evidence[2].Index != 0 || lead.Model != LeadSummaryName {
		t.Errorf("lead summary %+v, %v", lead, err)
	}
	focused, err := FocusedSummary{Words: 4}.Compress(ctx, "Where was Ann Lee born?", nil, s)
	if err != nil || len(focused.Evidence) == 0 || !strings.HasSuffix(focused.Evidence[0].Text, " ...") || focused.Evidence[0].Index != -1 {
		t.Errorf("focused summary %+v, %v", focused, err)
	}
	all, err := AllSentences{}.Extract(ctx, "q", nil, s, 100)
	if err != nil || len(all.IDs) != 6 || all.IDs[5] != 6 {
		t.Errorf("all sentences %+v, %v", all, err)
	}
	sim, err := SimilarityExtractor{}.Extract(ctx, "Where was Ann Lee born?", nil, s, 2)
	if err != nil || len(sim.IDs) != 2 || sim.IDs[0] != 2 {
		t.Errorf("similarity extractor %+v, %v", sim, err)
	}
}

func TestLLMSummarizer(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Answer: func(r llmtest.Request) string {
		return `{"summaries": [{"doc": 1, "summary": "Ann Lee, a painter, was born in Paris."}, {"doc": 2, "summary": ""}, {"doc": 9, "summary": "out of range"}]}`
	}})
	defer srv.Close()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, focused := range []bool{false, true} {
		res, err := NewLLMSummarizer(c, "m", focused).Compress(context.Background(), "Where was Ann Lee born?", nil, roundSentences())
		if err != nil || len(res.Evidence) != 1 || res.Evidence[0].DocID != "d1" || res.Evidence[0].Title != "Ann Lee" || res.Evidence[0].Index != -1 {
			t.Fatalf("focused %v: %+v, %v", focused, res, err)
		}
		want := SummaryTemplateHash
		if focused {
			want = FocusedSummaryTemplateHash
		}
		if res.TemplateHash != want {
			t.Errorf("template hash %s, want %s", res.TemplateHash, want)
		}
	}
	req := srv.Requests()[0]
	if !strings.Contains(req.Messages[1].Content, "[1] Ann Lee\nAnn Lee is a painter. Ann Lee was born in Paris in 1901.") {
		t.Errorf("documents not shown as expected:\n%s", req.Messages[1].Content)
	}
}

// TestLoopWithCompressor runs the sample with each compression role in the
// extractor's place: every question ends with evidence written by it.
func TestLoopWithCompressor(t *testing.T) {
	w := synth.Sample()
	x := buildIndex(t, w.Passages)
	for _, comp := range []Compressor{LeadSummary{}, FocusedSummary{}} {
		roles := Roles{Judge: judge.Lexical{}, Compressor: comp, Reader: LexicalReader{}, Retriever: x}
		correct := 0
		for _, q := range w.Questions[:50] {
			tr, err := Run(context.Background(), q, roles, Options{})
			if err != nil {
				t.Fatal(err)
			}
			last := tr.States[len(tr.States)-1]
			if len(tr.States) > 1 && tr.States[1].ExtractorModel == "" {
				t.Fatalf("the compressor's call is not recorded: %+v", tr.States[1])
			}
			if data.ContainsAnswer(last.Answer, q.Answers) {
				correct++
			}
		}
		t.Logf("%T: %d of 50 answers right", comp, correct)
		if correct == 0 {
			t.Errorf("%T: no answer right", comp)
		}
	}
}
