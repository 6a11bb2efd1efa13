package retrieve

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"golang.org/x/sync/errgroup"
)

// DefaultRRFK is the constant of reciprocal rank fusion (Cormack et al.):
// a hit at rank r (from 1) scores 1/(k + r).
const DefaultRRFK = 60

// Fusion is hybrid retrieval: it asks every retriever (BM25 and dense, say)
// for Depth hits, excluding the same ids, and ranks the union by
// reciprocal rank fusion, the sum over retrievers of 1/(K + rank). Ties go
// to the hit first found by the earlier retriever. It meets the contract
// of this package when its retrievers do, with one limit: a document that
// none of them ranks within Depth cannot be returned (Depth defaults to
// four times the hits asked for, at least 50).
type Fusion struct {
	Retrievers []Retriever
	K          int
	Depth      int
}

var _ Retriever = Fusion{}

// Search implements Retriever.
func (f Fusion) Search(ctx context.Context, q Query) ([]Hit, error) {
	if q.K < 1 {
		return nil, ErrBadK
	}
	if len(f.Retrievers) == 0 {
		return nil, errors.New("retrieve: fusion of no retrievers")
	}
	k := cmp.Or(f.K, DefaultRRFK)
	depth := f.Depth
	if depth <= 0 {
		depth = max(4*q.K, 50)
	}
	depth = max(depth, q.K)
	results := make([][]Hit, len(f.Retrievers))
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range f.Retrievers {
		g.Go(func() error {
			sub := q
			sub.K = depth
			hits, err := r.Search(gctx, sub)
			results[i] = hits
			return err
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	type fused struct {
		hit   Hit
		score float64
		order int
	}
	byID := make(map[string]*fused)
	var all []*fused
	for _, hits := range results {
		for rank, h := range hits {
			e, ok := byID[h.ID]
			if !ok {
				e = &fused{hit: h, order: len(all)}
				byID[h.ID] = e
				all = append(all, e)
			}
			e.score += 1 / float64(k+rank+1)
		}
	}
	slices.SortStableFunc(all, func(a, b *fused) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.order, b.order))
	})
	out := make([]Hit, 0, min(q.K, len(all)))
	for _, e := range all[:min(q.K, len(all))] {
		h := e.hit
		h.Score = e.score
		out = append(out, h)
	}
	return out, nil
}
