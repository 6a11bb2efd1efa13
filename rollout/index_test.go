package rollout

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/bm25"
)

// passages is a bm25.Source over a slice.
type passages struct {
	ps []data.Passage
	i  int
}

func (s *passages) Next() (data.Passage, error) {
	if s.i == len(s.ps) {
		return data.Passage{}, io.EOF
	}
	s.i++
	return s.ps[s.i-1], nil
}

// buildIndex builds a BM25 index over ps in a temporary directory and opens it.
func buildIndex(tb testing.TB, ps []data.Passage) *bm25.Index {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "idx")
	if _, err := bm25.Build(context.Background(), dir, &passages{ps: ps}, bm25.BuildOptions{}); err != nil {
		tb.Fatal(err)
	}
	x, err := bm25.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}
