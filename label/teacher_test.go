package label

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
)

func TestTruthVerdict(t *testing.T) {
	ev := func(title string, index int32, text string) data.Evidence {
		return data.Evidence{DocID: title, Title: title, Index: index, Text: text}
	}
	four := data.Question{Text: "Who is the grandfather of the wife of X?", Answers: []string{"Zed"}, GoldTitles: []string{"A", "B", "C", "D"}}
	yesNo := data.Question{Text: "Are A and B both American?", Answers: []string{"yes"}, GoldTitles: []string{"A", "B"},
		SupportingFacts: []data.SupportingFact{{Title: "A", Sentence: 1}, {Title: "B", Sentence: 0}, {Title: "B", Sentence: 2}}}
	tests := []struct {
		name     string
		q        data.Question
		evidence []data.Evidence
		want     data.Verdict
	}{
		{"three of four titles with the answer", four, []data.Evidence{ev("A", 0, "a"), ev("B", 0, "b"), ev("C", 0, "Zed")},
			data.Verdict{Sufficient: true, GapItems: []data.GapItem{}}},
		{"two of four titles with the answer", four, []data.Evidence{ev("A", 0, "a"), ev("C", 0, "Zed")},
			data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryEvidenceSpan, Target: "B", Slot: "supporting facts", Description: "Find what B says that helps answer the question."},
				{Category: data.CategoryEvidenceSpan, Target: "D", Slot: "supporting facts", Description: "Find what D says that helps answer the question."}}}},
		{"every title, no answer", four, []data.Evidence{ev("A", 0, "a"), ev("B", 0, "b"), ev("C", 0, "c"), ev("D", 0, "d")},
			data.Verdict{GapItems: []data.GapItem{{Category: data.CategoryAttribute, Target: "Answer", Slot: "answer", Description: "Find a statement of the answer itself."}}}},
		{"yes/no: the titles and one supporting sentence", yesNo, []data.Evidence{ev("A", 1, "A is American."), ev("B", 1, "B is a film.")},
			data.Verdict{GapItems: []data.GapItem{{Category: data.CategoryEvidenceSpan, Target: "B", Slot: "supporting sentence",
				Description: "Find the statement of B that the answer rests on."}}}},
		{"yes/no: every supporting sentence, no 'yes'", yesNo, []data.Evidence{ev("A", 1, "A is American."), ev("B", 0, "B is"), ev("B", 2, "American.")},
			data.Verdict{Sufficient: true, GapItems: []data.GapItem{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, TruthVerdict(tt.q, tt.evidence)); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
			// The teacher and the label give the same, whether the item's
			// truth was computed ahead (as a run does) or not.
			truth := data.JudgeTruth(tt.q, tt.evidence)
			it := Item{State: Input{QuestionID: "q", Evidence: tt.evidence}, Question: tt.q}
			for _, it := range []Item{it, it.withTruth()} {
				if diff := cmp.Diff(truth, it.Truth()); diff != "" {
					t.Errorf("item truth mismatch (-want +got):\n%s", diff)
				}
				s, err := RetrievalTruth{}.Label(context.Background(), it, 0)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, data.Verdict{Sufficient: s.Sufficient, GapItems: s.GapItems}); diff != "" {
					t.Errorf("teacher's verdict mismatch (-want +got):\n%s", diff)
				}
				l := NewLabel(it, NameRetrievalTruth, RetrievalTruthModel, RetrievalTruthTemplate)
				if l.TruthComplete != truth.Complete || l.TruthAnswerFound != truth.AnswerFound ||
					int(l.TruthTitlesFound) != truth.TitlesFound || l.TruthStrength != truth.Strength.String() {
					t.Errorf("label's truth %v %v %d %s, want %+v", l.TruthComplete, l.TruthAnswerFound, l.TruthTitlesFound, l.TruthStrength, truth)
				}
			}
		})
	}
}

// TestTruthVerdictNeverContradictsTheFilter labels every combination of
// gold titles found, answer found and supporting sentences found, for
// questions of one to ten gold titles, and checks that the built-in teacher
// never says what the filter's strong-positive or strong-negative rule
// would drop.
func TestTruthVerdictNeverContradictsTheFilter(t *testing.T) {
	for n := 1; n <= 10; n++ {
		for _, answer := range []string{"Zed", "yes"} {
			q := data.Question{Text: "?", Answers: []string{answer}}
			for i := range n {
				title := string(rune('A' + i))
				q.GoldTitles = append(q.GoldTitles, title)
				q.SupportingFacts = append(q.SupportingFacts, data.SupportingFact{Title: title, Sentence: 1})
			}
			for mask := 0; mask < 1<<n; mask++ {
				for _, extra := range []struct {
					text  string
					index int32
				}{{"nothing", 0}, {"Zed", 0}, {"nothing", 1}, {"Zed yes", 1}} {
					var evidence []data.Evidence
					for i, title := range q.GoldTitles {
						if mask&(1<<i) != 0 {
							evidence = append(evidence, data.Evidence{Title: title, Index: extra.index, Text: extra.text})
						}
					}
					truth := data.JudgeTruth(q, evidence)
					v := TruthVerdict(q, evidence)
					if (truth.Strength == data.StrongPositive && !v.Sufficient) || (truth.Strength == data.StrongNegative && v.Sufficient) {
						t.Fatalf("%d titles, mask %b, %+v: verdict %v contradicts %v", n, mask, extra, v.Sufficient, truth.Strength)
					}
					if !v.Sufficient && len(v.GapItems) == 0 {
						t.Fatalf("%d titles, mask %b: insufficient without a gap item", n, mask)
					}
				}
			}
		}
	}
}

// TestInputColumnsAreStates checks that every column label reads (Input)
// is a column of the trajectories (data.State) with the same type and
// structure.
func TestInputColumnsAreStates(t *testing.T) {
	testkit.SameColumns(t, Input{}, data.State{}, 13)
}

// TestApplyAnswerCutOff: an answer the server cut off at the token limit
// is recorded as cut off, even when a whole object (a gap item) of it
// parses; a finished answer keeps its own reason.
func TestApplyAnswerCutOff(t *testing.T) {
	cut := `{"sufficient": false, "gap_items": [{"category": "other", "target": "X", "slot": "born", "description": "d"}, {"cat`
	for _, tt := range []struct {
		finish string
		want   bool
	}{{"length", true}, {"stop", false}} {
		var s data.LabelSample
		ApplyAnswer(&s, llm.Response{Content: cut, FinishReason: tt.finish})
		if s.ParseError == "" {
			t.Fatalf("finish %q: no parse error", tt.finish)
		}
		if got := strings.Contains(s.ParseError, llm.ErrCutOff.Error()); got != tt.want {
			t.Errorf("finish %q: parse error %q; says cut off: %v, want %v", tt.finish, s.ParseError, got, tt.want)
		}
	}
}
