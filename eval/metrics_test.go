package eval

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

func TestEMF1(t *testing.T) {
	tests := []struct {
		name       string
		prediction string
		golds      []string
		em, f1     float64
	}{
		{"exact", "Paris", []string{"Paris"}, 1, 1},
		{"case and article", "The Beatles", []string{"beatles"}, 1, 1},
		{"article an", "an apple", []string{"Apple"}, 1, 1},
		{"article inside a word stays", "Theatre", []string{"atre"}, 0, 0},
		{"punctuation", "Beatles!", []string{"The Beatles"}, 1, 1},
		{"punctuation removed without a space", "rock-and-roll", []string{"rockandroll"}, 1, 1},
		{"hyphen joins the words", "rock-and-roll", []string{"rock and roll"}, 0, 0},
		{"thousands separator", "1,000", []string{"1000"}, 1, 1},
		{"abbreviation", "U.S.", []string{"US"}, 1, 1},
		{"white space", "  New\tYork \n City ", []string{"new york city"}, 1, 1},
		{"accents kept", "Café", []string{"cafe"}, 0, 0},
		{"accents equal", "CAFÉ", []string{"café"}, 1, 1},
		// Only ASCII punctuation is removed, as Python's string.punctuation.
		{"non-ASCII quotes kept", "“Paris”", []string{"Paris"}, 0, 0},
		{"non-ASCII dash kept", "1990–1995", []string{"1990 1995"}, 0, 0},
		{"several golds, second matches", "NYC", []string{"New York City", "NYC"}, 1, 1},
		{"several golds, max F1", "John Smith", []string{"Smith", "John Smith Jr"}, 0, 4.0 / 5},
		{"empty prediction", "", []string{"Paris"}, 0, 0},
		{"prediction only articles", "the", []string{"Paris"}, 0, 0},
		{"no golds", "Paris", nil, 0, 0},
		{"empty prediction, no golds", "", nil, 0, 0},
		// The reference: equal empty strings match, and score F1 1.
		{"both normalise to empty", "the", []string{"a"}, 1, 1},
		{"both empty", "", []string{""}, 1, 1},
		{"empty gold only", "Paris", []string{""}, 0, 0},
		{"partial: recall 2/3", "New York", []string{"New York City"}, 0, 4.0 / 5},
		{"partial: precision 3/4", "the cat sat on the mat", []string{"a cat on a mat"}, 0, 6.0 / 7},
		{"repeated tokens count once", "Paris Paris", []string{"Paris"}, 0, 2.0 / 3},
		{"accented token does not overlap", "café noir", []string{"cafe noir"}, 0, 1.0 / 2},
		{"max over golds 1/2 vs 2/5", "in 1912 probably", []string{"1912", "April 1912"}, 0, 1.0 / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EM(tt.prediction, tt.golds); got != tt.em {
				t.Errorf("EM(%q, %q) = %v, want %v", tt.prediction, tt.golds, got, tt.em)
			}
			if got := F1(tt.prediction, tt.golds); got != tt.f1 {
				t.Errorf("F1(%q, %q) = %v, want %v", tt.prediction, tt.golds, got, tt.f1)
			}
		})
	}
}

func TestScoreAnswerScorings(t *testing.T) {
	tests := []struct {
		name       string
		prediction string
		golds      []string
		scoring    Scoring
		want       AnswerScore
	}{
		{"reference: both empty", "the", []string{"a"}, ScoringReference, AnswerScore{EM: 1, F1: 1, Precision: 1, Recall: 1}},
		{"default is the reference", "", []string{""}, "", AnswerScore{EM: 1, F1: 1, Precision: 1, Recall: 1}},
		{"squad: both empty", "the", []string{"a"}, ScoringSQuAD, AnswerScore{EM: 1}},
		{"squad: partial", "New York", []string{"New York City"}, ScoringSQuAD, AnswerScore{F1: 4.0 / 5, Precision: 1, Recall: 2.0 / 3}},
		{"precision and recall of the best gold", "John Smith", []string{"Smith", "John Smith Jr"}, ScoringReference,
			AnswerScore{F1: 4.0 / 5, Precision: 1, Recall: 2.0 / 3}},
		{"empty gold beside a real one", "", []string{"Paris", ""}, ScoringReference, AnswerScore{EM: 1, F1: 1, Precision: 1, Recall: 1}},
		{"no golds", "", nil, ScoringReference, AnswerScore{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScoreAnswer(tt.prediction, tt.golds, tt.scoring); got != tt.want {
				t.Errorf("ScoreAnswer(%q, %q, %q) = %+v, want %+v", tt.prediction, tt.golds, tt.scoring, got, tt.want)
			}
		})
	}
}

// TestScoreAnswerMatchesReference checks ScoreAnswer, bit for bit, against
// scores computed once in Python the way the reference scripts compute them
// (testdata/reference_scores.py): hand-picked cases and random answers over
// a vocabulary of articles, punctuation, case and repeats.
func TestScoreAnswerMatchesReference(t *testing.T) {
	b, err := os.ReadFile("testdata/reference_scores.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][]json.RawMessage
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 400 {
		t.Fatalf("got %d cases, want at least 400", len(cases))
	}
	for i, c := range cases {
		var (
			pred  string
			golds []string
			nums  [5]float64
		)
		if len(c) != 7 {
			t.Fatalf("case %d: got %d fields, want 7", i, len(c))
		}
		for j, dst := range []any{&pred, &golds, &nums[0], &nums[1], &nums[2], &nums[3], &nums[4]} {
			if err := json.Unmarshal(c[j], dst); err != nil {
				t.Fatalf("case %d field %d: %v", i, j, err)
			}
		}
		ref := ScoreAnswer(pred, golds, ScoringReference)
		want := AnswerScore{EM: nums[0], F1: nums[1], Precision: nums[3], Recall: nums[4]}
		if ref != want {
			t.Errorf("ScoreAnswer(%q, %q, reference) = %+v, want %+v", pred, golds, ref, want)
		}
		if got := ScoreAnswer(pred, golds, ScoringSQuAD).F1; got != nums[2] {
			t.Errorf("ScoreAnswer(%q, %q, squad).F1 = %v, want %v", pred, golds, got, nums[2])
		}
	}
}

func TestParseScoring(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Scoring
		wantErr bool
	}{{"", ScoringReference, false}, {"reference", ScoringReference, false}, {" SQuAD ", ScoringSQuAD, false}, {"v2", "", true}} {
		got, err := ParseScoring(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseScoring(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestQuantile(t *testing.T) {
	tests := []struct {
		xs             []float64
		median, p90    float64
		wantMean       float64
		name           string
		wantZeroSpread bool
	}{
		{name: "empty", wantZeroSpread: true},
		{name: "one", xs: []float64{2}, median: 2, p90: 2, wantMean: 2},
		{name: "four", xs: []float64{4, 1, 3, 2}, median: 2.5, p90: 3.7, wantMean: 2.5},
		{name: "odd", xs: []float64{5, 1, 3}, median: 3, p90: 4.6, wantMean: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spread(tt.xs)
			want := Spread{Median: tt.median, P90: tt.p90, Mean: tt.wantMean}
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("spread(%v) mismatch (-want +got):\n%s", tt.xs, diff)
			}
		})
	}
}

// The contexts of the hand-built trajectories.
const (
	ctxFrance  = "[France]\nFrance's capital is Paris."
	ctxEiffel  = ctxFrance + "\n\n[Eiffel Tower]\nThe Eiffel Tower is in Paris."
	ctxTitanic = "[Titanic]\nThe Titanic sank in April 1912."
	ctxLondon  = "[London]\nLondon is the capital of England."
	ctxSky     = "[Sky]\nThe sky is blue."
)

func ev(docID, title string, text string) data.Evidence {
	return data.Evidence{DocID: docID, Title: title, Text: text}
}

func doc(round int32, rank int32, id, title string, chars int32) data.RetrievedDoc {
	return data.RetrievedDoc{Round: round, Rank: rank, DocID: id, Title: title, Chars: chars}
}

func gap(category string) data.GapItem {
	return data.GapItem{Category: category, Target: "x", Slot: "y"}
}

// fixture is five questions, one per case that matters:
//   - q1 stops on a correct sufficient verdict after two rounds (TN, TN, TP);
//   - q2 spends its budget of one with the gold evidence there (TN, FN)
//     and answers partly right;
//   - q3 failed before its first judge call;
//   - q4 stops early on the wrong evidence (TN, FP): a premature stop;
//   - q5 has no gold titles (its states are not measured).
//
// The rows are in a shuffled order: rounds out of order, questions
// interleaved.
func fixture() ([]data.State, map[string]data.Question) {
	questions := map[string]data.Question{
		"q1":     {ID: "q1", Dataset: "toy", Text: "Where is the Eiffel Tower?", Answers: []string{"Paris"}, GoldTitles: []string{"France", "Eiffel Tower"}},
		"q2":     {ID: "q2", Dataset: "toy", Text: "When did the Titanic sink?", Answers: []string{"1912", "April 1912"}, GoldTitles: []string{"Titanic"}},
		"q3":     {ID: "q3", Dataset: "toy", Text: "Broken?", Answers: []string{"x"}, GoldTitles: []string{"X"}},
		"q4":     {ID: "q4", Dataset: "toy", Text: "What is the capital of Germany?", Answers: []string{"Berlin"}, GoldTitles: []string{"Germany"}},
		"q5":     {ID: "q5", Dataset: "toy", Text: "What colour is the sky?", Answers: []string{"blue"}},
		"unused": {ID: "unused", Answers: []string{"y"}},
	}
	franceDocs := []data.RetrievedDoc{doc(0, 1, "d1", "France", 400), doc(0, 2, "d2", "Spain", 600)}
	states := []data.State{
		{QuestionID: "q1", Dataset: "toy", Round: 2, Context: ctxEiffel,
			Evidence:   []data.Evidence{ev("d1", "France", "France's capital is Paris."), ev("d3", "Eiffel Tower", "The Eiffel Tower is in Paris.")},
			Retrieved:  append(franceDocs[:2:2], doc(1, 1, "d3", "Eiffel Tower", 1000)),
			Sufficient: true, IsFinal: true, Answer: "Paris",
			JudgeMS: 100, RetrieveMS: 20, ExtractMS: 300, ReadMS: 200},
		{QuestionID: "q2", Dataset: "toy", Round: 0, GapItems: []data.GapItem{gap("relation")}, JudgeMS: 50},
		{QuestionID: "q1", Dataset: "toy", Round: 0, GapItems: []data.GapItem{gap("bridge_entity")}, JudgeMS: 100},
		{QuestionID: "q2", Dataset: "toy", Round: 1, Context: ctxTitanic,
			Evidence:  []data.Evidence{ev("d4", "Titanic", "The Titanic sank in April 1912.")},
			Retrieved: []data.RetrievedDoc{doc(0, 1, "d4", "Titanic", 500)},
			GapItems:  []data.GapItem{gap("evidence")}, IsFinal: true, Answer: "in 1912 probably",
			JudgeMS: 50, RetrieveMS: 10, ExtractMS: 100, ReadMS: 40},
		{QuestionID: "q1", Dataset: "toy", Round: 1, Context: ctxFrance,
			Evidence:  []data.Evidence{ev("d1", "France", "France's capital is Paris.")},
			Retrieved: franceDocs,
			GapItems:  []data.GapItem{gap("Attribute"), gap("bridge entity")},
			JudgeMS:   100, RetrieveMS: 20, ExtractMS: 300},
		{QuestionID: "q3", Dataset: "toy", IsFinal: true, Failure: "judge at round 0: boom"},
		{QuestionID: "q4", Dataset: "toy", Round: 0, GapItems: []data.GapItem{gap("Bridge-Entities")}, JudgeMS: 50},
		{QuestionID: "q4", Dataset: "toy", Round: 1, Context: ctxLondon,
			Evidence:   []data.Evidence{ev("d5", "London", "London is the capital of England.")},
			Retrieved:  []data.RetrievedDoc{doc(0, 1, "d5", "London", 1000)},
			Sufficient: true, IsFinal: true, Answer: "London",
			JudgeMS: 50, RetrieveMS: 10, ExtractMS: 100, ReadMS: 40},
		{QuestionID: "q5", Dataset: "toy", Round: 0, JudgeMS: 50},
		{QuestionID: "q5", Dataset: "toy", Round: 1, Context: ctxSky,
			Evidence:   []data.Evidence{ev("d6", "Sky", "The sky is blue.")},
			Retrieved:  []data.RetrievedDoc{doc(0, 1, "d6", "Sky", 250)},
			Sufficient: true, IsFinal: true, Answer: "Blue.",
			JudgeMS: 50, RetrieveMS: 10, ExtractMS: 100, ReadMS: 40},
	}
	return states, questions
}

func tokens(s string) int { return llm.CountTokens("", s) }

func TestComputeQuestionResults(t *testing.T) {
	states, questions := fixture()
	_, results, err := Compute(states, questions, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []QuestionResult{
		{ID: "q1", Dataset: "toy", Question: "Where is the Eiffel Tower?", Answer: "Paris", Golds: []string{"Paris"},
			EM: 1, F1: 1, Rounds: 2, States: 3, GoldTitles: 2, CorrectRetrieval: true, GoldTitleRecall: 1,
			AnswerInEvidence: true, EvidenceChars: len(ctxEiffel), RawChars: 2035, EvidenceTokens: tokens(ctxEiffel),
			LatencyMS: 1140, JudgeMS: 300, RetrieveMS: 40, ExtractMS: 600, ReadMS: 200,
			EndReason: EndSufficient,
			Judgments: []Judgment{{0, false, false, true}, {1, false, false, true}, {2, true, true, true}}},
		{ID: "q2", Dataset: "toy", Question: "When did the Titanic sink?", Answer: "in 1912 probably", Golds: []string{"1912", "April 1912"},
			EM: 0, F1: 0.5, Rounds: 1, States: 2, GoldTitles: 1, CorrectRetrieval: true, GoldTitleRecall: 1,
			AnswerInEvidence: true, EvidenceChars: len(ctxTitanic), RawChars: 511, EvidenceTokens: tokens(ctxTitanic),
			LatencyMS: 250, JudgeMS: 100, RetrieveMS: 10, ExtractMS: 100, ReadMS: 40,
			EndReason: EndBudget,
			Judgments: []Judgment{{0, false, false, true}, {1, false, true, true}}},
		{ID: "q3", Dataset: "toy", Question: "Broken?", Golds: []string{"x"}, GoldTitles: 1,
			Failure: "judge at round 0: boom", EndReason: EndFailed},
		{ID: "q4", Dataset: "toy", Question: "What is the capital of Germany?", Answer: "London", Golds: []string{"Berlin"},
			Rounds: 1, States: 2, GoldTitles: 1,
			EvidenceChars: len(ctxLondon), RawChars: 1010, EvidenceTokens: tokens(ctxLondon),
			LatencyMS: 250, JudgeMS: 100, RetrieveMS: 10, ExtractMS: 100, ReadMS: 40,
			EndReason: EndSufficient, Premature: true,
			Judgments: []Judgment{{0, false, false, true}, {1, true, false, true}}},
		{ID: "q5", Dataset: "toy", Question: "What colour is the sky?", Answer: "Blue.", Golds: []string{"blue"},
			EM: 1, F1: 1, Rounds: 1, States: 2,
			AnswerInEvidence: true, EvidenceChars: len(ctxSky), RawChars: 257, EvidenceTokens: tokens(ctxSky),
			LatencyMS: 250, JudgeMS: 100, RetrieveMS: 10, ExtractMS: 100, ReadMS: 40,
			EndReason: EndSufficient,
			Judgments: []Judgment{{Round: 0}, {Round: 1, JudgedSufficient: true}}},
	}
	if diff := cmp.Diff(want, results, cmpopts.EquateApprox(0, 1e-9), cmpopts.IgnoreUnexported(QuestionResult{})); diff != "" {
		t.Errorf("results mismatch (-want +got):\n%s", diff)
	}
}

func TestComputeMetrics(t *testing.T) {
	states, questions := fixture()
	usage := []llm.Stats{
		{Role: "judge", Model: "m", Requests: 9, CostUSD: 0.5},
		{Role: "reader", Model: "r", Requests: 4, CostUSD: 0.25},
	}
	m, _, err := Compute(states, questions, usage, "")
	if err != nil {
		t.Fatal(err)
	}
	evidence := int64(len(ctxEiffel) + len(ctxTitanic) + len(ctxLondon) + len(ctxSky))
	evTokens := int64(tokens(ctxEiffel) + tokens(ctxTitanic) + tokens(ctxLondon) + tokens(ctxSky))
	// Raw characters: each document's text and its "[title]" line.
	meanRatio := (float64(len(ctxEiffel))/2035 + float64(len(ctxTitanic))/511 +
		float64(len(ctxLondon))/1010 + float64(len(ctxSky))/257) / 4
	want := Metrics{
		Questions: 5, Failed: 1,
		EM: 40, F1: 50,
		GoldTitleQuestions: 4, CorrectRetrieval: 50, GoldTitleRecall: 50,
		AnswerInEvidence: 60,
		Premature:        100.0 / 3,
		Calibration: Calibration{
			States: 7, Unmeasured: 2,
			Confusion:         Confusion{TP: 1, FP: 1, FN: 1, TN: 4},
			FalsePositiveRate: 20, CompleteJudgedInsufficient: 50,
		},
		Rounds:     []int{0, 3, 1},
		MeanRounds: 1.25,
		EndReasons: map[string]int{EndSufficient: 3, EndBudget: 1, EndFailed: 1},
		GapCategories: map[string]int{
			data.CategoryBridgeEntity: 3, data.CategoryAttribute: 1, data.CategoryRelation: 1,
			data.CategoryEvidenceSpan: 1, data.CategoryOther: 0,
		},
		Compression: Compression{
			EvidenceChars: evidence, RawChars: 3813,
			Ratio:     float64(evidence) / 3813,
			MeanRatio: meanRatio, EvidenceTokens: evTokens,
			MeanEvidenceTokens: float64(evTokens) / 4,
		},
		Latency: Latency{
			// Seconds per question: 1.14, 0.25, 0.25, 0.25.
			Question: Spread{Median: 0.25, P90: 0.25 + 0.7*0.89, Mean: 1.89 / 4},
			Judge:    Spread{Median: 0.1, P90: 0.1 + 0.7*0.2, Mean: 0.6 / 4},
			Retrieve: Spread{Median: 0.01, P90: 0.01 + 0.7*0.03, Mean: 0.07 / 4},
			Extract:  Spread{Median: 0.1, P90: 0.1 + 0.7*0.5, Mean: 0.9 / 4},
			Read:     Spread{Median: 0.04, P90: 0.04 + 0.7*0.16, Mean: 0.32 / 4},
		},
		Usage:   usage,
		CostUSD: 0.75,
	}
	if diff := cmp.Diff(want, m, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("metrics mismatch (-want +got):\n%s", diff)
	}
}

func TestComputeEmpty(t *testing.T) {
	m, results, err := Compute(nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 0 || m.Questions != 0 || m.EM != 0 || len(m.Rounds) != 0 {
		t.Errorf("Compute(nil) = %+v, %v; want zero metrics and no results", m, results)
	}
	for _, f := range []float64{m.F1, m.CorrectRetrieval, m.Calibration.FalsePositiveRate, m.Compression.Ratio, m.Latency.Question.P90} {
		if math.IsNaN(f) {
			t.Errorf("Compute(nil) has a NaN: %+v", m)
		}
	}
}

func TestComputeErrors(t *testing.T) {
	questions := map[string]data.Question{"q1": {ID: "q1", Answers: []string{"a"}}}
	tests := []struct {
		name   string
		states []data.State
		want   string
	}{
		{"unknown question", []data.State{{QuestionID: "q9", IsFinal: true}}, "question q9 is not among the questions"},
		{"no final row", []data.State{{QuestionID: "q1"}, {QuestionID: "q1", Round: 1}}, "question q1: no final row"},
		{"two final rows", []data.State{{QuestionID: "q1", IsFinal: true}, {QuestionID: "q1", Round: 1, IsFinal: true}}, "two final rows"},
		{"no question id", []data.State{{IsFinal: true}}, "no question id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Compute(tt.states, questions, nil, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compute error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func BenchmarkCompute(b *testing.B) {
	states, questions := fixture()
	var many []data.State
	qs := make(map[string]data.Question)
	for i := range 200 {
		for _, s := range states {
			s.QuestionID += "-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			many = append(many, s)
		}
	}
	for id, q := range questions {
		for i := range 200 {
			q.ID = id + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			qs[q.ID] = q
		}
	}
	for b.Loop() {
		if _, _, err := Compute(many, qs, nil, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(many)*b.N)/b.Elapsed().Seconds(), "states/s")
}

// TestScorerRowsTogether: streamed question by question, a question whose
// rows come back later is an error, not a second result.
func TestScorerRowsTogether(t *testing.T) {
	states, questions := fixture()
	sc := newScorer(data.QuestionMap(questions), "", false, true)
	var q5 []data.State
	for _, s := range states {
		if s.QuestionID == "q5" {
			q5 = append(q5, s)
		}
	}
	if _, err := sc.add(q5); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.add(q5[:1]); err == nil || !strings.Contains(err.Error(), "not together") {
		t.Errorf("q5 again: got %v, want an error saying its rows are not together", err)
	}
	if _, err := sc.add([]data.State{{QuestionID: "nope"}}); err == nil {
		t.Error("an unknown question: got no error")
	}
}
