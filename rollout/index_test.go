package rollout

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

// buildIndex builds a BM25 index over ps in a temporary directory and opens it.
func buildIndex(tb testing.TB, ps []data.Passage) *bm25.Index {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "idx")
	if _, err := bm25.Build(context.Background(), dir, &retrievetest.Source{Passages: ps}, bm25.BuildOptions{}); err != nil {
		tb.Fatal(err)
	}
	x, err := bm25.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}
