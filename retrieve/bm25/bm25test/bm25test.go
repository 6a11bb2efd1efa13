// Package bm25test builds in-process BM25 indexes over passages for the
// tests of the packages that search them.
//
// It is imported by tests only.
package bm25test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/bm25"
)

// Build builds an index of ps with opts in dir and opens it.
func Build(ctx context.Context, dir string, ps []data.Passage, opts bm25.BuildOptions) (*bm25.Index, error) {
	if _, err := bm25.Build(ctx, dir, data.NewPassageSlice(ps), opts); err != nil {
		return nil, err
	}
	return bm25.Open(dir)
}

// Index builds an index of ps with opts in a temporary directory and opens
// it; it is closed when the test ends.
func Index(tb testing.TB, ps []data.Passage, opts bm25.BuildOptions) *bm25.Index {
	tb.Helper()
	x, err := Build(context.Background(), filepath.Join(tb.TempDir(), "idx"), ps, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}
