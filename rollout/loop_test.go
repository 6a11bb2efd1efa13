package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/retrieve"
)

// fakeRetriever returns the passages of its corpus in corpus order, skipping
// excluded ids, as a retriever that ranks every document equally would. It
// records every query.
type fakeRetriever struct {
	corpus  []data.Passage
	queries []retrieve.Query
	err     error
}

func (r *fakeRetriever) Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.Exclude = slices.Clone(q.Exclude)
	r.queries = append(r.queries, q)
	if r.err != nil {
		return nil, r.err
	}
	var hits []retrieve.Hit
	for i, p := range r.corpus {
		if len(hits) == q.K {
			break
		}
		if slices.Contains(q.Exclude, p.ID) {
			continue
		}
		hits = append(hits, retrieve.Hit{Passage: p, Score: float64(100 - i)})
	}
	return hits, nil
}

// scriptedJudge returns its script's results in turn, repeating the last.
type scriptedJudge struct {
	script   []judge.Result
	err      error
	errAt    int // call at which err is returned (0-based)
	contexts []string
}

func (j *scriptedJudge) Judge(_ context.Context, _ string, c data.Context) (judge.Result, error) {
	n := len(j.contexts)
	j.contexts = append(j.contexts, c.Render())
	if j.err != nil && n == j.errAt {
		return judge.Result{}, j.err
	}
	return j.script[min(n, len(j.script)-1)], nil
}

func insufficient(gaps ...data.GapItem) judge.Result {
	return judge.Result{Verdict: data.Verdict{GapItems: gaps}, Call: data.Call{Raw: "insufficient", Model: "judge-model", TemplateHash: "judge-hash", Usage: data.Usage{PromptTokens: 10, CompletionTokens: 2}}}
}

func sufficient() judge.Result {
	return judge.Result{Verdict: data.Verdict{Sufficient: true}, Call: data.Call{Raw: "sufficient", Model: "judge-model", TemplateHash: "judge-hash", Usage: data.Usage{PromptTokens: 10, CompletionTokens: 2}}}
}

// extractCall is what a fake extractor was given.
type extractCall struct {
	gaps      []data.GapItem
	sentences []Numbered
	max       int
}

// funcExtractor chooses ids with a function and records its calls.
type funcExtractor struct {
	choose func(call int, sentences []Numbered) ExtractResult
	err    error
	calls  []extractCall
}

func (x *funcExtractor) Extract(_ context.Context, _ string, gaps []data.GapItem, sentences []Numbered, max int) (ExtractResult, error) {
	x.calls = append(x.calls, extractCall{gaps, sentences, max})
	if x.err != nil {
		return ExtractResult{}, x.err
	}
	res := ExtractResult{Call: data.Call{Model: "extractor-model", TemplateHash: "extractor-hash", Usage: data.Usage{PromptTokens: 20, CompletionTokens: 4}}}
	if x.choose != nil {
		r := x.choose(len(x.calls)-1, sentences)
		r.Call.Model, r.Call.TemplateHash, r.Call.Usage = res.Model, res.TemplateHash, res.Usage
		return r, nil
	}
	// By default the first sentence of every document.
	for _, s := range sentences {
		if s.Index == 0 {
			res.IDs = append(res.IDs, s.ID)
		}
	}
	res.Raw = fmt.Sprint(res.IDs)
	return res, nil
}

// fakeReader answers "answer" and records the contexts it saw.
type fakeReader struct {
	err      error
	result   *ReadResult // what it answers instead of "answer"
	contexts []string
}

func (r *fakeReader) Answer(_ context.Context, _ string, c data.Context) (ReadResult, error) {
	r.contexts = append(r.contexts, c.Render())
	if r.err != nil {
		return ReadResult{}, r.err
	}
	if r.result != nil {
		return *r.result, nil
	}
	return ReadResult{Answer: "answer", Call: data.Call{Raw: "Answer: answer", Model: "reader-model", TemplateHash: "reader-hash", Usage: data.Usage{PromptTokens: 30, CompletionTokens: 6}}}, nil
}

// corpus makes n passages with ids d0..d(n-1), titles T0..T(n-1) and three
// sentences each.
func corpus(n int) []data.Passage {
	var ps []data.Passage
	for i := range n {
		title := fmt.Sprintf("T%d", i)
		ps = append(ps, data.Passage{
			ID: fmt.Sprintf("d%d", i), Title: title,
			Sentences: []string{title + " first.", title + " second.", title + " third."},
		})
	}
	return ps
}

var testQuestion = data.Question{ID: "q1", Text: "Who is T?", Dataset: "test"}

type fakes struct {
	judge     *scriptedJudge
	extractor *funcExtractor
	reader    *fakeReader
	retriever *fakeRetriever
}

func newFakes(script ...judge.Result) *fakes {
	return &fakes{
		judge:     &scriptedJudge{script: script},
		extractor: &funcExtractor{},
		reader:    &fakeReader{},
		retriever: &fakeRetriever{corpus: corpus(40)},
	}
}

func (f *fakes) roles() Roles {
	return Roles{Judge: f.judge, Extractor: f.extractor, Reader: f.reader, Retriever: f.retriever}
}

func run(t *testing.T, f *fakes, opts Options) Trajectory {
	t.Helper()
	tr, err := Run(context.Background(), testQuestion, f.roles(), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkTrajectory(t, tr)
	return tr
}

// checkTrajectory checks what holds for every trajectory: rounds count from
// 0, only the last state is final and has the answer, queries and retrieved
// documents only grow, and each state's rendering matches its evidence.
func checkTrajectory(t *testing.T, tr Trajectory) {
	t.Helper()
	if len(tr.States) == 0 {
		t.Fatal("no states")
	}
	for i, st := range tr.States {
		last := i == len(tr.States)-1
		if st.Round != int32(i) {
			t.Errorf("state %d: got round %d, want %d", i, st.Round, i)
		}
		if st.IsFinal != last {
			t.Errorf("state %d: got IsFinal %v, want %v", i, st.IsFinal, last)
		}
		if !last && (st.Answer != "" || st.ReaderOutput != "" || st.ReaderModel != "") {
			t.Errorf("state %d is not the last but has reader output %q", i, st.ReaderOutput)
		}
		if len(st.Queries) != i {
			t.Errorf("state %d: got %d queries, want %d", i, len(st.Queries), i)
		}
		if i > 0 {
			prev := tr.States[i-1]
			if !slices.Equal(prev.Queries, st.Queries[:len(prev.Queries)]) || !slices.Equal(prev.Retrieved, st.Retrieved[:len(prev.Retrieved)]) {
				t.Errorf("state %d does not extend the history of state %d", i, i-1)
			}
			if !strings.HasPrefix(st.Context, prev.Context) {
				t.Errorf("state %d: context %q does not extend %q", i, st.Context, prev.Context)
			}
		}
		if got := len(strings.Split(st.Context, "\n")); st.Context != "" && got < len(st.Evidence) {
			t.Errorf("state %d: %d lines for %d sentences", i, got, len(st.Evidence))
		}
		for _, e := range st.Evidence {
			if !strings.Contains(st.Context, data.OneLine(e.Text)) {
				t.Errorf("state %d: evidence %q is not in the context", i, e.Text)
			}
		}
	}
	if got, want := tr.States[len(tr.States)-1].Answer, tr.Answer; got != want {
		t.Errorf("got final answer %q on the last state, want %q", got, want)
	}
	if got, want := tr.States[len(tr.States)-1].Context, tr.Context.Render(); got != want {
		t.Errorf("last state's context differs from the trajectory's:\n%s\n---\n%s", got, want)
	}
}

func TestBuildQuery(t *testing.T) {
	g := func(target, slot, desc string) data.GapItem {
		return data.GapItem{Category: data.CategoryAttribute, Target: target, Slot: slot, Description: desc}
	}
	tests := []struct {
		name     string
		gaps     []data.GapItem
		firstGap bool
		want     string
		rule     QueryRule
	}{
		{"no gaps", nil, false, "Who is T?", QueryDistill},
		{"one gap", []data.GapItem{g("Paris", "population", "d")}, false, "Who is T? Paris population", QueryDistill},
		{"target only", []data.GapItem{g("Paris", "", "d")}, false, "Who is T? Paris", QueryDistill},
		{"slot only", []data.GapItem{g("", "population", "d")}, false, "Who is T? population", QueryDistill},
		{"description when target and slot are empty", []data.GapItem{g(" ", "", "How many people live there")}, false, "Who is T? How many people live there", QueryDistill},
		{"first three gaps", []data.GapItem{g("A", "a", ""), g("B", "b", ""), g("C", "c", ""), g("D", "d", "")}, false, "Who is T? A a B b C c", QueryDistill},
		{"empty items skipped but counted among the three", []data.GapItem{g("A", "a", ""), g("", "", ""), g("C", "c", ""), g("D", "d", "")}, false, "Who is T? A a C c", QueryDistill},
		{"first gap only", []data.GapItem{g("A", "a", ""), g("B", "b", "")}, true, "Who is T? A a", QueryDistill},
		{"first valid gap only", []data.GapItem{g("", "", ""), g("", "", "the B"), g("C", "c", "")}, true, "Who is T? the B", QueryDistill},
		{"first gap only without gaps", nil, true, "Who is T?", QueryDistill},
		{"line breaks become spaces", []data.GapItem{g("New\nYork", "mayor", "")}, false, "Who is T? New York mayor", QueryDistill},
		// The authors' rule (docs/reference.md): target and slot only when
		// both are set, else the description, else nothing; the first item
		// alone, whatever it adds, for TriviaQA.
		{"reference: no gaps", nil, false, "Who is T?", QueryReference},
		{"reference: target and slot", []data.GapItem{g("Paris", "population", "d")}, false, "Who is T? Paris population", QueryReference},
		{"reference: target only, the description", []data.GapItem{g("Paris", "", "its size")}, false, "Who is T? its size", QueryReference},
		{"reference: slot only, the description", []data.GapItem{g("", "population", "of Paris")}, false, "Who is T? of Paris", QueryReference},
		{"reference: target only, no description, nothing", []data.GapItem{g("Paris", "", "")}, false, "Who is T?", QueryReference},
		{"reference: first three", []data.GapItem{g("A", "a", ""), g("B", "", "b"), g("", "", ""), g("D", "d", "")}, false, "Who is T? A a b", QueryReference},
		{"reference: the first item alone, though it adds nothing", []data.GapItem{g("", "", ""), g("B", "b", "")}, true, "Who is T?", QueryReference},
		{"reference: the first item alone", []data.GapItem{g("A", "a", ""), g("B", "b", "")}, true, "Who is T? A a", QueryReference},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BuildQuery(testQuestion.Text, tt.gaps, tt.firstGap, tt.rule); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoopQueries(t *testing.T) {
	gaps := []data.GapItem{
		{Target: "A", Slot: "a"}, {Target: "B", Slot: "b"}, {Description: "the C"}, {Target: "D", Slot: "d"},
	}
	tests := []struct {
		name     string
		opts     Options
		dataset  string // the question's
		script   []judge.Result
		want     []string
		wantGaps int // gap items the extractor saw in the first round
	}{
		{
			name:     "first three gaps",
			script:   []judge.Result{insufficient(gaps...), insufficient(), sufficient()},
			want:     []string{"Who is T? A a B b the C", "Who is T?"},
			wantGaps: 3,
		},
		{
			name:     "first gap only",
			opts:     Options{FirstGapOnly: true},
			script:   []judge.Result{insufficient(gaps[2:]...), sufficient()},
			want:     []string{"Who is T? the C"},
			wantGaps: 2,
		},
		{
			name:     "reference rule, TriviaQA: the first gap alone",
			opts:     Options{QueryRule: QueryReference},
			dataset:  data.DatasetTriviaQA,
			script:   []judge.Result{insufficient(gaps...), sufficient()},
			want:     []string{"Who is T? A a"},
			wantGaps: 3,
		},
		{
			name:     "reference rule, another dataset: the first three",
			opts:     Options{QueryRule: QueryReference},
			dataset:  "hotpotqa",
			script:   []judge.Result{insufficient(gaps...), sufficient()},
			want:     []string{"Who is T? A a B b the C"},
			wantGaps: 3,
		},
		{
			name:     "distill rule, TriviaQA: the first three",
			dataset:  data.DatasetTriviaQA,
			script:   []judge.Result{insufficient(gaps...), sufficient()},
			want:     []string{"Who is T? A a B b the C"},
			wantGaps: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(tt.script...)
			q := testQuestion
			q.Dataset = tt.dataset
			tr, err := Run(context.Background(), q, f.roles(), tt.opts)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkTrajectory(t, tr)
			if diff := cmp.Diff(tt.want, tr.States[len(tr.States)-1].Queries); diff != "" {
				t.Errorf("queries (-want +got):\n%s", diff)
			}
			var sent []string
			for _, q := range f.retriever.queries {
				sent = append(sent, q.Text)
			}
			if diff := cmp.Diff(tt.want, sent); diff != "" {
				t.Errorf("queries sent to the retriever (-want +got):\n%s", diff)
			}
			if got := len(f.extractor.calls[0].gaps); got != tt.wantGaps {
				t.Errorf("extractor saw %d gap items, want %d", got, tt.wantGaps)
			}
		})
	}
}

func TestLoopPolicies(t *testing.T) {
	tests := []struct {
		name         string
		opts         Options
		script       []judge.Result
		wantStates   int
		wantOverride []bool
		wantSuff     []bool
	}{
		{
			name:         "t=0 override retrieves once then stops",
			script:       []judge.Result{sufficient()},
			wantStates:   2,
			wantOverride: []bool{true, false},
			wantSuff:     []bool{true, true},
		},
		{
			name:         "early stop at the first sufficient verdict",
			script:       []judge.Result{insufficient(), insufficient(), sufficient(), insufficient()},
			wantStates:   3,
			wantOverride: []bool{false, false, false},
			wantSuff:     []bool{false, false, true},
		},
		{
			name:         "fixed runs the whole budget and records every verdict",
			opts:         Options{Policy: Fixed},
			script:       []judge.Result{sufficient(), insufficient(), sufficient(), insufficient(), sufficient()},
			wantStates:   5,
			wantOverride: []bool{false, false, false, false, false},
			wantSuff:     []bool{true, false, true, false, true},
		},
		{
			name:         "budget exhausted",
			script:       []judge.Result{insufficient()},
			wantStates:   5,
			wantOverride: []bool{false, false, false, false, false},
			wantSuff:     []bool{false, false, false, false, false},
		},
		{
			name:         "smaller budget",
			opts:         Options{MaxRetrievals: 2},
			script:       []judge.Result{insufficient()},
			wantStates:   3,
			wantOverride: []bool{false, false, false},
			wantSuff:     []bool{false, false, false},
		},
		{
			name:         "fixed with a budget of one",
			opts:         Options{Policy: Fixed, MaxRetrievals: 1},
			script:       []judge.Result{sufficient()},
			wantStates:   2,
			wantOverride: []bool{false, false},
			wantSuff:     []bool{true, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(tt.script...)
			tr := run(t, f, tt.opts)
			if got := len(tr.States); got != tt.wantStates {
				t.Fatalf("got %d states, want %d", got, tt.wantStates)
			}
			var override, suff []bool
			for _, st := range tr.States {
				override = append(override, st.Override)
				suff = append(suff, st.Sufficient)
			}
			if diff := cmp.Diff(tt.wantOverride, override); diff != "" {
				t.Errorf("override per state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSuff, suff); diff != "" {
				t.Errorf("sufficient per state (-want +got):\n%s", diff)
			}
			if got, want := tr.Counts.Override, tt.wantOverride[0]; got != want {
				t.Errorf("got Counts.Override %v, want %v", got, want)
			}
			if got, want := tr.Counts.Retrievals, tt.wantStates-1; got != want {
				t.Errorf("got %d retrievals, want %d", got, want)
			}
			if got, want := tr.Counts.JudgeCalls, tt.wantStates; got != want {
				t.Errorf("got %d judge calls, want %d", got, want)
			}
			if got := len(f.reader.contexts); got != 1 {
				t.Fatalf("reader called %d times, want once", got)
			}
			if got, want := f.reader.contexts[0], tr.States[len(tr.States)-1].Context; got != want {
				t.Errorf("reader saw %q, want the last state's context %q", got, want)
			}
			if diff := cmp.Diff(f.judge.contexts, contexts(tr)); diff != "" {
				t.Errorf("contexts the judge saw differ from those recorded (-saw +recorded):\n%s", diff)
			}
		})
	}
}

func contexts(tr Trajectory) []string {
	var out []string
	for _, st := range tr.States {
		out = append(out, st.Context)
	}
	return out
}

func TestLoopJudgeParseFailure(t *testing.T) {
	bad := judge.Result{
		Verdict: data.Verdict{Sufficient: true, GapItems: []data.GapItem{{Target: "ignored"}}},
		Call:    data.Call{Raw: "I think so", ParseError: "no JSON object", Model: "m"},
	}
	f := newFakes(bad, sufficient())
	tr := run(t, f, Options{})
	st := tr.States[0]
	if st.Sufficient || len(st.GapItems) != 0 || st.Override {
		t.Errorf("got sufficient %v, %d gaps, override %v; want an insufficient verdict without gaps, no override", st.Sufficient, len(st.GapItems), st.Override)
	}
	if st.JudgeParseError != "no JSON object" || st.JudgeOutput != "I think so" {
		t.Errorf("got parse error %q and output %q recorded, want %q and %q", st.JudgeParseError, st.JudgeOutput, "no JSON object", "I think so")
	}
	if got := tr.Counts.JudgeParseFailures; got != 1 {
		t.Errorf("got %d parse failures, want 1", got)
	}
	if got, want := f.retriever.queries[0].Text, testQuestion.Text; got != want {
		t.Errorf("got query %q, want the bare question %q", got, want)
	}
}

func TestLoopDropsGapsOfSufficientVerdict(t *testing.T) {
	res := sufficient()
	res.Verdict.GapItems = []data.GapItem{{Target: "x"}}
	f := newFakes(insufficient(), res)
	tr := run(t, f, Options{})
	if got := tr.States[1].GapItems; len(got) != 0 {
		t.Errorf("got gaps %v on a sufficient verdict, want none", got)
	}
}

func TestLoopExclusion(t *testing.T) {
	// Titles repeat: d0 and d6 are both "A", d1 and d7 both "B".
	ps := corpus(20)
	ps[6].Title, ps[7].Title = ps[0].Title, ps[1].Title
	tests := []struct {
		name      string
		opts      Options
		wantK     int
		wantDocs  [][]string // doc ids retrieved per round
		wantExcl  [][]string // Exclude per round
		wantTopK  int
		numRounds int
	}{
		{
			name:      "by doc id",
			opts:      Options{MaxRetrievals: 3},
			wantK:     6,
			wantDocs:  [][]string{{"d0", "d1", "d2", "d3", "d4", "d5"}, {"d6", "d7", "d8", "d9", "d10", "d11"}, {"d12", "d13", "d14", "d15", "d16", "d17"}},
			wantExcl:  [][]string{nil, {"d0", "d1", "d2", "d3", "d4", "d5"}, {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11"}},
			numRounds: 3,
		},
		{
			name:      "by title",
			opts:      Options{MaxRetrievals: 2, Dedup: DedupTitle},
			wantK:     TitleFetch,
			wantDocs:  [][]string{{"d0", "d1", "d2", "d3", "d4", "d5"}, {"d8", "d9", "d10", "d11", "d12", "d13"}},
			wantExcl:  [][]string{nil, {"d0", "d1", "d2", "d3", "d4", "d5"}},
			numRounds: 2,
		},
		{
			name:      "top-k",
			opts:      Options{MaxRetrievals: 2, TopK: 2},
			wantK:     2,
			wantDocs:  [][]string{{"d0", "d1"}, {"d2", "d3"}},
			wantExcl:  [][]string{nil, {"d0", "d1"}},
			numRounds: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(insufficient())
			f.retriever.corpus = ps
			tr := run(t, f, tt.opts)
			got := make([][]string, tt.numRounds)
			for _, d := range tr.States[len(tr.States)-1].Retrieved {
				got[d.Round] = append(got[d.Round], d.DocID)
			}
			if diff := cmp.Diff(tt.wantDocs, got); diff != "" {
				t.Errorf("documents per round (-want +got):\n%s", diff)
			}
			var excl [][]string
			for _, q := range f.retriever.queries {
				excl = append(excl, q.Exclude)
				if q.K != tt.wantK {
					t.Errorf("asked for k=%d, want %d", q.K, tt.wantK)
				}
			}
			if diff := cmp.Diff(tt.wantExcl, excl, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("exclusions per round (-want +got):\n%s", diff)
			}
			for _, d := range tr.States[len(tr.States)-1].Retrieved {
				if d.Rank < 1 || d.Title == "" || d.Score == 0 {
					t.Errorf("retrieved doc %+v lacks rank, title or score", d)
				}
			}
		})
	}
}

// TestLoopBrokenRetriever checks that documents already seen are dropped
// even when the retriever ignores Exclude.
func TestLoopBrokenRetriever(t *testing.T) {
	f := newFakes(insufficient())
	f.retriever.corpus = corpus(3)
	ignoring := retrieverFunc(func(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
		q.Exclude = nil
		return f.retriever.Search(ctx, q)
	})
	roles := f.roles()
	roles.Retriever = ignoring
	tr, err := Run(context.Background(), testQuestion, roles, Options{MaxRetrievals: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkTrajectory(t, tr)
	if got := len(tr.States[len(tr.States)-1].Retrieved); got != 3 {
		t.Errorf("got %d retrieved documents, want the 3 distinct ones", got)
	}
	if got := len(f.extractor.calls); got != 1 {
		t.Errorf("extractor called %d times, want once (the second round found nothing new)", got)
	}
	if got := tr.States[2].Candidates; got != 0 {
		t.Errorf("got %d candidates in a round without new documents, want 0", got)
	}
}

type retrieverFunc func(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error)

func (f retrieverFunc) Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	return f(ctx, q)
}

func TestLoopNumbering(t *testing.T) {
	long := make([]string, 45)
	for i := range long {
		long[i] = fmt.Sprintf("Sentence %d.", i)
	}
	ps := []data.Passage{
		{ID: "a", Title: "Alpha", Sentences: []string{"First of alpha.", "  ", "Third\nof alpha."}},
		{ID: "b", Title: "Beta", Text: "Beta has text only. It is split here. Dr. Who stays whole."},
		{ID: "c", Title: "Gamma", Sentences: long},
	}
	f := newFakes(insufficient(), sufficient())
	f.retriever.corpus = ps
	tr := run(t, f, Options{})
	got := f.extractor.calls[0].sentences
	var lines []string
	for i, s := range got {
		if s.ID != i+1 {
			t.Errorf("sentence %d has id %d, want %d", i, s.ID, i+1)
		}
		if want := NumberedLine(s.ID, s.Evidence); s.Line != want {
			t.Errorf("got line %q, want %q", s.Line, want)
		}
		lines = append(lines, s.Line)
	}
	want := []string{
		"[1] (Alpha | s#0) First of alpha.",
		"[2] (Alpha | s#2) Third of alpha.",
		"[3] (Beta | s#0) Beta has text only.",
		"[4] (Beta | s#1) It is split here.",
		"[5] (Beta | s#2) Dr. Who stays whole.",
	}
	for i := range 40 {
		want = append(want, fmt.Sprintf("[%d] (Gamma | s#%d) Sentence %d.", 6+i, i, i))
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("numbered lines (-want +got):\n%s", diff)
	}
	if got := tr.States[1].Candidates; got != 45 {
		t.Errorf("got %d candidates recorded, want 45", got)
	}
	wantEv := data.Evidence{DocID: "a", Title: "Alpha", Index: 2, Text: "Third\nof alpha."}
	if diff := cmp.Diff(wantEv, got[1].Evidence); diff != "" {
		t.Errorf("provenance of sentence 2 (-want +got):\n%s", diff)
	}
}

// barSplitter splits texts at "|": a Splitter for the loop's tests.
type barSplitter struct{ err error }

func (s barSplitter) Split(texts []string) ([][]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := make([][]string, len(texts))
	for i, t := range texts {
		out[i] = strings.Split(t, "|")
	}
	return out, nil
}

func (barSplitter) Name() string { return "bar" }

// TestLoopSplitter: a splitter splits every document's text, its own
// sentences ignored; a splitter's failure fails the question as a role's.
func TestLoopSplitter(t *testing.T) {
	f := newFakes(insufficient(), sufficient())
	f.retriever.corpus = []data.Passage{
		{ID: "a", Title: "Alpha", Text: "One. Two.|Three", Sentences: []string{"One.", "Two.", "Three"}},
		{ID: "b", Title: "Beta", Text: "Four"},
	}
	run(t, f, Options{Splitter: barSplitter{}})
	var lines []string
	for _, s := range f.extractor.calls[0].sentences {
		lines = append(lines, s.Line)
	}
	want := []string{"[1] (Alpha | s#0) One. Two.", "[2] (Alpha | s#1) Three", "[3] (Beta | s#0) Four"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("numbered lines (-want +got):\n%s", diff)
	}

	boom := errors.New("boom")
	_, err := Run(t.Context(), testQuestion, newFakes(insufficient()).roles(), Options{Splitter: barSplitter{err: boom}})
	var re *RoleError
	if !errors.Is(err, boom) || !errors.As(err, &re) || re.Role != "splitter" || re.Round != 0 {
		t.Errorf("got %v, want the splitter's failure as a *RoleError of round 0", err)
	}
}

func TestNumberedLine(t *testing.T) {
	tests := []struct {
		id   int
		e    data.Evidence
		want string
	}{
		{1, data.Evidence{Title: "Paris", Index: 0, Text: "Paris is a city."}, "[1] (Paris | s#0) Paris is a city."},
		{12, data.Evidence{Title: "A (film)", Index: 39, Text: " Spaced\r\nout "}, "[12] (A (film) | s#39) Spaced  out"},
	}
	for _, tt := range tests {
		if got := NumberedLine(tt.id, tt.e); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestLoopExtractorIDs(t *testing.T) {
	tests := []struct {
		name        string
		ids         []int
		parseError  string
		max         int
		wantChosen  []int32
		wantDropped []int32
		wantCounts  [3]int32 // out of range, repeated, over limit
	}{
		{
			name:       "valid ids kept in order",
			ids:        []int{3, 1, 2},
			wantChosen: []int32{3, 1, 2},
		},
		{
			name:        "invalid, repeated and surplus ids dropped and counted",
			ids:         []int{0, 1, 1, 99, 2, 3, 4, 5, 6, 7, -3, 2},
			wantChosen:  []int32{1, 2, 3, 4, 5, 6},
			wantDropped: []int32{0, 1, 99, 7, -3, 2},
			wantCounts:  [3]int32{3, 2, 1},
		},
		{
			name:        "smaller K",
			ids:         []int{5, 4, 3},
			max:         2,
			wantChosen:  []int32{5, 4},
			wantDropped: []int32{3},
			wantCounts:  [3]int32{0, 0, 1},
		},
		{
			name:        "id past the last sentence",
			ids:         []int{18, 19},
			wantChosen:  []int32{18},
			wantDropped: []int32{19},
			wantCounts:  [3]int32{1, 0, 0},
		},
		{
			name:       "parse failure chooses nothing",
			ids:        []int{1, 2},
			parseError: "bad json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(insufficient(), sufficient())
			f.extractor.choose = func(int, []Numbered) ExtractResult {
				return ExtractResult{IDs: tt.ids, Call: data.Call{Raw: "raw", ParseError: tt.parseError}}
			}
			tr := run(t, f, Options{MaxEvidence: tt.max})
			st := tr.States[1]
			if diff := cmp.Diff(tt.wantChosen, st.ChosenIDs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("chosen ids (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDropped, st.DroppedIDs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("dropped ids (-want +got):\n%s", diff)
			}
			if got := [3]int32{st.DroppedOutOfRange, st.DroppedRepeated, st.DroppedOverLimit}; got != tt.wantCounts {
				t.Errorf("got drop counts %v, want %v", got, tt.wantCounts)
			}
			if got, want := st.ExtractorParseError, tt.parseError; got != want {
				t.Errorf("got extractor parse error %q, want %q", got, want)
			}
			if got, want := st.Candidates, int32(18); got != want {
				t.Errorf("got %d candidates, want %d", got, want)
			}
			if got, want := len(st.Evidence), len(tt.wantChosen); got != want {
				t.Errorf("got %d evidence sentences, want %d", got, want)
			}
			wantMax := tt.max
			if wantMax == 0 {
				wantMax = DefaultMaxEvidence
			}
			if got := f.extractor.calls[0].max; got != wantMax {
				t.Errorf("extractor was told max %d, want %d", got, wantMax)
			}
			c := tr.Counts
			if got := [3]int{c.DroppedOutOfRange, c.DroppedRepeated, c.DroppedOverLimit}; got != [3]int{int(tt.wantCounts[0]), int(tt.wantCounts[1]), int(tt.wantCounts[2])} {
				t.Errorf("got trajectory drop counts %v, want %v", got, tt.wantCounts)
			}
		})
	}
}

// TestLoopEvidence checks the context: sentences grouped by title, copied
// verbatim with provenance, and blocks already there not added again.
func TestLoopEvidence(t *testing.T) {
	ps := []data.Passage{
		{ID: "a1", Title: "A", Sentences: []string{"A zero.", "A one."}},
		{ID: "b1", Title: "B", Sentences: []string{"B zero."}},
		// The second round retrieves another document titled A with the
		// same first sentence, and a new one.
		{ID: "a2", Title: "A", Sentences: []string{"A zero.", "A other."}},
		{ID: "c1", Title: "C", Sentences: []string{"C zero."}},
	}
	f := newFakes(insufficient(), insufficient(), sufficient())
	f.retriever.corpus = ps
	f.extractor.choose = func(call int, s []Numbered) ExtractResult {
		if call == 0 {
			return ExtractResult{IDs: []int{3, 1, 2}} // B zero., A zero., A one.
		}
		return ExtractResult{IDs: []int{1, 3}} // A zero. (of a2), C zero.
	}
	tr := run(t, f, Options{TopK: 2})
	want := "[B]\nB zero.\n\n[A]\nA zero.\nA one.\n\n[C]\nC zero."
	if got := tr.Context.Render(); got != want {
		t.Errorf("got context\n%s\nwant\n%s", got, want)
	}
	wantEv := []data.Evidence{
		{DocID: "b1", Title: "B", Index: 0, Text: "B zero."},
		{DocID: "a1", Title: "A", Index: 0, Text: "A zero."},
		{DocID: "a1", Title: "A", Index: 1, Text: "A one."},
		{DocID: "c1", Title: "C", Index: 0, Text: "C zero."},
	}
	if diff := cmp.Diff(wantEv, tr.States[2].Evidence); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	if got := [2]int32{tr.States[1].BlocksAdded, tr.States[1].BlocksSkipped}; got != [2]int32{2, 0} {
		t.Errorf("round 0: got blocks added, skipped %v, want [2 0]", got)
	}
	if got := [2]int32{tr.States[2].BlocksAdded, tr.States[2].BlocksSkipped}; got != [2]int32{1, 1} {
		t.Errorf("round 1: got blocks added, skipped %v, want [1 1]", got)
	}
	if got := [2]int{tr.Counts.BlocksAdded, tr.Counts.BlocksSkipped}; got != [2]int{3, 1} {
		t.Errorf("got total blocks added, skipped %v, want [3 1]", got)
	}
}

// TestLoopEvidenceReference is TestLoopEvidence under the authors'
// layout: a block per document in retrieval order, each document's
// sentences in order, whatever order the extractor chose them in; the
// second round, which holds a new sentence, is added whole.
func TestLoopEvidenceReference(t *testing.T) {
	ps := []data.Passage{
		{ID: "a1", Title: "A", Sentences: []string{"A zero.", "A one."}},
		{ID: "b1", Title: "B", Sentences: []string{"B zero."}},
		{ID: "a2", Title: "A", Sentences: []string{"A zero.", "A other."}},
		{ID: "c1", Title: "C", Sentences: []string{"C zero."}},
	}
	f := newFakes(insufficient(), insufficient(), sufficient())
	f.retriever.corpus = ps
	f.extractor.choose = func(call int, s []Numbered) ExtractResult {
		if call == 0 {
			return ExtractResult{IDs: []int{3, 2, 1}} // B zero., A one., A zero.
		}
		return ExtractResult{IDs: []int{3, 1}} // C zero., A zero. (of a2)
	}
	tr := run(t, f, Options{TopK: 2, Evidence: data.LayoutReference})
	round1 := "[A] EVIDENCE:\n- A zero.\n- A one.\n\n---\n\n[B] EVIDENCE:\n- B zero."
	round2 := "[A] EVIDENCE:\n- A zero.\n\n---\n\n[C] EVIDENCE:\n- C zero."
	if got := tr.Context.Render(); got != round1+"\n\n"+round2 {
		t.Errorf("got context\n%s\nwant\n%s", got, round1+"\n\n"+round2)
	}
	if got := tr.States[1].Context; got != round1 {
		t.Errorf("state 1 records context %q, want %q", got, round1)
	}
	wantRounds := []data.Round{{Query: tr.States[2].Queries[0], Text: round1}, {Query: tr.States[2].Queries[1], Text: round2}}
	if diff := cmp.Diff(wantRounds, tr.Context.Rounds()); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
	if got := [2]int{tr.Counts.BlocksAdded, tr.Counts.BlocksSkipped}; got != [2]int{4, 0} {
		t.Errorf("got total blocks added, skipped %v, want [4 0]", got)
	}
}

// TestLoopUnreadableAnswer checks that a reply the reader could not read
// is counted, and scored as the answer the reader gives for it: empty, or
// AnswerNotFound under the reference reader input.
func TestLoopUnreadableAnswer(t *testing.T) {
	for _, answer := range []string{"", AnswerNotFound} {
		f := newFakes(sufficient(), sufficient())
		f.reader.result = &ReadResult{Answer: answer, Call: data.Call{Raw: "no marker", ParseError: "unreadable"}}
		tr := run(t, f, Options{})
		last := tr.States[len(tr.States)-1]
		if tr.Answer != answer || last.Answer != answer || last.ReaderParseError != "unreadable" || tr.Counts.ReaderParseFailures != 1 {
			t.Errorf("reader answered %q: trajectory answer %q, state answer %q, parse error %q, failures %d", answer, tr.Answer, last.Answer, last.ReaderParseError, tr.Counts.ReaderParseFailures)
		}
	}
}

// TestLoopRecords checks what each state records about the calls that led
// to it and the judge call it holds.
func TestLoopRecords(t *testing.T) {
	f := newFakes(insufficient(data.GapItem{Category: data.CategoryOther, Target: "x"}), sufficient())
	tr := run(t, f, Options{})
	if len(tr.States) != 2 {
		t.Fatalf("got %d states, want 2", len(tr.States))
	}
	first, last := tr.States[0], tr.States[1]
	ignore := cmpopts.IgnoreFields(data.State{}, "JudgeMS", "RetrieveMS", "ExtractMS", "ReadMS")
	want0 := data.State{
		QuestionID: "q1", Dataset: "test", Round: 0, Question: testQuestion.Text,
		JudgeOutput: "insufficient", GapItems: []data.GapItem{{Category: data.CategoryOther, Target: "x"}},
		JudgeModel: "judge-model", JudgeTemplate: "judge-hash", JudgePromptTokens: 10, JudgeCompletionTokens: 2,
	}
	if diff := cmp.Diff(want0, first, ignore, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("state 0 (-want +got):\n%s", diff)
	}
	if last.Round != 1 || last.JudgeOutput != "sufficient" || !last.Sufficient || !last.IsFinal {
		t.Errorf("state 1: got round %d, output %q, sufficient %v, final %v", last.Round, last.JudgeOutput, last.Sufficient, last.IsFinal)
	}
	if diff := cmp.Diff([]string{"Who is T? x"}, last.Queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
	if got := len(last.Retrieved); got != 6 {
		t.Errorf("got %d retrieved documents, want 6", got)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"extractor model", last.ExtractorModel, "extractor-model"},
		{"extractor template", last.ExtractorTemplate, "extractor-hash"},
		{"extractor tokens", [2]int64{last.ExtractorPromptTokens, last.ExtractorCompletionTokens}, [2]int64{20, 4}},
		{"chosen ids", last.ChosenIDs, []int32{1, 4, 7, 10, 13, 16}},
		{"reader model", last.ReaderModel, "reader-model"},
		{"reader template", last.ReaderTemplate, "reader-hash"},
		{"reader output", last.ReaderOutput, "Answer: answer"},
		{"answer", last.Answer, "answer"},
		{"reader tokens", [2]int64{last.ReaderPromptTokens, last.ReaderCompletionTokens}, [2]int64{30, 6}},
		{"judge usage", tr.JudgeUsage, data.Usage{PromptTokens: 20, CompletionTokens: 4}},
		{"extractor usage", tr.ExtractorUsage, data.Usage{PromptTokens: 20, CompletionTokens: 4}},
		{"reader usage", tr.ReaderUsage, data.Usage{PromptTokens: 30, CompletionTokens: 6}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	for i, st := range tr.States {
		if st.JudgeMS < 0 || st.RetrieveMS < 0 || st.ExtractMS < 0 || st.ReadMS < 0 {
			t.Errorf("state %d has a negative duration", i)
		}
	}
	if first.RetrieveMS != 0 || first.ExtractMS != 0 {
		t.Errorf("state 0 records retrieval or extraction time: %v, %v", first.RetrieveMS, first.ExtractMS)
	}
}

func TestLoopErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		setup     func(f *fakes)
		wantRole  string // "" when the error is not a *RoleError
		wantRound int
		wantIs    error
		states    int
	}{
		{
			name:      "judge",
			setup:     func(f *fakes) { f.judge.err, f.judge.errAt = boom, 1 },
			wantRole:  "judge",
			wantRound: 1,
			wantIs:    boom,
			states:    1,
		},
		{
			name:     "extractor",
			setup:    func(f *fakes) { f.extractor.err = boom },
			wantRole: "extractor",
			wantIs:   boom,
			states:   1,
		},
		{
			name:      "reader",
			setup:     func(f *fakes) { f.reader.err = boom },
			wantRole:  "reader",
			wantRound: 4,
			wantIs:    boom,
			states:    4,
		},
		{
			name:   "retriever is systemic",
			setup:  func(f *fakes) { f.retriever.err = boom },
			wantIs: boom,
			states: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(insufficient())
			tt.setup(f)
			tr, err := Run(context.Background(), testQuestion, f.roles(), Options{})
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("got error %v, want one wrapping %v", err, tt.wantIs)
			}
			var re *RoleError
			switch {
			case tt.wantRole == "" && errors.As(err, &re):
				t.Errorf("got a *RoleError (%v), want a systemic error", err)
			case tt.wantRole != "" && !errors.As(err, &re):
				t.Errorf("got %v, want a *RoleError", err)
			case tt.wantRole != "" && (re.Role != tt.wantRole || re.Round != tt.wantRound):
				t.Errorf("got role %q round %d, want %q round %d", re.Role, re.Round, tt.wantRole, tt.wantRound)
			}
			if got := len(tr.States); got != tt.states {
				t.Errorf("got %d states kept, want %d", got, tt.states)
			}
			for _, st := range tr.States {
				if st.IsFinal {
					t.Error("a failed question has a final state")
				}
			}
		})
	}
}

// cancellingJudge cancels the run's context and fails, as a model client
// whose request was cancelled does.
type cancellingJudge struct{ cancel context.CancelFunc }

func (j cancellingJudge) Judge(ctx context.Context, _ string, _ data.Context) (judge.Result, error) {
	j.cancel()
	return judge.Result{}, fmt.Errorf("post: %w", ctx.Err())
}

func TestLoopCancelled(t *testing.T) {
	t.Run("before the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Run(ctx, testQuestion, newFakes(insufficient()).roles(), Options{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("during a role call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		roles := newFakes().roles()
		roles.Judge = cancellingJudge{cancel}
		_, err := Run(ctx, testQuestion, roles, Options{})
		var re *RoleError
		if !errors.Is(err, context.Canceled) || errors.As(err, &re) {
			t.Fatalf("got %v, want a systemic context.Canceled, not a *RoleError", err)
		}
	})
	t.Run("a role that ignores cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := newFakes(insufficient())
		f.extractor.choose = func(int, []Numbered) ExtractResult {
			cancel()
			return ExtractResult{}
		}
		_, err := Run(ctx, testQuestion, f.roles(), Options{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
}

func TestRunChecksArguments(t *testing.T) {
	full := newFakes(sufficient()).roles()
	tests := []struct {
		name  string
		roles func(Roles) Roles
		opts  Options
		want  error
	}{
		{"no judge", func(r Roles) Roles { r.Judge = nil; return r }, Options{}, ErrMissingRole},
		{"no extractor", func(r Roles) Roles { r.Extractor = nil; return r }, Options{}, ErrMissingRole},
		{"no reader", func(r Roles) Roles { r.Reader = nil; return r }, Options{}, ErrMissingRole},
		{"no retriever", func(r Roles) Roles { r.Retriever = nil; return r }, Options{}, ErrMissingRole},
		{"negative retrievals", nil, Options{MaxRetrievals: -1}, ErrOptions},
		{"negative top-k", nil, Options{TopK: -1}, ErrOptions},
		{"negative K", nil, Options{MaxEvidence: -2}, ErrOptions},
		{"negative sentences", nil, Options{MaxSentences: -2}, ErrOptions},
		{"unknown policy", nil, Options{Policy: 7}, ErrOptions},
		{"unknown dedup", nil, Options{Dedup: 7}, ErrOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roles := full
			if tt.roles != nil {
				roles = tt.roles(roles)
			}
			if _, err := Run(context.Background(), testQuestion, roles, tt.opts); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParsePolicyAndDedup(t *testing.T) {
	for _, p := range []Policy{EarlyStop, Fixed} {
		got, err := ParsePolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePolicy(%q): got %v, %v, want %v", p.String(), got, err, p)
		}
	}
	for _, d := range []Dedup{DedupDocID, DedupTitle} {
		got, err := ParseDedup(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDedup(%q): got %v, %v, want %v", d.String(), got, err, d)
		}
	}
	if _, err := ParsePolicy("sometimes"); !errors.Is(err, ErrOptions) {
		t.Errorf("ParsePolicy(sometimes): got %v, want ErrOptions", err)
	}
	if _, err := ParseDedup("url"); !errors.Is(err, ErrOptions) {
		t.Errorf("ParseDedup(url): got %v, want ErrOptions", err)
	}
	if _, err := ParseDedup("url"); err == nil || !strings.Contains(err.Error(), `dedup "url": want doc-id or title`) {
		t.Errorf("ParseDedup(url): got %v, want it to name the choices", err)
	}
	if got := Policy(9).String(); got != "Policy(9)" {
		t.Errorf("got %q, want Policy(9)", got)
	}
	if got := Dedup(-1).String(); got != "Dedup(-1)" {
		t.Errorf("got %q, want Dedup(-1)", got)
	}
	for _, o := range []Options{{Policy: Policy(2)}, {Policy: -1}, {Dedup: Dedup(2)}} {
		if _, err := o.withDefaults(); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: got %v, want ErrOptions", o, err)
		}
	}
}

func TestFailedState(t *testing.T) {
	q := data.Question{ID: "q9", Text: "Why?", Dataset: "d"}
	got := FailedState(q, &RoleError{Role: "judge", Round: 2, Err: errors.New("status 500")})
	want := data.State{QuestionID: "q9", Dataset: "d", Question: "Why?", IsFinal: true, Failure: "judge at round 2: status 500"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
