package rollout

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
)

func TestBudgetsApply(t *testing.T) {
	tests := []struct {
		name    string
		b       Budgets
		wantErr bool
	}{
		{name: "no window", b: Budgets{}},
		{name: "SmolLM2's 8192", b: Budgets{Window: 8192}},
		{name: "2048 with long answers", b: Budgets{Window: 2048, JudgeMaxTokens: 1024}},
		{name: "too small", b: Budgets{Window: 600}, wantErr: true},
		{name: "negative", b: Budgets{Window: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Options
			err := tt.b.Apply(&o)
			if tt.wantErr {
				if !errors.Is(err, ErrOptions) {
					t.Fatalf("got %v, want an ErrOptions", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.b.Window == 0 {
				if o.EvidenceTokens != 0 || o.CandidateTokens != 0 {
					t.Errorf("got budgets %d, %d, want none", o.EvidenceTokens, o.CandidateTokens)
				}
				return
			}
			// Every prompt at its budget, with its answer, fits the window.
			judgeMax := orDefault(tt.b.JudgeMaxTokens, judge.DefaultMaxTokens)
			jp := judge.Prompt("", "")
			if got := promptTokens(jp) + o.EvidenceTokens + judgeMax + chatOverhead; got > tt.b.Window {
				t.Errorf("judge prompt at budget: %d tokens, window %d", got, tt.b.Window)
			}
			rp := ReaderPrompt("", "")
			if got := promptTokens(rp) + o.EvidenceTokens + DefaultReaderMaxTokens + chatOverhead; got > tt.b.Window {
				t.Errorf("reader prompt at budget: %d tokens, window %d", got, tt.b.Window)
			}
			xp := ExtractorPrompt("", nil, nil, DefaultMaxEvidence)
			if got := promptTokens(xp) + o.CandidateTokens + reservedGapTokens + DefaultExtractorMaxTokens + chatOverhead; got > tt.b.Window {
				t.Errorf("extractor prompt at budget: %d tokens, window %d", got, tt.b.Window)
			}
			if tt.b.Window == 8192 && o.EvidenceTokens < 6000 {
				t.Errorf("evidence budget %d of an 8192 window: want at least 6000", o.EvidenceTokens)
			}
		})
	}
}

// longCorpus makes n passages of twelve sentences of about 20 tokens each.
func longCorpus(n int) []data.Passage {
	var ps []data.Passage
	for i := range n {
		title := fmt.Sprintf("Title %d", i)
		var ss []string
		for j := range 12 {
			ss = append(ss, fmt.Sprintf("Sentence %d of document %d says that the river Alder flows past the town of Merrow in the north.", j, i))
		}
		ps = append(ps, data.Passage{ID: fmt.Sprintf("d%d", i), Title: title, Sentences: ss})
	}
	return ps
}

// TestLoopTokenBudgets runs the loop with budgets far smaller than what it
// retrieves: the extractor is shown a prefix of the numbered sentences that
// fits, every recorded context fits, and what was left out is counted on
// the states and in the trajectory, the same on a second run.
func TestLoopTokenBudgets(t *testing.T) {
	const evidenceBudget, candidateBudget = 300, 400
	runOnce := func() (*fakes, Trajectory) {
		f := newFakes(insufficient())
		f.retriever.corpus = longCorpus(40)
		f.extractor.choose = func(_ int, s []Numbered) ExtractResult {
			// The last six shown: the trimming keeps a prefix of them.
			var ids []int
			for _, n := range s[max(0, len(s)-6):] {
				ids = append(ids, n.ID)
			}
			return ExtractResult{IDs: ids}
		}
		tr := run(t, f, Options{Policy: Fixed, EvidenceTokens: evidenceBudget, CandidateTokens: candidateBudget})
		return f, tr
	}
	f, tr := runOnce()
	q := EstimateTokens(testQuestion.Text)
	for i, call := range f.extractor.calls {
		used := q
		for _, n := range call.sentences {
			used += EstimateTokens(n.Line) + 1
		}
		if used > candidateBudget {
			t.Errorf("extractor call %d shown %d tokens, budget %d", i, used, candidateBudget)
		}
		if len(call.sentences) == 0 || len(call.sentences) >= 6*12 {
			t.Errorf("extractor call %d shown %d sentences, want some but not all 72", i, len(call.sentences))
		}
	}
	var candidatesTrimmed, evidenceTrimmed int
	for _, st := range tr.States {
		if got := q + EstimateTokens(st.Context); got > evidenceBudget {
			t.Errorf("round %d: context of %d tokens, budget %d", st.Round, got, evidenceBudget)
		}
		if st.Round > 0 && int(st.Candidates+st.CandidatesTrimmed) != 6*12 {
			t.Errorf("round %d: %d shown + %d trimmed, want the 72 sentences retrieved", st.Round, st.Candidates, st.CandidatesTrimmed)
		}
		candidatesTrimmed += int(st.CandidatesTrimmed)
		evidenceTrimmed += int(st.EvidenceTrimmed)
	}
	if candidatesTrimmed == 0 || evidenceTrimmed == 0 {
		t.Errorf("got %d candidates and %d evidence sentences trimmed, want both > 0", candidatesTrimmed, evidenceTrimmed)
	}
	if tr.Counts.CandidatesTrimmed != candidatesTrimmed || tr.Counts.EvidenceTrimmed != evidenceTrimmed {
		t.Errorf("counts %d, %d: want the states' %d, %d", tr.Counts.CandidatesTrimmed, tr.Counts.EvidenceTrimmed, candidatesTrimmed, evidenceTrimmed)
	}
	if _, again := runOnce(); again.Context.Render() != tr.Context.Render() {
		t.Errorf("a second run trimmed differently:\n%s\nwant\n%s", again.Context.Render(), tr.Context.Render())
	}
}

func TestEstimateTokensLeansHigh(t *testing.T) {
	for _, s := range []string{"", "Paris", "The Alder flows past Merrow.", strings.Repeat("word ", 100)} {
		got := EstimateTokens(s)
		if s == "" && got != 0 {
			t.Errorf("EstimateTokens(%q) = %d, want 0", s, got)
		}
		if n := len(strings.Fields(s)); got < n {
			t.Errorf("EstimateTokens(%q) = %d, want at least one a word (%d)", s, got, n)
		}
	}
}
