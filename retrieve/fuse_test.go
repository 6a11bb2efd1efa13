package retrieve_test

import (
	"context"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

func TestFusionConformance(t *testing.T) {
	retrievetest.Run(t, func(t *testing.T, corpus []data.Passage) retrieve.Retriever {
		var rs []retrieve.Retriever
		for _, o := range []bm25.BuildOptions{{}, {K1: 1.5, B: 0.9}} {
			rs = append(rs, bm25test.Index(t, corpus, o))
		}
		return retrieve.Fusion{Retrievers: rs}
	})
}

// fixed returns the same ranking whatever the query, less the excluded ids.
type fixed []string

func (f fixed) Search(_ context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	var out []retrieve.Hit
	for i, id := range f {
		skip := false
		for _, x := range q.Exclude {
			skip = skip || x == id
		}
		if !skip && len(out) < q.K {
			out = append(out, retrieve.Hit{Passage: data.Passage{ID: id, Title: id}, Score: float64(100 - i)})
		}
	}
	return out, nil
}

func TestFusionRanks(t *testing.T) {
	f := retrieve.Fusion{Retrievers: []retrieve.Retriever{fixed{"a", "b", "c", "d"}, fixed{"c", "b", "e"}}}
	hits := retrievetest.Search(context.Background(), t, f, retrieve.Query{Text: "x", K: 3, Exclude: []string{"d"}})
	// b: 1/62 + 1/62, c: 1/63 + 1/61, a: 1/61, e: 1/63.
	want := []string{"c", "b", "a"}
	for i, h := range hits {
		if h.ID != want[i] {
			t.Fatalf("hit %d is %s, want %v", i, h.ID, want)
		}
	}
	if _, err := f.Search(context.Background(), retrieve.Query{Text: "x"}); err != retrieve.ErrBadK {
		t.Errorf("k 0: %v", err)
	}
}
