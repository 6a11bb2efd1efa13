package eval

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/data"
)

// Traces is what the audit page of a benchmark (DIR/traces.html) shows:
// every question of every variant, round by round.
type Traces struct {
	// Title heads the page, e.g. "distill bench: sample".
	Title    string
	Variants []TraceVariant
}

// TraceVariant is one variant's questions, in the order the page lists them.
type TraceVariant struct {
	Name      string
	Questions []TraceQuestion
}

// TraceQuestion is one question as a variant answered it: the question, its
// gold answers and titles, the answer with its scores, and the question's
// rows of the trajectories in round order (data.State). A failed question
// has a state with Failure set (usually its only one).
type TraceQuestion struct {
	ID, Question string
	Golds        []string
	Answer       string
	EM, F1       float64
	GoldTitles   []string
	// Type and SupportingFacts are the question's, for retrieval truth
	// (data.JudgeTruth).
	Type            string
	SupportingFacts []data.SupportingFact
	States          []data.State
}

// TraceFlags are what the page's filters select on, computed per question
// by the rules of the metrics (QuestionResult's EndReason and Premature),
// so that the page and the reports count the same questions.
type TraceFlags struct {
	// Wrong: the answer does not match a gold answer exactly (EM < 1).
	Wrong bool `json:"wrong"`
	// PrematureStop: the loop ended on a sufficient verdict while, by
	// retrieval truth (data.JudgeTruth), the gold evidence was incomplete.
	// Never set for a question without gold titles, whose completeness
	// cannot be measured.
	PrematureStop bool `json:"premature_stop"`
	// Exhausted: the question ended because the retrieval budget was spent,
	// not on a sufficient verdict.
	Exhausted bool `json:"exhausted"`
	// Failed: the question failed (a state carries a failure reason) or
	// has no final state.
	Failed bool `json:"failed"`
}

// Flags computes the question's filter flags from its scores and states.
func (q TraceQuestion) Flags() TraceFlags {
	f, _ := q.flags()
	return f
}

// flags computes the flags and the end reason (EndSufficient, EndBudget,
// EndFailed).
func (q TraceQuestion) flags() (TraceFlags, string) {
	f := TraceFlags{Wrong: q.EM < 1}
	rounds, failure := traceSplit(q.States)
	i := slices.IndexFunc(rounds, func(s data.State) bool { return s.IsFinal })
	if failure != "" || i < 0 {
		f.Failed = true
		return f, EndFailed
	}
	final := rounds[i]
	if !final.Sufficient {
		f.Exhausted = true
		return f, EndBudget
	}
	if len(q.GoldTitles) > 0 {
		f.PrematureStop = !data.JudgeTruth(q.dataQuestion(), final.Evidence).Complete
	}
	return f, EndSufficient
}

func (q TraceQuestion) dataQuestion() data.Question {
	return data.Question{ID: q.ID, Text: q.Question, Answers: q.Golds, GoldTitles: q.GoldTitles,
		Type: q.Type, SupportingFacts: q.SupportingFacts}
}

// traceSplit separates a question's states from its failure reason: the
// states that record a judge call, and the reasons of those that record a
// failure (rollout.FailedState), joined.
func traceSplit(states []data.State) (rounds []data.State, failure string) {
	var reasons []string
	for _, s := range states {
		if s.Failure != "" {
			reasons = append(reasons, s.Failure)
			continue
		}
		rounds = append(rounds, s)
	}
	return rounds, strings.Join(reasons, "; ")
}

// WriteTraces renders the audit page of a benchmark: one self-contained
// HTML page (inline CSS and script, no external resources) with every
// question as a <details> block, filters that work client-side (variant,
// wrong answers, premature stops, exhausted budgets, failures, text search)
// and the per-question numbers and flags embedded as JSON in a
// <script type="application/json" id="trace-data"> element. The markup is
// polyglot: it parses as XML too. Without script the page shows every
// question.
//
// It fails on a non-finite EM or F1 (they could not be embedded as JSON)
// and when w fails; what was written before then is incomplete, so callers
// write to a temporary file and rename it into place.
func WriteTraces(w io.Writer, t Traces) error {
	v, err := buildTraceView(t)
	if err != nil {
		return err
	}
	if err := tracesTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	return nil
}

// traceView is the page's data, every string made safe for XML (see
// traceText) and everything computed.
type traceView struct {
	Title     string
	Questions int
	Variants  []traceVariantView
	Data      traceData
}

type traceVariantView struct {
	Name, Anchor string
	Questions    []traceQuestionView
	Summary      traceVariantData
}

type traceQuestionView struct {
	Anchor, Variant string
	ID, Question    string
	Golds           []string
	Answer          string
	EM, F1          float64
	Flags           TraceFlags
	End             string
	GoldTitles      []traceGoldTitle
	Rounds          []traceRoundView
	// Stop says why the question ended; Failure is its failure reason.
	Stop, Failure string
	// Retrievals and JudgeCalls count the question's rounds; TotalMS is
	// the time its states record.
	Retrievals, JudgeCalls int
	TotalMS                float64
	// Search is the lower-cased text the page's search looks in.
	Search string
}

type traceGoldTitle struct {
	Title                 string
	Retrieved, InEvidence bool
}

// traceRoundView is round r of the loop: the judge's call on C_r, then
// either the retrieval and extraction of round r (which produced C_r+1,
// recorded in the next state) or the reader's answer.
type traceRoundView struct {
	Round int32
	// The judge's call.
	Sufficient, Override    bool
	ParseError, Output      string
	Gaps                    []data.GapItem
	JudgeMS                 float64
	Evidence, Blocks        int
	Truth                   traceTruth
	FalsePositive, Missed   bool
	Retrieval               *traceRetrievalView
	Final                   bool
	Answer, ReaderOutput    string
	ReaderParseError        string
	ReadMS                  float64
	JudgeModel, ReadModel   string
	JudgeTokens, ReadTokens int64
}

type traceTruth struct {
	// Known is false for a question without gold titles.
	Known                   bool
	TitlesFound, GoldTitles int
	AnswerFound, Complete   bool
	// AnswerExpected is false for yes/no and comparison questions, whose
	// truth is FactsFound of GoldFacts supporting sentences instead.
	AnswerExpected        bool
	FactsFound, GoldFacts int
	Missing               []string
}

type traceRetrievalView struct {
	Query               string
	Docs                []data.RetrievedDoc
	New                 []data.Evidence
	Candidates          int32
	ChosenIDs           []int32
	Dropped             int
	OutOfRange          int32
	Repeated, OverLimit int32
	BlocksAdded         int32
	BlocksSkipped       int32
	ParseError, Output  string
	RetrieveMS          float64
	ExtractMS           float64
	ExtractorModel      string
	ExtractorTokens     int64
}

// traceData is the JSON embedded in the page: the numbers and flags of
// every question and variant, for scripts and for checking the page
// against the reports.
type traceData struct {
	Title     string              `json:"title"`
	Variants  []traceVariantData  `json:"variants"`
	Questions []traceQuestionData `json:"questions"`
}

type traceVariantData struct {
	Name      string `json:"name"`
	Questions int    `json:"questions"`
	// EM and F1 are the plain means of the questions' EM and F1 (failed
	// questions included with the scores they were given).
	EM            float64 `json:"em"`
	F1            float64 `json:"f1"`
	Wrong         int     `json:"wrong"`
	PrematureStop int     `json:"premature_stop"`
	Exhausted     int     `json:"exhausted"`
	Failed        int     `json:"failed"`
}

type traceQuestionData struct {
	Anchor  string  `json:"anchor"`
	Variant string  `json:"variant"`
	ID      string  `json:"id"`
	EM      float64 `json:"em"`
	F1      float64 `json:"f1"`
	// Rounds is the number of retrievals, States the number of judge
	// calls, EndReason why the question ended (as QuestionResult).
	Rounds    int    `json:"rounds"`
	States    int    `json:"states"`
	EndReason string `json:"end_reason"`
	TraceFlags
}

func buildTraceView(t Traces) (traceView, error) {
	v := traceView{Title: traceText(t.Title), Data: traceData{Title: traceText(t.Title)}}
	for i, tv := range t.Variants {
		vv := traceVariantView{Name: traceText(tv.Name), Anchor: "v-" + strconv.Itoa(i)}
		vv.Summary.Name = vv.Name
		for j, q := range tv.Questions {
			if !traceFinite(q.EM) || !traceFinite(q.F1) {
				return traceView{}, fmt.Errorf("write traces: variant %s, question %s: EM %v, F1 %v: not a number", tv.Name, q.ID, q.EM, q.F1)
			}
			qv := buildTraceQuestion(q, vv.Name, fmt.Sprintf("q-%d-%d", i, j))
			vv.Questions = append(vv.Questions, qv)
			s := &vv.Summary
			s.Questions++
			s.EM += q.EM
			s.F1 += q.F1
			s.Wrong += traceCount(qv.Flags.Wrong)
			s.PrematureStop += traceCount(qv.Flags.PrematureStop)
			s.Exhausted += traceCount(qv.Flags.Exhausted)
			s.Failed += traceCount(qv.Flags.Failed)
			v.Data.Questions = append(v.Data.Questions, traceQuestionData{
				Anchor: qv.Anchor, Variant: vv.Name, ID: qv.ID, EM: q.EM, F1: q.F1,
				Rounds: qv.Retrievals, States: qv.JudgeCalls, EndReason: qv.End, TraceFlags: qv.Flags,
			})
		}
		if n := vv.Summary.Questions; n > 0 {
			vv.Summary.EM /= float64(n)
			vv.Summary.F1 /= float64(n)
		}
		v.Questions += vv.Summary.Questions
		v.Variants = append(v.Variants, vv)
		v.Data.Variants = append(v.Data.Variants, vv.Summary)
	}
	return v, nil
}

func buildTraceQuestion(q TraceQuestion, variant, anchor string) traceQuestionView {
	qv := traceQuestionView{
		Anchor: anchor, Variant: variant, ID: traceText(q.ID), Question: traceText(q.Question),
		Golds: traceTexts(q.Golds), Answer: traceText(q.Answer), EM: q.EM, F1: q.F1,
	}
	qv.Flags, qv.End = q.flags()
	qv.Search = strings.ToLower(qv.ID + " " + qv.Question)
	rounds, failure := traceSplit(q.States)
	qv.Failure = traceText(failure)

	retrieved, inEvidence := map[string]bool{}, map[string]bool{}
	for _, s := range rounds {
		for _, d := range s.Retrieved {
			retrieved[d.Title] = true
		}
		for _, e := range s.Evidence {
			inEvidence[e.Title] = true
		}
	}
	for _, g := range q.GoldTitles {
		qv.GoldTitles = append(qv.GoldTitles, traceGoldTitle{Title: traceText(g), Retrieved: retrieved[g], InEvidence: inEvidence[g]})
	}

	dq := q.dataQuestion()
	for i, s := range rounds {
		r := traceRoundView{
			Round: s.Round, Sufficient: s.Sufficient, Override: s.Override,
			ParseError: traceText(s.JudgeParseError), Gaps: traceGaps(s.GapItems), JudgeMS: s.JudgeMS,
			Evidence: len(s.Evidence), Blocks: traceBlocks(s.Evidence),
			JudgeModel: traceText(s.JudgeModel), JudgeTokens: s.JudgePromptTokens + s.JudgeCompletionTokens,
		}
		if r.ParseError != "" {
			r.Output = traceText(s.JudgeOutput)
		}
		if len(q.GoldTitles) > 0 {
			tr := data.JudgeTruth(dq, s.Evidence)
			r.Truth = traceTruth{Known: true, TitlesFound: tr.TitlesFound, GoldTitles: tr.GoldTitles,
				AnswerFound: tr.AnswerFound, Complete: tr.Complete, Missing: traceTexts(tr.MissingTitles),
				AnswerExpected: tr.AnswerExpected, FactsFound: tr.FactsFound, GoldFacts: tr.GoldFacts}
			r.FalsePositive = s.Sufficient && !tr.Complete
			r.Missed = !s.Sufficient && tr.Complete
		}
		qv.TotalMS += s.JudgeMS + s.RetrieveMS + s.ExtractMS + s.ReadMS
		qv.JudgeCalls++
		if s.IsFinal {
			r.Final = true
			r.Answer, r.ReaderOutput, r.ReaderParseError = traceText(s.Answer), traceText(s.ReaderOutput), traceText(s.ReaderParseError)
			r.ReadMS = s.ReadMS
			r.ReadModel, r.ReadTokens = traceText(s.ReaderModel), s.ReaderPromptTokens+s.ReaderCompletionTokens
		} else if i+1 < len(rounds) && rounds[i+1].Round == s.Round+1 {
			r.Retrieval = traceRetrieval(s, rounds[i+1])
			qv.Retrievals++
		}
		qv.Rounds = append(qv.Rounds, r)
	}

	switch qv.End {
	case EndFailed:
		qv.Stop = "failed"
		if qv.Failure == "" {
			qv.Stop = "no final state recorded"
		}
	case EndBudget:
		qv.Stop = fmt.Sprintf("retrieval budget spent (round %d)", qv.Retrievals)
	default:
		qv.Stop = fmt.Sprintf("judge called the evidence sufficient (round %d)", qv.Retrievals)
	}
	return qv
}

// traceRetrieval describes the retrieval and extraction of cur's round,
// which next (the state of the following round) records.
func traceRetrieval(cur, next data.State) *traceRetrievalView {
	r := cur.Round
	v := &traceRetrievalView{
		Candidates: next.Candidates, ChosenIDs: next.ChosenIDs, Dropped: len(next.DroppedIDs),
		OutOfRange: next.DroppedOutOfRange, Repeated: next.DroppedRepeated, OverLimit: next.DroppedOverLimit,
		BlocksAdded: next.BlocksAdded, BlocksSkipped: next.BlocksSkipped,
		ParseError: traceText(next.ExtractorParseError),
		RetrieveMS: next.RetrieveMS, ExtractMS: next.ExtractMS,
		ExtractorModel:  traceText(next.ExtractorModel),
		ExtractorTokens: next.ExtractorPromptTokens + next.ExtractorCompletionTokens,
	}
	if v.ParseError != "" {
		v.Output = traceText(next.ExtractorOutput)
	}
	if int(r) < len(next.Queries) {
		v.Query = traceText(next.Queries[r])
	}
	for _, d := range next.Retrieved {
		if d.Round == r {
			d.DocID, d.Title = traceText(d.DocID), traceText(d.Title)
			v.Docs = append(v.Docs, d)
		}
	}
	// The context only grows, but compare sentences rather than trust a
	// prefix: the new evidence is what next holds beyond cur.
	type key struct {
		doc   string
		index int32
		text  string
	}
	seen := make(map[key]int, len(cur.Evidence))
	for _, e := range cur.Evidence {
		seen[key{e.DocID, e.Index, e.Text}]++
	}
	for _, e := range next.Evidence {
		k := key{e.DocID, e.Index, e.Text}
		if seen[k] > 0 {
			seen[k]--
			continue
		}
		v.New = append(v.New, data.Evidence{DocID: traceText(e.DocID), Title: traceText(e.Title), Index: e.Index, Text: traceText(e.Text)})
	}
	return v
}

// traceBlocks counts the title blocks of an evidence context: runs of
// sentences with the same title.
func traceBlocks(ev []data.Evidence) int {
	n := 0
	for i, e := range ev {
		if i == 0 || ev[i-1].Title != e.Title {
			n++
		}
	}
	return n
}

func traceGaps(gaps []data.GapItem) []data.GapItem {
	out := make([]data.GapItem, len(gaps))
	for i, g := range gaps {
		out[i] = data.GapItem{Category: traceText(g.Category), Target: traceText(g.Target), Slot: traceText(g.Slot), Description: traceText(g.Description)}
	}
	return out
}

func traceTexts(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = traceText(s)
	}
	return out
}

// traceText makes a string safe to show in the page: valid UTF-8 and
// only characters that XML allows (model output may hold control
// characters, which would make the polyglot page ill-formed XML), others
// replaced by U+FFFD.
func traceText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !strings.ContainsFunc(s, traceBadRune) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if traceBadRune(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// traceBadRune reports a character outside XML 1.0's Char production.
func traceBadRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF, r > 0x10FFFF:
		return true
	}
	return false
}

func traceCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

func traceFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

var tracesTemplate = template.Must(template.New("traces").Funcs(template.FuncMap{
	"pct":  func(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) },
	"ms":   func(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) + " ms" },
	"num":  func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) },
	"ids":  traceIDs,
	"join": strings.Join,
}).Parse(tracesHTML))

func traceIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ", ")
}

// tracesHTML is the page, in a file of its own so that it reads and edits
// as HTML. It is written as polyglot markup (every element closed,
// attributes quoted and valued, only XML's entities) and its script avoids
// the characters "<" and "&", so the page also parses as XML, which the
// tests use to check it.
//
//go:embed traces.html.tmpl
var tracesHTML string
