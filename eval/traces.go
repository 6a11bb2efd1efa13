package eval

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
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

// TracesDir is the folder, beside traces.html, that holds the pages of the
// questions: TracesDir/v-I/part-NNNN.html for variant I, TracePartSize
// questions a page.
const TracesDir = "traces"

// TracePartSize is the number of questions on one page of a variant.
const TracePartSize = 50

// traceRowsPerPage is how many rows the index page shows at once.
const traceRowsPerPage = 100

// The bits of a row's flags in the index page's data.
const (
	traceFlagWrong = 1 << iota
	traceFlagPremature
	traceFlagExhausted
	traceFlagFailed
)

// traceData is the JSON embedded in the index page: every variant's
// summary, every question once, and one row per question and variant, for
// the page's script and for checking the page against the reports.
type traceData struct {
	Title string `json:"title"`
	// Dir is TracesDir; PartSize is TracePartSize and PerPage the rows
	// the index shows at once.
	Dir       string               `json:"dir"`
	PartSize  int                  `json:"part_size"`
	PerPage   int                  `json:"per_page"`
	Variants  []traceVariantData   `json:"variants"`
	Questions []traceIndexQuestion `json:"questions"`
	Rows      []traceRow           `json:"rows"`
}

type traceVariantData struct {
	Name   string `json:"name"`
	Anchor string `json:"anchor"`
	// Questions and Parts count the variant's questions and pages.
	Questions int `json:"questions"`
	Parts     int `json:"parts"`
	// EM and F1 are the plain means of the questions' EM and F1 (failed
	// questions included with the scores they were given).
	EM            float64 `json:"em"`
	F1            float64 `json:"f1"`
	Wrong         int     `json:"wrong"`
	PrematureStop int     `json:"premature_stop"`
	Exhausted     int     `json:"exhausted"`
	Failed        int     `json:"failed"`
}

// traceIndexQuestion is a question as the index lists it, whatever the
// variants.
type traceIndexQuestion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// traceRow is one question of one variant in the index: the variant's and
// the question's positions in traceData, the scores, the flags (bits
// traceFlag...), the retrievals and judge calls, and the question's
// position in the variant (its page is Index/PartSize + 1, its anchor
// q-Variant-Index). It is written as a JSON array, to keep the index small.
type traceRow struct {
	Variant, Question int
	EM, F1            float64
	Flags             int
	Rounds, States    int
	Index             int
}

func (r traceRow) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{r.Variant, r.Question, r.EM, r.F1, r.Flags, r.Rounds, r.States, r.Index})
}

func (r *traceRow) UnmarshalJSON(b []byte) error {
	var a []json.Number
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 8 {
		return fmt.Errorf("trace row: got %d numbers, want 8", len(a))
	}
	var f [8]float64
	for i, n := range a {
		x, err := n.Float64()
		if err != nil {
			return err
		}
		f[i] = x
	}
	*r = traceRow{Variant: int(f[0]), Question: int(f[1]), EM: f[2], F1: f[3], Flags: int(f[4]),
		Rounds: int(f[5]), States: int(f[6]), Index: int(f[7])}
	return nil
}

// bits returns the flags as traceRow.Flags holds them.
func (f TraceFlags) bits() int {
	b := 0
	for _, x := range []struct {
		set bool
		bit int
	}{{f.Wrong, traceFlagWrong}, {f.PrematureStop, traceFlagPremature}, {f.Exhausted, traceFlagExhausted}, {f.Failed, traceFlagFailed}} {
		if x.set {
			b |= x.bit
		}
	}
	return b
}

// WriteTraces writes the audit pages of a benchmark into dir (see
// TraceWriter): dir/traces.html and dir/traces/.
func WriteTraces(dir string, t Traces) error {
	w, err := NewTraceWriter(dir, t.Title)
	if err != nil {
		return err
	}
	for _, v := range t.Variants {
		if err := w.StartVariant(v.Name); err != nil {
			w.Abort()
			return err
		}
		for _, q := range v.Questions {
			if err := w.Add(q); err != nil {
				w.Abort()
				return err
			}
		}
	}
	return w.Close()
}

// TraceWriter writes the audit pages of a benchmark, one question at a
// time, so that memory holds one page of questions and the index, never the
// trajectories:
//
//   - dir/traces.html, the index: each variant's numbers, and every
//     question of every variant as one row of data that the page's script
//     filters (variant, wrong answers, premature stops, exhausted budgets,
//     failures, text) and shows a page of rows at a time, each row linking
//     to the question's page; it opens at once whatever the number of
//     questions (without script it links the pages);
//   - dir/traces/v-I/part-NNNN.html, TracePartSize questions of variant I
//     a page, each question a <details> block with its rounds (the judge's
//     verdict, gap items, query, retrieved documents, chosen sentences with
//     provenance, the reader's answer), opened when the link names it.
//
// Every page is self-contained (inline CSS and script, links only to the
// other pages) and polyglot markup: it parses as XML too. The pages are
// written in a temporary folder that replaces dir/traces when Close
// succeeds; traces.html is written last, atomically.
type TraceWriter struct {
	dir, tmp string
	// data holds the index's numbers; its questions and rows go to index
	// as they come (see traceIndexFile), not to data.
	data  traceData
	index *traceIndexFile
	// questions counts the index's questions; qindex numbers them by id
	// for Add (a benchmark's report numbers them itself, see add).
	questions int
	qindex    map[string]int
	// part holds the current variant's questions not written yet.
	part []traceQuestionView
}

// NewTraceWriter starts the pages of a benchmark in dir, titled title.
func NewTraceWriter(dir, title string) (*TraceWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write traces: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".traces-")
	if err != nil {
		return nil, fmt.Errorf("write traces: %w", err)
	}
	index, err := newTraceIndexFile(dir)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("write traces: %w", err)
	}
	return &TraceWriter{dir: dir, tmp: tmp, index: index, qindex: map[string]int{},
		data: traceData{Title: traceText(title), Dir: TracesDir, PartSize: TracePartSize, PerPage: traceRowsPerPage}}, nil
}

// StartVariant starts the questions of the next variant.
func (w *TraceWriter) StartVariant(name string) error {
	if err := w.flush(false); err != nil {
		return err
	}
	v := traceVariantData{Name: traceText(name), Anchor: "v-" + strconv.Itoa(len(w.data.Variants))}
	if err := os.Mkdir(filepath.Join(w.tmp, v.Anchor), 0o755); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	w.data.Variants = append(w.data.Variants, v)
	return nil
}

// Add adds a question of the current variant. It fails on a non-finite EM
// or F1 (they could not be embedded as JSON).
func (w *TraceWriter) Add(q TraceQuestion) error {
	k, ok := w.qindex[q.ID]
	if !ok {
		k = w.questions
	}
	if err := w.add(q, k); err != nil {
		return err
	}
	w.qindex[q.ID] = k
	return nil
}

// add adds a question of the current variant as the index's question k:
// the next number (w.questions) for a question no variant had before, the
// number it got then otherwise. A benchmark's report numbers its questions
// as its score table does, so that the writer holds no id.
func (w *TraceWriter) add(q TraceQuestion, k int) error {
	if k < 0 || k > w.questions {
		return fmt.Errorf("write traces: question %s numbered %d, after %d questions", q.ID, k, w.questions)
	}
	if len(w.data.Variants) == 0 {
		return errors.New("write traces: a question before any variant")
	}
	vi := len(w.data.Variants) - 1
	v := &w.data.Variants[vi]
	if !traceFinite(q.EM) || !traceFinite(q.F1) {
		return fmt.Errorf("write traces: variant %s, question %s: EM %v, F1 %v: not a number", v.Name, q.ID, q.EM, q.F1)
	}
	if len(w.part) == TracePartSize {
		if err := w.flush(true); err != nil {
			return err
		}
	}
	j := v.Questions
	qv := buildTraceQuestion(q, v.Name, fmt.Sprintf("q-%d-%d", vi, j))
	w.part = append(w.part, qv)
	v.Questions++
	v.EM += q.EM
	v.F1 += q.F1
	v.Wrong += traceCount(qv.Flags.Wrong)
	v.PrematureStop += traceCount(qv.Flags.PrematureStop)
	v.Exhausted += traceCount(qv.Flags.Exhausted)
	v.Failed += traceCount(qv.Flags.Failed)
	if k == w.questions {
		if err := w.index.question(traceIndexQuestion{ID: qv.ID, Text: qv.Question}); err != nil {
			return fmt.Errorf("write traces: %w", err)
		}
		w.questions++
	}
	err := w.index.row(traceRow{Variant: vi, Question: k, EM: q.EM, F1: q.F1, Flags: qv.Flags.bits(),
		Rounds: qv.Retrievals, States: qv.JudgeCalls, Index: j})
	if err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	return nil
}

// flush writes the current variant's pending questions as its next page;
// more says whether more questions follow on another page.
func (w *TraceWriter) flush(more bool) error {
	if len(w.part) == 0 {
		return nil
	}
	v := &w.data.Variants[len(w.data.Variants)-1]
	v.Parts++
	first := v.Questions - len(w.part)
	packed, err := packQuestions(w.part)
	if err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	pv := tracePartView{Title: w.data.Title, Variant: v.Name, Index: "../../" + TracesHTML,
		First: first + 1, Last: v.Questions, Questions: packed}
	if v.Parts > 1 {
		pv.Prev = tracePartName(v.Parts - 1)
	}
	if more {
		pv.Next = tracePartName(v.Parts + 1)
	}
	var b bytes.Buffer
	if err := tracesTemplate.ExecuteTemplate(&b, "part", pv); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	if err := os.WriteFile(filepath.Join(w.tmp, v.Anchor, tracePartName(v.Parts)), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write traces: %w", err)
	}
	w.part = w.part[:0]
	return nil
}

// tracePartName is the file name of page n (from 1) of a variant.
func tracePartName(n int) string { return fmt.Sprintf("part-%04d.html", n) }

// Close writes the last page and the index, and puts the pages in place.
func (w *TraceWriter) Close() error {
	if err := w.flush(false); err != nil {
		w.Abort()
		return err
	}
	view := traceIndexView{Title: w.data.Title, Data: w.data, PerPage: traceRowsPerPage, Index: template.JS(traceIndexMark)}
	for i := range view.Data.Variants {
		v := &view.Data.Variants[i]
		view.Questions += v.Questions
		if v.Questions > 0 {
			v.EM /= float64(v.Questions)
			v.F1 /= float64(v.Questions)
		}
		var parts []string
		for p := 1; p <= v.Parts; p++ {
			parts = append(parts, TracesDir+"/"+v.Anchor+"/"+tracePartName(p))
		}
		view.Parts = append(view.Parts, parts)
	}
	var b bytes.Buffer
	if err := tracesTemplate.ExecuteTemplate(&b, "index", view); err != nil {
		w.Abort()
		return fmt.Errorf("write traces: %w", err)
	}
	head, tail, ok := bytes.Cut(b.Bytes(), []byte(traceIndexMark))
	if !ok {
		w.Abort()
		return errors.New("write traces: the index template has no place for its data")
	}
	if err := w.index.finish(); err != nil {
		w.Abort()
		return fmt.Errorf("write traces: %w", err)
	}
	final := filepath.Join(w.dir, TracesDir)
	if err := os.RemoveAll(final); err != nil {
		w.Abort()
		return fmt.Errorf("write traces: %w", err)
	}
	if err := os.Rename(w.tmp, final); err != nil {
		w.Abort()
		return fmt.Errorf("write traces: %w", err)
	}
	err := data.WriteAtomic(filepath.Join(w.dir, TracesHTML), func(out *bufio.Writer) error {
		out.Write(head)
		if err := w.index.copyData(out, view.Data); err != nil {
			return err
		}
		_, err := out.Write(tail)
		return err
	})
	w.index.remove()
	return err
}

// Abort removes what the writer wrote.
func (w *TraceWriter) Abort() {
	os.RemoveAll(w.tmp)
	w.index.remove()
}

// traceIndexMark stands in the rendered index page where the index's data
// go; TraceWriter.Close writes them there from its traceIndexFile.
const traceIndexMark = "@@distill-trace-index@@"

// traceIndexFile holds the index's questions and rows, as the JSON of
// traceData's Questions and Rows, in two temporary files while a
// benchmark's pages are written, so that the writer's memory does not grow
// with the questions. json.Marshal escapes <, > and &, so the JSON is safe
// inside the page's script element.
type traceIndexFile struct {
	questions, rows *os.File
	qw, rw          *bufio.Writer
	nq, nr          int
}

func newTraceIndexFile(dir string) (*traceIndexFile, error) {
	q, err := os.CreateTemp(dir, ".traces-questions-*")
	if err != nil {
		return nil, err
	}
	r, err := os.CreateTemp(dir, ".traces-rows-*")
	if err != nil {
		q.Close()
		os.Remove(q.Name())
		return nil, err
	}
	return &traceIndexFile{questions: q, rows: r, qw: bufio.NewWriter(q), rw: bufio.NewWriter(r)}, nil
}

// question and row append one element to their list.
func (f *traceIndexFile) question(q traceIndexQuestion) error {
	f.nq++
	return appendJSON(f.qw, f.nq, q)
}

func (f *traceIndexFile) row(r traceRow) error {
	f.nr++
	return appendJSON(f.rw, f.nr, r)
}

// appendJSON writes v as the n-th element of a JSON list, from 1, without
// its brackets.
func appendJSON(w *bufio.Writer, n int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if n > 1 {
		w.WriteByte(',')
	}
	_, err = w.Write(b)
	return err
}

// finish flushes what is buffered.
func (f *traceIndexFile) finish() error {
	if err := f.qw.Flush(); err != nil {
		return err
	}
	return f.rw.Flush()
}

// copyData writes d with the questions and rows of the file as traceData's
// JSON: d's own lists must be empty.
func (f *traceIndexFile) copyData(w io.Writer, d traceData) error {
	d.Questions, d.Rows = nil, nil
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	// d's JSON ends in "questions":null,"rows":null}: cut it there.
	const nulls = `"questions":null,"rows":null}`
	head, ok := bytes.CutSuffix(b, []byte(nulls))
	if !ok {
		return fmt.Errorf("trace data JSON does not end in %s", nulls)
	}
	for _, part := range []struct {
		prefix string
		file   *os.File
	}{{`"questions":[`, f.questions}, {`],"rows":[`, f.rows}} {
		if _, err := w.Write(head); err != nil {
			return err
		}
		head = nil
		if _, err := io.WriteString(w, part.prefix); err != nil {
			return err
		}
		if _, err := part.file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(w, part.file); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "]}")
	return err
}

// remove closes and removes the files.
func (f *traceIndexFile) remove() {
	for _, file := range []*os.File{f.questions, f.rows} {
		file.Close()
		os.Remove(file.Name())
	}
}
