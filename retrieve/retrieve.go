// Package retrieve holds the contract that every retrieval backend of distill
// meets (the in-process BM25 index today; dense and Elasticsearch backends
// later) and the types they share. Backends live in sub-packages; the shared
// conformance test that each of them runs is in retrievetest.
//
// The contract, for any Retriever r:
//
//   - r.Search(ctx, q) returns at most q.K hits, ordered by descending score;
//     hits with equal scores come in a fixed order that the backend
//     documents, so that results are reproducible.
//   - No hit has a doc id listed in q.Exclude, and exclusion happens inside
//     the search: when more than q.K documents match, excluding some of them
//     still yields q.K hits (a caller never has to ask again for more).
//   - A query that matches nothing (including an empty one, or one made only
//     of stop words) returns no hits and no error.
//   - q.K < 1 is an error (ErrBadK).
//   - Search is safe for concurrent use by many goroutines and does not
//     modify its arguments.
//   - A cancelled context makes Search return ctx.Err() (possibly wrapped)
//     unless the search had already finished.
//   - Every hit carries the whole passage (id, title, text, given sentences)
//     so that callers never go back to the corpus, unless q.TitlesOnly asks
//     for ids and titles alone (text and sentences are then empty); the
//     passage is a copy the caller may keep.
//   - Errors other than ErrBadK and context errors mean the backend itself is
//     broken (a damaged index file, an unreachable server): callers treat
//     them as systemic.
package retrieve

import (
	"context"
	"errors"

	"github.com/distill-rag/distill/data"
)

// ErrBadK is returned for a query that asks for fewer than one hit.
var ErrBadK = errors.New("retrieve: k must be at least 1")

// Query is one retrieval request.
type Query struct {
	// Text is the query as a user or the loop wrote it; the backend analyses it.
	Text string
	// K is the number of hits wanted.
	K int
	// Exclude lists doc ids that must not be returned (documents seen in
	// earlier rounds). Ids unknown to the backend are ignored.
	Exclude []string
	// TitlesOnly asks for hits with doc id, title and score only, for
	// callers that rank and never read the text (batch runs); it saves the
	// backend fetching passages.
	TitlesOnly bool
}

// Hit is one retrieved passage with its score.
type Hit struct {
	data.Passage
	Score float64
}

// Retriever is the interface every backend implements; consumers that need
// less declare their own.
type Retriever interface {
	Search(ctx context.Context, q Query) ([]Hit, error)
}
