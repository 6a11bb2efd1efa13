// Package retrievetest is the conformance test that every retrieval backend
// runs, in the spirit of testing/fstest: it builds a backend over a small
// fixed corpus and checks each clause of the contract in package retrieve.
// FailAfter feeds the builds and loads of the tests a corpus that fails.
package retrievetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
)

// Corpus returns the passages the conformance test indexes. Every passage
// has a word of its own (its "marker") and shares common words with others,
// so that the test can ask both for one passage and for many.
func Corpus() []data.Passage {
	colors := []string{"amber", "cobalt", "crimson", "ivory", "jade", "ochre", "scarlet", "teal"}
	places := []string{"Varnholt", "Quessa", "Lindmoor", "Ostravel", "Pellagrin"}
	var out []data.Passage
	for i := range 40 {
		title := fmt.Sprintf("Orvel %s %d", places[i%len(places)], i)
		s1 := fmt.Sprintf("The %s lighthouse of %s was built by engineer Marko%d.", colors[i%len(colors)], places[i%len(places)], i)
		s2 := fmt.Sprintf("Its keeper kept a journal about storms and the harbour, volume %d.", i)
		s3 := fmt.Sprintf("The marker word of this passage is zq%dxv.", i)
		sentences := []string{s1, s2, s3}
		text := s1 + " " + s2 + " " + s3
		out = append(out, data.Passage{ID: data.DocID(title, text), Title: title, Text: text, Sentences: sentences})
	}
	return out
}

// Open builds the backend under test over corpus. It may use t.TempDir and
// t.Cleanup; it fails the test itself when it cannot build the backend.
type Open func(t *testing.T, corpus []data.Passage) retrieve.Retriever

// Run checks the contract of package retrieve against the backend that open
// builds.
func Run(t *testing.T, open Open) {
	corpus := Corpus()
	s := &suite{r: open(t, corpus), corpus: corpus, byID: make(map[string]data.Passage, len(corpus)), ctx: context.Background()}
	for _, p := range corpus {
		s.byID[p.ID] = p
	}
	s.queries(t)
	s.ranking(t)
	s.concurrency(t)
}

// suite is the backend under test with its corpus.
type suite struct {
	r      retrieve.Retriever
	corpus []data.Passage
	byID   map[string]data.Passage
	ctx    context.Context
}

// search searches and checks the clauses every result must meet.
func (s *suite) search(t *testing.T, q retrieve.Query) []retrieve.Hit {
	t.Helper()
	hits := Search(s.ctx, t, s.r, q)
	checkHits(t, q, hits, s.byID)
	return hits
}

// queries checks the answers to single queries.
func (s *suite) queries(t *testing.T) {
	r, corpus, ctx, search := s.r, s.corpus, s.ctx, s.search
	t.Run("BadK", func(t *testing.T) {
		for _, k := range []int{0, -1} {
			_, err := r.Search(ctx, retrieve.Query{Text: "lighthouse", K: k})
			if !errors.Is(err, retrieve.ErrBadK) {
				t.Errorf("K=%d: got error %v, want ErrBadK", k, err)
			}
		}
	})

	t.Run("NoMatch", func(t *testing.T) {
		for _, text := range []string{"", "   ", "the of and", "qqqqunknownword", "!!! ???"} {
			hits := search(t, retrieve.Query{Text: text, K: 5})
			if len(hits) != 0 {
				t.Errorf("query %q: got %d hits, want 0", text, len(hits))
			}
		}
	})

	t.Run("KnownItem", func(t *testing.T) {
		for i, p := range corpus {
			hits := search(t, retrieve.Query{Text: fmt.Sprintf("marker zq%dxv", i), K: 3})
			if len(hits) == 0 || hits[0].ID != p.ID {
				t.Errorf("query for passage %d: got %v, want %s first", i, HitIDs(hits), p.ID)
			}
		}
	})

	t.Run("TitleIndexed", func(t *testing.T) {
		p := corpus[7]
		hits := search(t, retrieve.Query{Text: "Orvel 7", K: 1})
		if len(hits) != 1 || hits[0].ID != p.ID {
			t.Errorf("title query: got %v, want [%s]", HitIDs(hits), p.ID)
		}
	})

	t.Run("KHonoured", func(t *testing.T) {
		for _, k := range []int{1, 5, 40, 100} {
			hits := search(t, retrieve.Query{Text: "lighthouse harbour storms", K: k})
			want := min(k, len(corpus))
			if len(hits) != want {
				t.Errorf("K=%d: got %d hits, want %d", k, len(hits), want)
			}
		}
	})

	t.Run("Exclude", func(t *testing.T) {
		q := "crimson lighthouse Quessa"
		full := search(t, retrieve.Query{Text: q, K: 8})
		exclude := []string{full[0].ID, full[2].ID, "no-such-id"}
		excludeCopy := append([]string(nil), exclude...)
		got := search(t, retrieve.Query{Text: q, K: 6, Exclude: exclude})
		var want []string
		for _, h := range full {
			if h.ID != full[0].ID && h.ID != full[2].ID {
				want = append(want, h.ID)
			}
		}
		if diff := cmp.Diff(want[:6], HitIDs(got)); diff != "" {
			t.Errorf("excluded search differs from the full ranking without the excluded ids (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(excludeCopy, exclude); diff != "" {
			t.Errorf("Search modified q.Exclude (-before +after):\n%s", diff)
		}
	})

}

// ranking checks the ranking: titles only, determinism, copies.
func (s *suite) ranking(t *testing.T) {
	r, corpus, byID, ctx, search := s.r, s.corpus, s.byID, s.ctx, s.search
	t.Run("TitlesOnly", func(t *testing.T) {
		q := retrieve.Query{Text: "journal keeper lighthouse Varnholt", K: 7, Exclude: []string{corpus[0].ID}}
		full := search(t, q)
		q.TitlesOnly = true
		got, err := r.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(full) {
			t.Fatalf("got %d hits, want %d as without TitlesOnly", len(got), len(full))
		}
		for i, h := range got {
			f := full[i]
			if h.ID != f.ID || h.Title != f.Title || h.Score != f.Score {
				t.Errorf("hit %d: got (%s, %q, %v), want (%s, %q, %v) as without TitlesOnly", i, h.ID, h.Title, h.Score, f.ID, f.Title, f.Score)
			}
			if h.Text != "" && h.Text != f.Text {
				t.Errorf("hit %d: text %q is neither empty nor the passage's", i, h.Text)
			}
		}
	})

	t.Run("Deterministic", func(t *testing.T) {
		q := retrieve.Query{Text: "journal keeper volume harbour", K: 10}
		a := search(t, q)
		b := search(t, q)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("same query, different results (-first +second):\n%s", diff)
		}
	})

	t.Run("HitsAreCopies", func(t *testing.T) {
		q := retrieve.Query{Text: "marker zq3xv", K: 1}
		a := search(t, q)
		a[0].Text = "changed"
		if len(a[0].Sentences) > 0 {
			a[0].Sentences[0] = "changed"
		}
		b := search(t, q)
		if diff := cmp.Diff(byID[b[0].ID], b[0].Passage); diff != "" {
			t.Errorf("changing a returned hit changed the backend (-want +got):\n%s", diff)
		}
	})

}

// concurrency checks concurrent and cancelled searches.
func (s *suite) concurrency(t *testing.T) {
	r, corpus, ctx, search := s.r, s.corpus, s.ctx, s.search
	t.Run("Concurrent", func(t *testing.T) {
		queries := make([]retrieve.Query, 20)
		want := make([][]retrieve.Hit, len(queries))
		for i := range queries {
			queries[i] = retrieve.Query{Text: fmt.Sprintf("zq%dxv lighthouse %s", i, corpus[i].Title), K: 5, Exclude: []string{corpus[(i+1)%len(corpus)].ID}}
			want[i] = search(t, queries[i])
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for rep := range 10 {
					i := (g + rep) % len(queries)
					got, err := r.Search(ctx, queries[i])
					if err != nil {
						errs <- err
						return
					}
					if !cmp.Equal(want[i], got) {
						errs <- fmt.Errorf("query %d: concurrent result differs from sequential one", i)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := r.Search(cctx, retrieve.Query{Text: "lighthouse", K: 3})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got error %v, want context.Canceled", err)
		}
	})
}

// checkHits checks the clauses every result must meet.
func checkHits(t *testing.T, q retrieve.Query, hits []retrieve.Hit, byID map[string]data.Passage) {
	t.Helper()
	if len(hits) > q.K {
		t.Errorf("query %q: got %d hits, want at most %d", q.Text, len(hits), q.K)
	}
	seen := make(map[string]bool)
	for i, h := range hits {
		if seen[h.ID] {
			t.Errorf("query %q: doc %s returned twice", q.Text, h.ID)
		}
		seen[h.ID] = true
		for _, x := range q.Exclude {
			if h.ID == x {
				t.Errorf("query %q: excluded doc %s returned", q.Text, x)
			}
		}
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
			t.Errorf("query %q: hit %d has score %v", q.Text, i, h.Score)
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("query %q: hit %d scores %v, above hit %d (%v)", q.Text, i, h.Score, i-1, hits[i-1].Score)
		}
		want, ok := byID[h.ID]
		if !ok {
			t.Errorf("query %q: hit %d has unknown doc id %q", q.Text, i, h.ID)
			continue
		}
		if diff := cmp.Diff(want, h.Passage); diff != "" {
			t.Errorf("query %q: hit %d is not the whole stored passage (-want +got):\n%s", q.Text, i, diff)
		}
	}
}

// FailingSource is a passage source that yields its passages, then an
// error: a corpus whose reading fails, for the builds and loads of the
// tests.
type FailingSource struct {
	ps  *data.PassageSlice
	err error
}

// FailAfter returns a source that yields ps, then err.
func FailAfter(ps []data.Passage, err error) *FailingSource {
	return &FailingSource{data.NewPassageSlice(ps), err}
}

// Next returns the next passage, or the error once there is none left.
func (f *FailingSource) Next() (data.Passage, error) {
	p, err := f.ps.Next()
	if err == io.EOF {
		return p, f.err
	}
	return p, err
}

// Search returns r's hits for q, and fails the test when r fails.
func Search(ctx context.Context, t testing.TB, r retrieve.Retriever, q retrieve.Query) []retrieve.Hit {
	t.Helper()
	hits, err := r.Search(ctx, q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	return hits
}

// HitIDs returns the document ids of hits, in rank order.
func HitIDs(hits []retrieve.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}
