package rollout

import (
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
)

// buildIndex builds a BM25 index over ps in a temporary directory and opens it.
func buildIndex(tb testing.TB, ps []data.Passage) *bm25.Index {
	return bm25test.Index(tb, ps, bm25.BuildOptions{})
}
