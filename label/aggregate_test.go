package label

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
)

func sufficient(k int32) data.LabelSample {
	return data.LabelSample{Sample: k, Sufficient: true, GapItems: []data.GapItem{}}
}

func insufficient(k int32, gaps ...data.GapItem) data.LabelSample {
	return data.LabelSample{Sample: k, GapItems: gaps}
}

var (
	gapA  = data.GapItem{Category: "bridge_entity", Target: "The Band", Slot: "founder", Description: "who founded it"}
	gapA2 = data.GapItem{Category: "Bridge Entity", Target: "the  band", Slot: "Founder", Description: "find the founder"}
	gapB  = data.GapItem{Category: "attribute", Target: "Founder", Slot: "birth year", Description: "when was the founder born"}
	gapC  = data.GapItem{Category: "relation", Target: "X", Slot: "y", Description: "z"}
)

func TestAggregate(t *testing.T) {
	tests := []struct {
		name    string
		samples []data.LabelSample
		want    data.Label // only the aggregate fields
	}{
		{
			name:    "one sufficient sample",
			samples: []data.LabelSample{sufficient(0)},
			want:    data.Label{Sufficient: true, Votes: 1, SufficientVotes: 1, Agreement: 1},
		},
		{
			name:    "one insufficient sample keeps its gaps",
			samples: []data.LabelSample{insufficient(0, gapA, gapB)},
			want:    data.Label{Votes: 1, Agreement: 1, GapItems: []data.GapItem{gapA, gapB}, GapSupport: []int32{1, 1}},
		},
		{
			name:    "three agree, gaps matched on normalised category, target and slot",
			samples: []data.LabelSample{insufficient(0, gapA, gapB), insufficient(1, gapA2), insufficient(2, gapB, gapA2, gapC)},
			// gapA 3 votes, gapB 2, gapC 1 (not more than half of 3)
			want: data.Label{Votes: 3, Agreement: 1, GapItems: []data.GapItem{gapA, gapB}, GapSupport: []int32{3, 2}},
		},
		{
			name:    "two to one for sufficient",
			samples: []data.LabelSample{sufficient(0), insufficient(1, gapA), sufficient(2)},
			want:    data.Label{Sufficient: true, Votes: 3, SufficientVotes: 2, Agreement: 2.0 / 3},
		},
		{
			name:    "two to one for insufficient: gaps of the two",
			samples: []data.LabelSample{insufficient(0, gapA), sufficient(1), insufficient(2, gapB, gapA)},
			want:    data.Label{Votes: 3, SufficientVotes: 1, Agreement: 2.0 / 3, GapItems: []data.GapItem{gapA}, GapSupport: []int32{2}},
		},
		{
			name:    "a tie is insufficient",
			samples: []data.LabelSample{sufficient(0), insufficient(1, gapC)},
			want:    data.Label{Votes: 2, SufficientVotes: 1, Agreement: 0.5, GapItems: []data.GapItem{gapC}, GapSupport: []int32{1}},
		},
		{
			name: "an unusable sample agrees with nothing",
			samples: []data.LabelSample{sufficient(0), sufficient(1),
				{Sample: 2, Output: "yes", ParseError: "bad verdict: no JSON"}},
			want: data.Label{Sufficient: true, Votes: 2, SufficientVotes: 2, Agreement: 2.0 / 3},
		},
		{
			name: "no usable sample is a failure",
			samples: []data.LabelSample{{Sample: 0, Error: "status 500"},
				{Sample: 1, ParseError: `bad verdict: "sufficient" is "yes"`, Contradiction: NonBooleanSufficient}},
			want: data.Label{Failure: `no usable sample: sample 0: status 500; sample 1: bad verdict: "sufficient" is "yes"`,
				Contradiction: true, Contradictions: []string{"sample 1: non-boolean sufficient"}},
		},
		{
			name: "contradictions are listed",
			samples: []data.LabelSample{
				{Sample: 0, Sufficient: true, Contradiction: SufficientWithGaps},
				{Sample: 1, Contradiction: InsufficientWithout},
				{Sample: 2, Sufficient: true}},
			want: data.Label{Sufficient: true, Votes: 3, SufficientVotes: 2, Agreement: 2.0 / 3, Contradiction: true,
				Contradictions: []string{"sample 0: sufficient with gap items", "sample 1: insufficient with no gap items"}},
		},
		{
			name: "no samples",
			want: data.Label{Failure: "no samples"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := data.Label{Samples: tt.samples}
			Aggregate(&l)
			got := data.Label{Sufficient: l.Sufficient, GapItems: l.GapItems, GapSupport: l.GapSupport, Votes: l.Votes,
				SufficientVotes: l.SufficientVotes, Agreement: l.Agreement, Contradiction: l.Contradiction,
				Contradictions: l.Contradictions, Failure: l.Failure}
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmpopts.EquateApprox(1e-12, 0)); d != "" {
				t.Errorf("aggregate (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name, text    string
		want          data.Verdict
		contradiction string
		wantErr       bool
	}{
		{name: "sufficient", text: `{"sufficient": true, "gap_items": []}`, want: data.Verdict{Sufficient: true}},
		{name: "insufficient with gaps", text: `{"sufficient": false, "gap_items": [{"category": "attribute", "target": "A", "slot": "b", "description": "c"}]}`,
			want: data.Verdict{GapItems: []data.GapItem{{Category: "attribute", Target: "A", Slot: "b", Description: "c"}}}},
		{name: "in prose and a code fence", text: "Here you go:\n```json\n{\"sufficient\": true}\n```", want: data.Verdict{Sufficient: true}},
		{name: "sufficient with gaps: gaps dropped, contradiction kept", text: `{"sufficient": true, "gap_items": [{"category": "other"}]}`,
			want: data.Verdict{Sufficient: true}, contradiction: SufficientWithGaps},
		{name: "insufficient with no gaps", text: `{"sufficient": false, "gap_items": []}`, contradiction: InsufficientWithout},
		{name: "insufficient with null gaps", text: `{"sufficient": false, "gap_items": null}`, contradiction: InsufficientWithout},
		{name: "string verdict", text: `{"sufficient": "true", "gap_items": []}`, contradiction: NonBooleanSufficient, wantErr: true},
		{name: "number verdict", text: `{"sufficient": 1}`, contradiction: NonBooleanSufficient, wantErr: true},
		{name: "no verdict", text: `{"gap_items": []}`, wantErr: true},
		{name: "raw newline in a string", text: "{\"sufficient\": false, \"gap_items\": [{\"category\": \"attribute\", \"target\": \"A\", \"slot\": \"b\", \"description\": \"the\nplace\"}]}",
			want: data.Verdict{GapItems: []data.GapItem{{Category: "attribute", Target: "A", Slot: "b", Description: "the\nplace"}}}},
		{name: "no JSON", text: `The evidence is sufficient.`, wantErr: true},
		{name: "truncated JSON", text: `{"sufficient": false, "gap_items": [{"category": "attr`, wantErr: true},
		{name: "gap item not an object", text: `{"sufficient": false, "gap_items": ["x"]}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, c, err := ParseAnswer(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, judge.ErrVerdict) {
				t.Errorf("err %v does not match judge.ErrVerdict", err)
			}
			if c != tt.contradiction {
				t.Errorf("contradiction %q, want %q", c, tt.contradiction)
			}
			if d := cmp.Diff(tt.want, v, cmpopts.EquateEmpty()); d != "" && err == nil {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
		})
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"sufficient": true}`, `{"sufficient": false, "gap_items": [{"category": "x"}]}`,
		`{"sufficient": "no"}`, "```json\n{}\n```", `{"gap_items": [null]}`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, _, err := ParseAnswer(s)
		if err == nil && v.Sufficient && len(v.GapItems) > 0 {
			t.Errorf("sufficient verdict with gap items from %q", s)
		}
	})
}

func TestRetrievalTruth(t *testing.T) {
	q := data.Question{ID: "q", Text: "Who founded the band that wrote X?", Answers: []string{"Jane Roe"},
		GoldTitles: []string{"X (song)", "The Band"}}
	ev := func(pairs ...string) []data.Evidence {
		var out []data.Evidence
		for i := 0; i+1 < len(pairs); i += 2 {
			out = append(out, data.Evidence{Title: pairs[i], Text: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name     string
		evidence []data.Evidence
		want     data.Verdict
	}{
		{"all there", ev("X (song)", "X is a song by The Band.", "The Band", "The Band was founded by Jane Roe."), data.Verdict{Sufficient: true}},
		{"nothing yet", nil, data.Verdict{GapItems: []data.GapItem{
			{Category: "evidence_span", Target: "X (song)", Slot: "supporting facts", Description: "Find what X (song) says that helps answer the question."},
			{Category: "evidence_span", Target: "The Band", Slot: "supporting facts", Description: "Find what The Band says that helps answer the question."}}}},
		{"one title missing", ev("X (song)", "X is a song by The Band."), data.Verdict{GapItems: []data.GapItem{
			{Category: "evidence_span", Target: "The Band", Slot: "supporting facts", Description: "Find what The Band says that helps answer the question."}}}},
		{"titles there, no answer", ev("X (song)", "X is a song.", "The Band", "The Band is a band."), data.Verdict{GapItems: []data.GapItem{
			{Category: "attribute", Target: "Answer", Slot: "answer", Description: "Find a statement of the answer itself."}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := Item{State: Input{QuestionID: "q", Evidence: tt.evidence}, Question: q}
			s, err := RetrievalTruth{}.Label(t.Context(), it, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := data.Verdict{Sufficient: s.Sufficient, GapItems: s.GapItems}
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
			// The raw output parses back to the same verdict.
			v, c, err := ParseAnswer(s.Output)
			if err != nil || c != "" || !cmp.Equal(v, got, cmpopts.EquateEmpty()) {
				t.Errorf("output %s parses to %+v, %q, %v", s.Output, v, c, err)
			}
			if s.Model != RetrievalTruthModel || s.TemplateHash != RetrievalTruthTemplate {
				t.Errorf("provenance %q %q", s.Model, s.TemplateHash)
			}
		})
	}
}
