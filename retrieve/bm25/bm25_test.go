package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

func buildAndOpen(t testing.TB, ps []data.Passage, opts BuildOptions) *Index {
	t.Helper()
	return buildIn(t, filepath.Join(t.TempDir(), "idx"), ps, opts)
}

// buildIn builds an index of ps in dir and opens it; it is closed when the
// test ends.
func buildIn(t testing.TB, dir string, ps []data.Passage, opts BuildOptions) *Index {
	t.Helper()
	if _, err := Build(context.Background(), dir, data.NewPassageSlice(ps), opts); err != nil {
		t.Fatalf("Build: %v", err)
	}
	x, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func TestConformance(t *testing.T) {
	retrievetest.Run(t, func(t *testing.T, corpus []data.Passage) retrieve.Retriever {
		return buildAndOpen(t, corpus, BuildOptions{})
	})
}

// TestScoresByHand checks scores against values worked out by hand (with a
// calculator) for a three-document corpus: N=3, lengths 3, 4, 2, avgdl=3.
func TestScoresByHand(t *testing.T) {
	ps := []data.Passage{
		{ID: "d0", Title: "cat", Text: "cat dog"},
		{ID: "d1", Title: "dog", Text: "dog dog fish"},
		{ID: "d2", Title: "bird", Text: "fish"},
	}
	x := buildAndOpen(t, ps, BuildOptions{})
	type hit struct {
		ID    string
		Score float64
	}
	tests := []struct {
		query string
		want  []hit
	}{
		// idf(cat) = ln(1 + 2.5/1.5); d0: tf 2, dl 3: 2*1.9/(2+0.9)
		{"cat", []hit{{"d0", 1.2852245384291585}}},
		// dog: df 2; d1 tf 3 dl 4, d0 tf 1 dl 3
		{"dog", []hit{{"d1", 0.6664230563932072}, {"d0", 0.47000362924573563}}},
		// fish: df 2; the shorter d2 wins
		{"fish", []hit{{"d2", 0.5016892671724144}, {"d1", 0.44208262156777106}}},
		{"dog fish", []hit{{"d1", 1.1085056779609783}, {"d2", 0.5016892671724144}, {"d0", 0.47000362924573563}}},
		// a repeated query term counts twice
		{"cat cat", []hit{{"d0", 2 * 1.2852245384291585}}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits, err := x.Search(context.Background(), retrieve.Query{Text: tc.query, K: 10})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]hit, len(hits))
			for i, h := range hits {
				got[i] = hit{h.ID, h.Score}
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-5 })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// reference is textbook BM25 over pre-analysed documents, in float64, with
// the exhaustive sort that the index must agree with.
type reference struct {
	docs  []map[string]int
	lens  []int
	df    map[string]int
	avgdl float64
}

func newReference(ps []data.Passage) *reference {
	r := &reference{df: map[string]int{}}
	var a analysis.Analyzer
	total := 0
	for _, p := range ps {
		tf := map[string]int{}
		terms := append(a.Terms(p.Title), a.Terms(p.Text)...)
		for _, t := range terms {
			tf[t]++
		}
		for t := range tf {
			r.df[t]++
		}
		r.docs = append(r.docs, tf)
		r.lens = append(r.lens, len(terms))
		total += len(terms)
	}
	r.avgdl = float64(total) / float64(len(ps))
	return r
}

func (r *reference) top(query string, k int) []int {
	var a analysis.Analyzer
	n := float64(len(r.docs))
	scores := make([]float64, len(r.docs))
	for _, t := range a.Terms(query) {
		df := float64(r.df[t])
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for d, tfs := range r.docs {
			if tf := float64(tfs[t]); tf > 0 {
				scores[d] += idf * tf * (DefaultK1 + 1) / (tf + DefaultK1*(1-DefaultB+DefaultB*float64(r.lens[d])/r.avgdl))
			}
		}
	}
	var docs []int
	for d, s := range scores {
		if s > 0 {
			docs = append(docs, d)
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return scores[docs[i]] > scores[docs[j]] })
	return docs[:min(k, len(docs))]
}

// TestMatchesTextbookBM25 compares top-10 rankings with the exhaustive
// float64 reference on a random Zipf corpus. Where two reference scores are
// closer than float32 can tell apart, either order is accepted.
func TestMatchesTextbookBM25(t *testing.T) {
	g := newGenerator(7, 5000)
	ps := g.corpus(3000)
	x := buildAndOpen(t, ps, BuildOptions{})
	ref := newReference(ps)
	idx := map[string]int{}
	for i, p := range ps {
		idx[p.ID] = i
	}
	same, n := 0, 300
	for qi := range n {
		q := g.query()
		want := ref.top(q, 10)
		hits, err := x.Search(context.Background(), retrieve.Query{Text: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int, len(hits))
		for i, h := range hits {
			got[i] = idx[h.ID]
		}
		if slices.Equal(got, want) {
			same++
			continue
		}
		if len(got) != len(want) {
			t.Errorf("query %d %q: got %d hits, want %d", qi, q, len(got), len(want))
			continue
		}
		// Accept only differences between near-equal reference scores.
		rs := func(d int) float64 { return ref.scoreOf(q, d) }
		for i := range got {
			if got[i] != want[i] && math.Abs(rs(got[i])-rs(want[i])) > 1e-5*rs(want[i]) {
				t.Errorf("query %d %q: rank %d: got doc %d (%.7f), want doc %d (%.7f)", qi, q, i+1, got[i], rs(got[i]), want[i], rs(want[i]))
				break
			}
		}
	}
	t.Logf("top-10 identical to the reference for %d of %d queries (the rest differ only within float32 ties)", same, n)
}

func (r *reference) scoreOf(query string, d int) float64 {
	var a analysis.Analyzer
	n := float64(len(r.docs))
	s := 0.0
	for _, t := range a.Terms(query) {
		df := float64(r.df[t])
		tf := float64(r.docs[d][t])
		if df == 0 || tf == 0 {
			continue
		}
		s += math.Log(1+(n-df+0.5)/(df+0.5)) * tf * (DefaultK1 + 1) / (tf + DefaultK1*(1-DefaultB+DefaultB*float64(r.lens[d])/r.avgdl))
	}
	return s
}

func TestBuildErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		ps   []data.Passage
		opts BuildOptions
		want string
	}{
		{"empty id", []data.Passage{{ID: "", Title: "x", Text: "y"}}, BuildOptions{}, "passage 1: empty doc id"},
		{"duplicate id", []data.Passage{{ID: "a", Text: "x"}, {ID: "b", Text: "y"}, {ID: "a", Text: "z"}}, BuildOptions{}, `duplicate doc id "a" (passages 1 and 3)`},
		{"bad b", []data.Passage{{ID: "a", Text: "x"}}, BuildOptions{B: 2}, "want k1 >= 0 and 0 <= b <= 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			_, err := Build(ctx, dir, data.NewPassageSlice(tc.ps), tc.opts)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("a failed build left %s behind", dir)
			}
			left, _ := os.ReadDir(filepath.Dir(dir))
			if len(left) != 0 {
				t.Errorf("a failed build left temporary files: %v", left)
			}
		})
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

func TestBuildOverwrite(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	one := []data.Passage{{ID: "a", Title: "alpha", Text: "first"}}
	two := []data.Passage{{ID: "b", Title: "beta", Text: "second"}, {ID: "c", Title: "gamma", Text: "third"}}
	if _, err := Build(ctx, dir, data.NewPassageSlice(one), BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(ctx, dir, data.NewPassageSlice(two), BuildOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second build without Overwrite: got %v, want ErrExists", err)
	}
	st, err := Build(ctx, dir, data.NewPassageSlice(two), BuildOptions{Overwrite: true, K1: 1.2, B: 0.75, SourceName: "two.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Passages != 2 {
		t.Errorf("got %d passages, want 2", st.Passages)
	}
	x, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if k1, b := x.Params(); k1 != 1.2 || b != 0.75 {
		t.Errorf("got k1=%v b=%v, want 1.2 0.75", k1, b)
	}
	if m := x.Meta(); m.Passages != 2 || m.Source != "two.jsonl" || m.Format != "distill-bm25" {
		t.Errorf("meta: got %+v", m)
	}
}

func TestCancelledBuild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "idx")
	_, err := Build(ctx, dir, data.NewPassageSlice(retrievetest.Corpus()), BuildOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestClosed(t *testing.T) {
	x := buildAndOpen(t, retrievetest.Corpus(), BuildOptions{})
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := x.Search(context.Background(), retrieve.Query{Text: "lighthouse", K: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("search after Close: got %v, want ErrClosed", err)
	}
}

// TestDamagedIndex flips and cuts bytes of a real index file: opening or
// searching must fail with an error or work, never panic.
func TestDamagedIndex(t *testing.T) {
	ctx := context.Background()
	origIndex, origDocs := buildFiles(t, retrievetest.Corpus())
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 600 {
		index, docs := slices.Clone(origIndex), slices.Clone(origDocs)
		b := &index
		if trial%2 == 1 {
			b = &docs
		}
		switch trial % 3 {
		case 0:
			*b = (*b)[:rng.IntN(len(*b))]
		default:
			for range 1 + rng.IntN(8) {
				(*b)[rng.IntN(len(*b))] ^= byte(1 + rng.IntN(255))
			}
		}
		x, err := newIndex(index, docs)
		if err != nil {
			continue
		}
		for _, q := range []string{"lighthouse", "marker zq3xv", "Orvel Quessa crimson"} {
			x.Search(ctx, retrieve.Query{Text: q, K: 5, Exclude: []string{retrievetest.Corpus()[0].ID}})
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Open of a missing directory: got nil error")
	}
}

func TestSentencesRoundTrip(t *testing.T) {
	ps := []data.Passage{
		{ID: "spans", Title: "T", Text: "One. Two two. Three.", Sentences: []string{"One.", "Two two.", "Three."}},
		{ID: "strings", Title: "U", Text: "Alpha beta.", Sentences: []string{"not in text", "Alpha"}},
		{ID: "none", Title: "V", Text: "No sentences here"},
	}
	x := buildAndOpen(t, ps, BuildOptions{})
	for _, want := range ps {
		d := x.lookup(want.ID)
		if d < 0 {
			t.Fatalf("lookup(%q) = -1", want.ID)
		}
		got, err := x.passage(uint32(d))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("stored passage (-want +got):\n%s", diff)
		}
	}
}

// generator makes a corpus of English-like text: words drawn from a Zipf
// distribution whose most frequent ranks are real English function words.
type generator struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

var frequentWords = []string{"the", "of", "and", "in", "to", "a", "was", "is", "for", "on", "as", "by", "with", "he", "at", "from", "his", "an", "it", "that", "which", "also", "be", "are", "this", "first", "one", "she", "her", "new"}

func newGenerator(seed uint64, vocab int) *generator {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &generator{rng: rng, zipf: rand.NewZipf(rng, 1.07, 2, uint64(vocab-1))}
	g.vocab = append(g.vocab, frequentWords...)
	syll := []string{"ka", "lo", "mi", "ren", "dor", "sa", "vel", "tu", "nor", "bi", "quo", "lan", "ter", "ish", "om", "pra", "zu", "wen", "ga", "el"}
	seen := map[string]bool{}
	for _, w := range frequentWords {
		seen[w] = true
	}
	for len(g.vocab) < vocab {
		n := 1 + rng.IntN(4)
		w := ""
		for range n {
			w += syll[rng.IntN(len(syll))]
		}
		if rng.IntN(5) == 0 {
			w += []string{"s", "ing", "ed", "er"}[rng.IntN(4)]
		}
		if !seen[w] {
			seen[w] = true
			g.vocab = append(g.vocab, w)
		}
	}
	return g
}

func (g *generator) words(n int) string {
	b := make([]byte, 0, n*7)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, g.vocab[g.zipf.Uint64()]...)
	}
	return string(b)
}

func (g *generator) corpus(n int) []data.Passage {
	ps := make([]data.Passage, n)
	for i := range ps {
		title := g.words(2)
		text := g.words(30+g.rng.IntN(21)) + "."
		ps[i] = data.Passage{ID: fmt.Sprintf("doc%07d", i), Title: title, Text: text}
	}
	return ps
}

func (g *generator) query() string { return g.words(4 + g.rng.IntN(5)) }

func TestTokenTable(t *testing.T) {
	tt := newTokenTable()
	want := map[string]int32{}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200_000 {
		n := 1 + rng.IntN(40)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + rng.IntN(3))
		}
		k := string(b)
		if got, ok := tt.get(b); ok != (want[k] != 0) || (ok && got != want[k]) {
			t.Fatalf("get(%q) = %d, %v; want %d", k, got, ok, want[k])
		}
		if _, ok := want[k]; !ok {
			tt.put(b, int32(i+1))
			want[k] = int32(i + 1)
		}
	}
	for k, v := range want {
		if got, ok := tt.get([]byte(k)); !ok || got != v {
			t.Fatalf("get(%q) = %d, %v; want %d", k, got, ok, v)
		}
	}
}

// TestPruningChangesNothing compares pruned searches with exhaustive ones,
// hit for hit and score for score, over many k and exclusions, and checks
// that pruning did happen.
func TestPruningChangesNothing(t *testing.T) {
	g := newGenerator(11, 20_000)
	ps := g.corpus(20_000)
	x, full := buildPruned(t, ps)
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	pruned, unlike := 0, 0
	n := 400
	for i := range n {
		q := retrieve.Query{Text: g.query(), K: []int{1, 3, 6, 10, 50}[i%5]}
		for range rng.IntN(8) {
			q.Exclude = append(q.Exclude, ps[rng.IntN(len(ps))].ID)
		}
		want, err := full.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		// Exclude some of the true top hits too, as the loop does.
		if len(want) > 2 && i%2 == 0 {
			q.Exclude = append(q.Exclude, want[0].ID, want[2].ID)
			if want, err = full.Search(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		s := x.scratch.Get().(*searcher)
		s.search(x, q)
		if s.pruned {
			pruned++
		}
		if s.unlike > 0 {
			unlike++
		}
		x.scratch.Put(s)
		got, err := x.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("query %q k=%d exclude=%d: pruned search differs (-exhaustive +pruned):\n%s", q.Text, q.K, len(q.Exclude), diff)
		}
	}
	t.Logf("pruning skipped postings in %d of %d queries; %d chose essential terms that max-score would not", pruned, n, unlike)
	if pruned < n/10 {
		t.Errorf("pruning happened in only %d of %d queries: the test no longer exercises it", pruned, n)
	}
	if unlike == 0 {
		t.Errorf("no query chose essential terms other than max-score's: the test no longer exercises choose")
	}
}

// TestSeedTies checks the hits when a document of the second pass ties
// one that the first pass (the first term's documents alone) kept and
// that comes later in the corpus: the earlier one is the better, as in an
// exhaustive search. "alpha" and "beta" are in as many passages, so a
// passage of the one scores exactly as a passage of the other of the same
// length; "alpha" is the first term (equal bounds keep the query's
// order), so the first pass finds only the later passage.
func TestSeedTies(t *testing.T) {
	var ps []data.Passage
	add := func(text string) {
		ps = append(ps, data.Passage{ID: fmt.Sprintf("p%03d", len(ps)), Text: text})
	}
	for i := range 40 {
		add(fmt.Sprintf("filler words number %d here", i))
		switch i {
		case 5:
			add("beta filler words")
		case 30:
			add("alpha filler words")
		case 10:
			add("beta other words two")
		case 35:
			add("alpha other words two")
		}
	}
	x, full := buildPruned(t, ps)
	for _, k := range []int{1, 2, 3, 4} {
		q := retrieve.Query{Text: "alpha beta", K: k}
		sameHits(t, full, x, q, "pruned search with a tie against the first pass's hits")
		hits, err := x.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if k == 1 && (len(hits) != 1 || hits[0].ID != "p006") {
			t.Errorf("k=1: hits %v, want the earlier of the two tied passages, p006", hits)
		}
	}
}

// TestHotpotQARetrieval indexes the shared HotpotQA slice's context
// paragraphs and searches each question by its text alone.
func TestHotpotQARetrieval(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "shared", "data", "hotpotqa", "hotpot_train_distractor_100.json")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared HotpotQA slice not found at %s (it sits beside the repository): %v", path, err)
	}
	qs, ps, err := data.ReadWithContext(path, data.QuestionsHotpotQA)
	if err != nil {
		t.Fatal(err)
	}
	x := buildAndOpen(t, ps, BuildOptions{})
	all, any := 0, 0
	for _, q := range qs {
		hits, err := x.Search(context.Background(), retrieve.Query{Text: q.Text, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		titles := map[string]bool{}
		for _, h := range hits {
			titles[h.Title] = true
		}
		found := 0
		for _, g := range q.GoldTitles {
			if titles[g] {
				found++
			}
		}
		if found == len(q.GoldTitles) {
			all++
		}
		if found > 0 {
			any++
		}
	}
	t.Logf("HotpotQA slice (%d questions, %d passages): all gold titles in the top 10 for %d, at least one for %d", len(qs), len(ps), all, any)
	// Measured: 77 and 100. The bounds leave room for analyser changes, not
	// for a broken ranking.
	if all < 70 || any < 95 {
		t.Errorf("question-only top 10: all gold titles for %d, one for %d questions; want at least 70 and 95", all, any)
	}
}

// failingSource yields n passages, then a read error.
type failingSource struct {
	n   int
	err error
}

func (s *failingSource) Next() (data.Passage, error) {
	if s.n == 0 {
		return data.Passage{}, s.err
	}
	s.n--
	return data.Passage{ID: fmt.Sprint("p", s.n), Title: "t", Text: "some words here"}, nil
}

func TestBuildSourceError(t *testing.T) {
	boom := errors.New("disk read failed")
	for _, n := range []int{0, 3, 511, 512, 513, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			_, err := Build(context.Background(), dir, &failingSource{n: n, err: boom}, BuildOptions{})
			if !errors.Is(err, boom) {
				t.Fatalf("got %v, want %v", err, boom)
			}
			if want := fmt.Sprintf("read passage %d:", n+1); !contains(err.Error(), want) {
				t.Errorf("error %q does not name the passage (%q)", err, want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("a failed build left %s behind", dir)
			}
		})
	}
}

func TestLuceneLength(t *testing.T) {
	// Lucene stores 24 + the 4 leading bits of the rest: 41 = 24 + 0b10001
	// is read back as 24 + 0b10000 = 40; 100 = 24 + 0b1001100 as 24 + 72.
	for _, tt := range []struct{ in, want uint32 }{
		{0, 0}, {23, 23}, {24, 24}, {39, 39}, {40, 40}, {41, 40}, {43, 42}, {100, 96}, {1000, 984},
	} {
		if got := luceneLength(tt.in); got != tt.want {
			t.Errorf("luceneLength(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestLuceneNorms checks that LuceneNorms scores with the rounded length
// and the exact average length.
func TestLuceneNorms(t *testing.T) {
	long := strings.Repeat("filler ", 40) + "needle"                              // 41 terms, read as 40
	ps := []data.Passage{{ID: "long", Text: long}, {ID: "short", Text: "needle"}} // avgdl 21
	x := buildAndOpen(t, ps, BuildOptions{LuceneNorms: true})
	if got := x.Meta().Norms; got != "lucene" {
		t.Errorf("meta norms %q, want lucene", got)
	}
	hits, err := x.Search(context.Background(), retrieve.Query{Text: "needle", K: 2})
	if err != nil {
		t.Fatal(err)
	}
	idf := math.Log(1 + (2-2+0.5)/(2+0.5))
	score := func(dl float64) float64 { return idf * 1.9 / (1 + 0.9*(0.6+0.4*dl/21)) }
	want := []float64{score(1), score(40)}
	for i, h := range hits {
		if math.Abs(h.Score-want[i]) > 1e-5 {
			t.Errorf("hit %d (%s): score %v, want %v", i, h.ID, h.Score, want[i])
		}
	}
}

// buildFiles builds an index of ps in a temporary directory and returns
// its two files' bytes, for tests that damage or rewrite them.
func buildFiles(t *testing.T, ps []data.Passage) (index, docs []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "idx")
	if _, err := Build(context.Background(), dir, data.NewPassageSlice(ps), BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err != nil {
		t.Fatal(err)
	}
	docs, err = os.ReadFile(filepath.Join(dir, docsFile))
	if err != nil {
		t.Fatal(err)
	}
	return index, docs
}

// sameHits searches want and got with q and fails the test, saying what
// got is, when their hits differ.
func sameHits(t *testing.T, want, got *Index, q retrieve.Query, what string) {
	t.Helper()
	ctx := context.Background()
	w, err := want.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	g, err := got.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Fatalf("query %q k=%d exclude=%v: %s differs (-want +got):\n%s", q.Text, q.K, q.Exclude, what, diff)
	}
}

// buildPruned builds an index of ps and opens it twice: as searches use it,
// and scoring every posting (exhaustive), to check the one against the other.
func buildPruned(t *testing.T, ps []data.Passage) (x, full *Index) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "idx")
	x = buildIn(t, dir, ps, BuildOptions{})
	full, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { full.Close() })
	full.exhaustive = true
	return x, full
}

// TestBuildTemp builds an index in a temporary directory, searches it and
// checks that remove deletes the directory; a failed build leaves none.
func TestBuildTemp(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ps := []data.Passage{{ID: "a", Title: "Paris", Text: "Paris is the capital of France."}, {ID: "b", Title: "Rome", Text: "Rome is in Italy."}}
	x, remove, err := BuildTemp(context.Background(), data.NewPassageSlice(ps), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := x.Search(context.Background(), retrieve.Query{Text: "capital of France", K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != "a" {
		t.Errorf("search: %v, %v; want passage a", hits, err)
	}
	remove()
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Errorf("after remove, the temporary directory holds %v", left)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := BuildTemp(ctx, data.NewPassageSlice(ps), BuildOptions{}); err == nil {
		t.Error("a cancelled build: no error")
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Errorf("after a failed build, the temporary directory holds %v", left)
	}
}
