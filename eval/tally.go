package eval

import (
	"maps"
	"slices"

	"github.com/distill-rag/distill/data"
)

// aggregate turns per-question results into Metrics, without usage.
func aggregate(results []QuestionResult) Metrics {
	t := newTally()
	for _, r := range results {
		t.add(r)
	}
	return t.metrics()
}

// tally aggregates per-question results one at a time into Metrics. It
// keeps sums and counts, and five durations a completed question for the
// latency percentiles, never the results themselves.
type tally struct {
	m                                      Metrics
	n                                      int
	em, f1, recall, rounds, ratios         float64
	correct, inEvidence, premature, gold   int
	completed, completedGold, ratioN       int
	total, judge, retrieve, extract, readT []float64
}

func newTally() *tally {
	t := &tally{m: Metrics{
		EndReasons:    make(map[string]int),
		GapCategories: make(map[string]int),
		Rounds:        []int{},
	}}
	for _, e := range EndReasons() {
		t.m.EndReasons[e] = 0
	}
	for _, c := range data.GapCategories() {
		t.m.GapCategories[c] = 0
	}
	return t
}

// add counts one question's result.
func (t *tally) add(r QuestionResult) {
	m := &t.m
	t.n++
	m.EndReasons[r.EndReason]++
	t.em += r.EM
	t.f1 += r.F1
	if r.AnswerInEvidence {
		t.inEvidence++
	}
	if r.GoldTitles > 0 {
		t.gold++
		t.recall += r.GoldTitleRecall
		if r.CorrectRetrieval {
			t.correct++
		}
	}
	for _, c := range r.gapCategories {
		m.GapCategories[c]++
	}
	cal := &m.Calibration
	for _, j := range r.Judgments {
		if !j.Measured {
			cal.Unmeasured++
			continue
		}
		cal.States++
		cal.Confusion.add(j)
	}
	if r.Failure != "" {
		m.Failed++
		return
	}
	t.completed++
	if r.GoldTitles > 0 {
		t.completedGold++
	}
	if r.Premature {
		t.premature++
	}
	for len(m.Rounds) <= r.Rounds {
		m.Rounds = append(m.Rounds, 0)
	}
	m.Rounds[r.Rounds]++
	t.rounds += float64(r.Rounds)
	m.Compression.EvidenceChars += int64(r.EvidenceChars)
	m.Compression.RawChars += int64(r.RawChars)
	m.Compression.EvidenceTokens += int64(r.EvidenceTokens)
	if r.RawChars > 0 {
		t.ratios += float64(r.EvidenceChars) / float64(r.RawChars)
		t.ratioN++
	}
	t.total = append(t.total, r.LatencyMS/1000)
	t.judge = append(t.judge, r.JudgeMS/1000)
	t.retrieve = append(t.retrieve, r.RetrieveMS/1000)
	t.extract = append(t.extract, r.ExtractMS/1000)
	t.readT = append(t.readT, r.ReadMS/1000)
}

// metrics returns the Metrics of the results added so far, without usage.
func (t *tally) metrics() Metrics {
	m := t.m
	m.Questions = t.n
	m.EndReasons = maps.Clone(t.m.EndReasons)
	m.GapCategories = maps.Clone(t.m.GapCategories)
	m.Rounds = slices.Clone(t.m.Rounds)
	m.EM = percent(t.em, t.n)
	m.F1 = percent(t.f1, t.n)
	m.AnswerInEvidence = percent(float64(t.inEvidence), t.n)
	m.GoldTitleQuestions = t.gold
	m.CorrectRetrieval = percent(float64(t.correct), t.gold)
	m.GoldTitleRecall = percent(t.recall, t.gold)
	m.MeanRounds = mean(t.rounds, t.completed)
	m.Premature = percent(float64(t.premature), t.completedGold)
	cal := &m.Calibration
	c := cal.Confusion
	cal.FalsePositiveRate = percent(float64(c.FP), c.FP+c.TN)
	cal.CompleteJudgedInsufficient = percent(float64(c.FN), c.TP+c.FN)
	if m.Compression.RawChars > 0 {
		m.Compression.Ratio = float64(m.Compression.EvidenceChars) / float64(m.Compression.RawChars)
	}
	m.Compression.MeanRatio = mean(t.ratios, t.ratioN)
	m.Compression.MeanEvidenceTokens = mean(float64(m.Compression.EvidenceTokens), t.completed)
	m.Latency = Latency{
		Question: spread(t.total), Judge: spread(t.judge), Retrieve: spread(t.retrieve),
		Extract: spread(t.extract), Read: spread(t.readT),
	}
	return m
}
