package eval

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/data"
)

// traceIndexView is the index page's data, every string made safe for XML
// (see traceText).
type traceIndexView struct {
	Title     string
	Questions int
	PerPage   int
	// Data holds the index's numbers; its questions and rows are written
	// where Index (traceIndexMark) stands, by TraceWriter.Close.
	Data  traceData
	Index template.JS
	// Parts are the pages of each variant, for the page without script.
	Parts [][]string
}

// tracePartView is one page of a variant's questions.
type tracePartView struct {
	Title, Variant string
	// Index, Prev and Next are links to the index and the neighbouring
	// pages ("" when there is none).
	Index, Prev, Next string
	// First and Last number the page's questions in the variant, from 1.
	First, Last int
	// Questions are the questions' HTML, gzipped and in base64
	// (packQuestions): the page's browser unpacks them. A page of 50
	// questions of the sample is 6 times smaller so.
	Questions string
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

func buildTraceQuestion(q TraceQuestion, variant, anchor string) traceQuestionView {
	qv := traceQuestionView{
		Anchor: anchor, Variant: variant, ID: traceText(q.ID), Question: traceText(q.Question),
		Golds: traceTexts(q.Golds), Answer: traceText(q.Answer), EM: q.EM, F1: q.F1,
	}
	qv.Flags, qv.End = q.flags()
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
	"inc":  func(i int) int { return i + 1 },
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

// packQuestions renders questions as HTML, gzipped, in base64.
func packQuestions(questions []traceQuestionView) (string, error) {
	var b bytes.Buffer
	enc := base64.NewEncoder(base64.StdEncoding, &b)
	zw, err := gzip.NewWriterLevel(enc, gzip.DefaultCompression)
	if err != nil {
		return "", err
	}
	if err := tracesTemplate.ExecuteTemplate(zw, "questions", questions); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// UnpackTracePage returns a page of questions (traces/v-I/part-NNNN.html)
// with its questions unpacked into it, as a browser shows it once its
// script has run: for reading the pages without a browser.
func UnpackTracePage(page []byte) ([]byte, error) {
	const open, end = `<script type="application/json" id="questions-gzip">`, `</script>`
	i := bytes.Index(page, []byte(open))
	if i < 0 {
		return nil, errors.New("unpack trace page: no packed questions")
	}
	j := bytes.Index(page[i:], []byte(end))
	if j < 0 {
		return nil, errors.New("unpack trace page: the packed questions do not end")
	}
	var packed string
	if err := json.Unmarshal(page[i+len(open):i+j], &packed); err != nil {
		return nil, fmt.Errorf("unpack trace page: %w", err)
	}
	zr, err := gzip.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(packed)))
	if err != nil {
		return nil, fmt.Errorf("unpack trace page: %w", err)
	}
	html, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("unpack trace page: %w", err)
	}
	const slot = `<div id="questions"></div>`
	k := bytes.Index(page, []byte(slot))
	if k < 0 || k > i {
		return nil, errors.New("unpack trace page: no place for the questions")
	}
	out := slices.Concat(page[:k], []byte(`<div id="questions">`), html, []byte(`</div>`), page[k+len(slot):i], page[i+j+len(end):])
	return out, nil
}
