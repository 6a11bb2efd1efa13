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
