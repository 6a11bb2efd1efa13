package eval

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

// Scoring names how the answer metrics treat the one case where the
// method's reference evaluation and SQuAD v1.1's official script differ: a
// prediction and a gold answer that both normalise to the empty string
// (such as "the" against "a", or "" against "").
type Scoring string

const (
	// ScoringReference is the method's reference evaluation and distill's
	// default: a prediction and a gold answer that both normalise to the
	// empty string have F1, precision and recall 1 (as SQuAD v2.0's script
	// scores two empty answers); one empty side alone scores 0.
	ScoringReference Scoring = "reference"
	// ScoringSQuAD is SQuAD v1.1's official script: F1 is 0 whenever no
	// token overlaps, so two empty answers score F1 0 (EM is still 1).
	ScoringSQuAD Scoring = "squad"
)

// TitleMatch says how correct retrieval and gold-title recall compare a
// gold title with the titles retrieved.
type TitleMatch string

const (
	// TitleMatchDistill compares titles exactly (the default).
	TitleMatchDistill TitleMatch = "distill"
	// TitleMatchReference is the authors' code: a TriviaQA question's
	// titles (Dataset "triviaqa") are compared after normalisation
	// (data.NormalizeAnswer: lower case, no punctuation or articles),
	// every other question's exactly.
	TitleMatchReference TitleMatch = "reference"
)

// ParseTitleMatch returns the title match named s ("" is
// TitleMatchDistill).
func ParseTitleMatch(s string) (TitleMatch, error) {
	switch m := TitleMatch(s); m {
	case "", TitleMatchDistill:
		return TitleMatchDistill, nil
	case TitleMatchReference:
		return m, nil
	}
	return "", fmt.Errorf("unknown title match %q (want distill or reference)", s)
}

// titleKey returns what a title of q is compared by under m.
func (m TitleMatch) titleKey(q data.Question) func(string) string {
	if m == TitleMatchReference && q.Dataset == data.DatasetTriviaQA {
		return data.NormalizeAnswer
	}
	return func(t string) string { return t }
}

// Scorings lists the scoring conventions, the default first.
func Scorings() []Scoring { return []Scoring{ScoringReference, ScoringSQuAD} }

// ParseScoring returns the scoring named s; the empty string is the
// default, ScoringReference.
func ParseScoring(s string) (Scoring, error) {
	if s == "" {
		return ScoringReference, nil
	}
	if sc := Scoring(strings.ToLower(strings.TrimSpace(s))); slices.Contains(Scorings(), sc) {
		return sc, nil
	}
	return "", fmt.Errorf("unknown scoring %q (valid: %s, %s)", s, ScoringReference, ScoringSQuAD)
}

// orDefault returns s, or ScoringReference when s is empty.
func (s Scoring) orDefault() Scoring {
	if s == "" {
		return ScoringReference
	}
	return s
}

// AnswerScore is one prediction scored against its gold answers, each
// number in [0, 1]. Precision and recall are those of the gold answer that
// gives the best F1 (the first of them on a tie).
type AnswerScore struct {
	EM        float64 `json:"em"`
	F1        float64 `json:"f1"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

// ScoreAnswer scores a prediction against the gold answers: the SQuAD
// normalisation (data.NormalizeAnswer), EM 1 when the normalised
// prediction equals one normalised gold answer, F1 the maximum over the
// gold answers of the token F1 (the words of the normalised strings, their
// overlap the multiset intersection). Without gold answers every score is
// 0. s chooses how two empty answers score (see Scoring; "" is the
// default). HotpotQA's script additionally zeroes yes/no answers that
// differ; this does not.
func ScoreAnswer(prediction string, golds []string, s Scoring) AnswerScore {
	p := data.NormalizeAnswer(prediction)
	pred := strings.Fields(p)
	var best AnswerScore
	for _, g := range golds {
		ng := data.NormalizeAnswer(g)
		if ng == p {
			best.EM = 1
		}
		f, prec, rec := tokenF1(pred, strings.Fields(ng), s.orDefault())
		if f > best.F1 {
			best.F1, best.Precision, best.Recall = f, prec, rec
		}
	}
	return best
}

// EM is the exact match of a prediction against the gold answers (see
// ScoreAnswer): 1 or 0, the same under every Scoring. As in the official
// script, a prediction and a gold answer that both normalise to the empty
// string match.
func EM(prediction string, golds []string) float64 {
	return ScoreAnswer(prediction, golds, ScoringReference).EM
}

// F1 is the token F1 of a prediction, the maximum over the gold answers,
// under the method's reference scoring (ScoringReference; ScoreAnswer
// takes the scoring as a parameter).
func F1(prediction string, golds []string) float64 {
	return ScoreAnswer(prediction, golds, ScoringReference).F1
}

// tokenF1 computes F1, precision and recall with the official scripts'
// operations in their order, so that the floating-point results are the
// same to the last bit.
func tokenF1(pred, gold []string, s Scoring) (f1, precision, recall float64) {
	if len(pred) == 0 && len(gold) == 0 && s == ScoringReference {
		return 1, 1, 1
	}
	counts := make(map[string]int, len(gold))
	for _, t := range gold {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0, 0, 0
	}
	precision = 1.0 * float64(same) / float64(len(pred))
	recall = 1.0 * float64(same) / float64(len(gold))
	return (2 * precision * recall) / (precision + recall), precision, recall
}

// The reasons a question's loop ended.
const (
	// EndSufficient: the judge called the evidence sufficient.
	EndSufficient = "sufficient"
	// EndBudget: the retrieval budget was spent without a sufficient verdict.
	EndBudget = "budget"
	// EndFailed: the question failed (State.Failure).
	EndFailed = "failed"
)

// EndReasons lists the end reasons in the order reports show them.
func EndReasons() []string { return []string{EndSufficient, EndBudget, EndFailed} }

// QuestionResult is what one question's trajectory scored. EM and F1 are
// per-question scores in [0, 1] (Metrics reports their means in percent).
type QuestionResult struct {
	ID       string   `json:"id"`
	Dataset  string   `json:"dataset"`
	Question string   `json:"question"`
	Answer   string   `json:"answer"`
	Golds    []string `json:"golds"`
	EM       float64  `json:"em"`
	F1       float64  `json:"f1"`
	// Rounds is the number of retrievals; States the number of judge calls
	// recorded.
	Rounds int `json:"rounds"`
	States int `json:"states"`
	// GoldTitles is the number of the question's gold titles; without any,
	// CorrectRetrieval and GoldTitleRecall are not measured (false and 0)
	// and Metrics leaves the question out of their averages.
	GoldTitles int `json:"gold_titles"`
	// CorrectRetrieval: every gold title is among the titles retrieved;
	// GoldTitleRecall is the share of them that are, in [0, 1].
	CorrectRetrieval bool    `json:"correct_retrieval"`
	GoldTitleRecall  float64 `json:"gold_title_recall"`
	// AnswerInEvidence: a gold answer appears in the final context.
	AnswerInEvidence bool `json:"answer_in_evidence"`
	// EvidenceChars is the length in bytes of the final context as the
	// reader saw it (State.Context); RawChars the summed length of the
	// documents retrieved as the context would show them whole (RetrievedDoc.Chars
	// plus each "[title]" line); EvidenceTokens the final
	// context's tokens (llm.CountTokens without a model name: cl100k_base).
	EvidenceChars  int `json:"evidence_chars"`
	RawChars       int `json:"raw_chars"`
	EvidenceTokens int `json:"evidence_tokens"`
	// Time spent in milliseconds: in total and per stage, summed over the
	// question's states.
	LatencyMS  float64 `json:"latency_ms"`
	JudgeMS    float64 `json:"judge_ms"`
	RetrieveMS float64 `json:"retrieve_ms"`
	ExtractMS  float64 `json:"extract_ms"`
	ReadMS     float64 `json:"read_ms"`
	// Failure is why the question failed, empty when it did not.
	Failure string `json:"failure,omitempty"`
	// EndReason is EndSufficient, EndBudget or EndFailed.
	EndReason string `json:"end_reason"`
	// Premature: the loop stopped on a sufficient verdict while the gold
	// evidence was not all there (measured only with gold titles).
	Premature bool `json:"premature"`
	// Judgments are the calibration points of the question's judge calls.
	Judgments []Judgment `json:"judgments"`
	// gapCategories are the normalised categories of the gap items of its
	// judge calls.
	gapCategories []string
}

// Judgment is one judge call set against retrieval truth: what the judge
// said of the state's evidence, and whether the gold evidence was all there
// (data.JudgeTruth(...).Complete). Measured is false for questions without
// gold titles, whose states calibration leaves out.
type Judgment struct {
	Round            int  `json:"round"`
	JudgedSufficient bool `json:"judged_sufficient"`
	GoldComplete     bool `json:"gold_complete"`
	Measured         bool `json:"measured"`
}

// Metrics are the numbers of one variant over a set of questions.
//
// Every rate and share is a percentage (0-100, as the paper reports them);
// the compression ratios are fractions; latencies are in seconds. EM, F1,
// correct retrieval, gold-title recall and answer-in-evidence count a failed
// question as wrong (they are over all questions; the retrieval numbers over
// the questions with gold titles). Rounds, compression and latency are over
// the questions that completed. Calibration is over the judge calls of
// questions with gold titles.
type Metrics struct {
	Questions int `json:"questions"`
	Failed    int `json:"failed"`
	// EM and F1 are the mean per-question scores.
	EM float64 `json:"em"`
	F1 float64 `json:"f1"`
	// GoldTitleQuestions is the number of questions with gold titles, the
	// base of CorrectRetrieval and GoldTitleRecall.
	GoldTitleQuestions int     `json:"gold_title_questions"`
	CorrectRetrieval   float64 `json:"correct_retrieval"`
	GoldTitleRecall    float64 `json:"gold_title_recall"`
	AnswerInEvidence   float64 `json:"answer_in_evidence"`
	// Premature is the share of completed questions with gold titles that
	// stopped on a sufficient verdict without the gold evidence.
	Premature   float64     `json:"premature"`
	Calibration Calibration `json:"calibration"`
	// Rounds is the histogram of retrievals per completed question:
	// Rounds[n] questions used n retrievals.
	Rounds     []int   `json:"rounds"`
	MeanRounds float64 `json:"mean_rounds"`
	// EndReasons counts questions by end reason (every reason present).
	EndReasons map[string]int `json:"end_reasons"`
	// GapCategories counts the gap items of every judge call by category
	// (data.NormalizeCategory; every category present).
	GapCategories map[string]int `json:"gap_categories"`
	Compression   Compression    `json:"compression"`
	Latency       Latency        `json:"latency"`
	// Usage is the model client's accounting per role; CostUSD its total.
	Usage   []llm.Stats `json:"usage"`
	CostUSD float64     `json:"cost_usd"`
}

// Calibration sets the judge's sufficiency verdicts against retrieval
// truth. A positive is a state judged sufficient; it is true when the gold
// evidence was complete. Every judge call counts, the round-0 verdict on
// empty evidence included (a "sufficient" there, which the loop overrides,
// is a false positive).
type Calibration struct {
	// States is the number of judge calls counted; Unmeasured those left
	// out because their question has no gold titles.
	States     int       `json:"states"`
	Unmeasured int       `json:"unmeasured"`
	Confusion  Confusion `json:"confusion"`
	// FalsePositiveRate is FP/(FP+TN), in percent: of the states whose gold
	// evidence was incomplete, those judged sufficient.
	FalsePositiveRate float64 `json:"false_positive_rate"`
	// CompleteJudgedInsufficient is FN/(TP+FN), in percent: of the states
	// whose gold evidence was all there, those judged insufficient.
	CompleteJudgedInsufficient float64 `json:"complete_judged_insufficient"`
}

// Confusion is the confusion matrix of the sufficiency verdicts.
type Confusion struct {
	TP int `json:"tp"`
	FP int `json:"fp"`
	FN int `json:"fn"`
	TN int `json:"tn"`
}

// Compression compares the evidence given to the reader with the raw
// documents retrieved, over completed questions.
type Compression struct {
	EvidenceChars int64 `json:"evidence_chars"`
	RawChars      int64 `json:"raw_chars"`
	// Ratio is EvidenceChars/RawChars; MeanRatio the mean of the
	// per-question ratios (questions that retrieved nothing left out).
	Ratio              float64 `json:"ratio"`
	MeanRatio          float64 `json:"mean_ratio"`
	EvidenceTokens     int64   `json:"evidence_tokens"`
	MeanEvidenceTokens float64 `json:"mean_evidence_tokens"`
}

// Latency is the wall time per completed question, in total and per stage.
type Latency struct {
	Question Spread `json:"question"`
	Judge    Spread `json:"judge"`
	Retrieve Spread `json:"retrieve"`
	Extract  Spread `json:"extract"`
	Read     Spread `json:"read"`
}

// Spread summarises durations, in seconds. Percentiles interpolate
// linearly between the closest ranks (numpy's default).
type Spread struct {
	Median float64 `json:"median_s"`
	P90    float64 `json:"p90_s"`
	Mean   float64 `json:"mean_s"`
}

// Compute scores the trajectories of one variant. states are the rows of a
// trajectories file; rows are grouped by QuestionID (results come in the
// order questions first appear) and ordered by Round within a question.
// Every question id must be in questions and have one final row. usage is
// the variant's accounting, copied into the metrics. scoring chooses how EM
// and F1 treat empty answers ("" is the method's reference, see Scoring).
func Compute(states []data.State, questions map[string]data.Question, usage []llm.Stats, scoring Scoring) (Metrics, []QuestionResult, error) {
	var order []string
	groups := make(map[string][]data.State)
	for _, s := range states {
		if _, ok := groups[s.QuestionID]; !ok {
			order = append(order, s.QuestionID)
		}
		groups[s.QuestionID] = append(groups[s.QuestionID], s)
	}
	sc := newScorer(data.QuestionMap(questions), scoring, true, true)
	for _, id := range order {
		if _, err := sc.add(groups[id]); err != nil {
			return Metrics{}, nil, err
		}
	}
	return sc.metrics(usage), sc.results, nil
}

// scorer scores a variant's questions one at a time, so that a benchmark
// can stream its trajectories instead of holding them.
type scorer struct {
	questions Questions
	scoring   Scoring
	titles    TitleMatch
	tally     *tally
	// keep says whether results keeps every result (Compute's); a
	// benchmark streams them instead.
	keep    bool
	results []QuestionResult
	// seen holds the ids of the questions added, to check that each
	// question's rows come together; nil when the caller checks it itself
	// (a benchmark's score table, with one bit a question).
	seen map[string]bool
}

// newScorer returns a scorer of questions; it compares titles exactly
// unless its titles field is set.
func newScorer(questions Questions, scoring Scoring, keep, check bool) *scorer {
	s := &scorer{questions: questions, scoring: scoring, tally: newTally(), keep: keep}
	if check {
		s.seen = map[string]bool{}
	}
	return s
}

// add scores the rows of one question (all of them, in any order).
func (s *scorer) add(rows []data.State) (QuestionResult, error) {
	if len(rows) == 0 {
		return QuestionResult{}, nil
	}
	id := rows[0].QuestionID
	switch {
	case id == "":
		return QuestionResult{}, fmt.Errorf("compute metrics: a row has no question id")
	case s.seen[id]:
		return QuestionResult{}, fmt.Errorf("compute metrics: question %s: its rows are not together", id)
	}
	q, ok, err := s.questions.Question(id)
	if err != nil {
		return QuestionResult{}, fmt.Errorf("compute metrics: %w", err)
	}
	if !ok {
		return QuestionResult{}, fmt.Errorf("compute metrics: question %s is not among the questions given", id)
	}
	if s.seen != nil {
		s.seen[id] = true
	}
	r, err := scoreQuestion(q, rows, s.scoring, s.titles)
	if err != nil {
		return QuestionResult{}, fmt.Errorf("compute metrics: question %s: %w", id, err)
	}
	s.tally.add(r)
	if s.keep {
		s.results = append(s.results, r)
	}
	return r, nil
}

// metrics aggregates the questions added so far, with usage.
func (s *scorer) metrics(usage []llm.Stats) Metrics {
	m := s.tally.metrics()
	m.Usage = append([]llm.Stats{}, usage...)
	for _, u := range usage {
		m.CostUSD += u.CostUSD
	}
	return m
}

// scoreQuestion scores one question's rows, comparing titles by titles.
func scoreQuestion(q data.Question, rows []data.State, scoring Scoring, titles TitleMatch) (QuestionResult, error) {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b data.State) int { return cmp.Compare(a.Round, b.Round) })
	var final, latest *data.State
	r := QuestionResult{ID: q.ID, Dataset: q.Dataset, Question: q.Text, Golds: slices.Clone(q.Answers), GoldTitles: len(q.GoldTitles)}
	for i := range rows {
		s := &rows[i]
		if s.IsFinal {
			if final != nil {
				return r, fmt.Errorf("two final rows (rounds %d and %d)", final.Round, s.Round)
			}
			final = s
		}
		if s.Failure != "" {
			r.Failure = s.Failure
		}
		r.JudgeMS += s.JudgeMS
		r.RetrieveMS += s.RetrieveMS
		r.ExtractMS += s.ExtractMS
		r.ReadMS += s.ReadMS
		if s.Failure != "" {
			continue // a failure row records no judge call
		}
		latest = s
		r.States++
		for _, g := range s.GapItems {
			r.gapCategories = append(r.gapCategories, data.NormalizeCategory(g.Category))
		}
		j := Judgment{Round: int(s.Round), JudgedSufficient: s.Sufficient, Measured: len(q.GoldTitles) > 0}
		if j.Measured {
			j.GoldComplete = data.JudgeTruth(q, s.Evidence).Complete
		}
		r.Judgments = append(r.Judgments, j)
	}
	if final == nil {
		return r, fmt.Errorf("no final row among its %d rows", len(rows))
	}
	r.LatencyMS = r.JudgeMS + r.RetrieveMS + r.ExtractMS + r.ReadMS
	if r.Failure == "" {
		latest = final
		r.Answer = final.Answer
		sc := ScoreAnswer(final.Answer, q.Answers, scoring)
		r.EM, r.F1 = sc.EM, sc.F1
		r.EndReason = EndBudget
		if final.Sufficient {
			r.EndReason = EndSufficient
		}
	} else {
		r.EndReason = EndFailed
	}
	if latest == nil {
		return r, nil // failed before its first judge call
	}
	r.Rounds = int(latest.Round)
	key := titles.titleKey(q)
	retrieved := make(map[string]bool, len(latest.Retrieved))
	for _, d := range latest.Retrieved {
		retrieved[key(d.Title)] = true
		// The document as the context would show it whole: its text and
		// its "[title]" line, so that appending raw documents is a ratio
		// of about 1.
		r.RawChars += int(d.Chars) + len(data.OneLine(d.Title)) + len("[]\n\n")
	}
	found := 0
	for _, t := range q.GoldTitles {
		if retrieved[key(t)] {
			found++
		}
	}
	if len(q.GoldTitles) > 0 {
		r.CorrectRetrieval = found == len(q.GoldTitles)
		r.GoldTitleRecall = float64(found) / float64(len(q.GoldTitles))
	}
	truth := data.JudgeTruth(q, latest.Evidence)
	r.AnswerInEvidence = truth.AnswerFound
	r.Premature = r.EndReason == EndSufficient && len(q.GoldTitles) > 0 && !truth.Complete
	r.EvidenceChars = len(latest.Context)
	r.EvidenceTokens = llm.CountTokens("", latest.Context)
	return r, nil
}

// percent is 100*sum/n, in the official SQuAD script's order of
// operations, and 0 when n is 0.
func percent(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * sum / float64(n)
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// spread is the median, 90th percentile and mean of xs, which it sorts.
func spread(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	slices.Sort(xs) // in place: the order of the durations means nothing
	return Spread{Median: quantile(xs, 0.5), P90: quantile(xs, 0.9), Mean: sum / float64(len(xs))}
}

// quantile returns the q-quantile of sorted, interpolating linearly between
// the closest ranks.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := math.Floor(pos)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-lo)*(sorted[i+1]-sorted[i])
}
