package bm25

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
)

// TestStemmer builds an index with each stemmer: meta.json records the
// stemmer, and queries are stemmed as the passages were, so a word the two
// stem apart ("generously": Porter2 "generous", Porter "gener") is found
// with either.
func TestStemmer(t *testing.T) {
	corpus := []data.Passage{
		{ID: "a", Title: "Generosity", Text: "They gave generously."},
		{ID: "b", Title: "Other", Text: "Nothing to see here."},
	}
	for _, st := range []analysis.Stemmer{"", analysis.Porter2, analysis.Porter} {
		dir := filepath.Join(t.TempDir(), "idx")
		if _, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), BuildOptions{Stemmer: st}); err != nil {
			t.Fatal(err)
		}
		x, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		wantMeta := analysis.Stemmer("")
		if st == analysis.Porter {
			wantMeta = analysis.Porter
		}
		if got := x.Meta().Stemmer; got != wantMeta {
			t.Errorf("stemmer %q: meta.json says %q, want %q", st, got, wantMeta)
		}
		hits, err := x.Search(context.Background(), retrieve.Query{Text: "generously", K: 2})
		if err != nil || len(hits) != 1 || hits[0].ID != "a" {
			t.Errorf("stemmer %q: search generously: %v, %v; want passage a alone", st, hits, err)
		}
		x.Close()
	}
	if _, err := Build(context.Background(), filepath.Join(t.TempDir(), "idx"), data.NewPassageSlice(corpus), BuildOptions{Stemmer: "krovetz"}); err == nil {
		t.Error("an unknown stemmer: no error")
	}
}
