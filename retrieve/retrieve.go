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

// Source yields the passages of a corpus in order, for building an index
// (bm25.Build, dense.Build, elastic.Load); Next returns io.EOF after the
// last. A *data.CorpusReader is one.
type Source interface {
	Next() (data.Passage, error)
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

// PassageFormat says how a passage becomes the text an embedding model
// reads (after any prefix such as E5's "passage: ").
type PassageFormat string

const (
	// TitleText is the title, a space and the text (the text alone when
	// the title is empty): distill's default, as BM25 indexes passages.
	TitleText PassageFormat = ""
	// TitleContext is "title: T, context: X", as the authors' code embeds
	// passages for E5.
	TitleContext PassageFormat = "title-context"
)

// ParsePassageFormat reads a format's name: "title-text" (or "") or
// "title-context".
func ParsePassageFormat(name string) (PassageFormat, error) {
	switch name {
	case "", "title-text":
		return TitleText, nil
	case string(TitleContext):
		return TitleContext, nil
	}
	return "", errors.New(`passage format "` + name + `": want title-text or title-context`)
}

// PassageText is the text of p that an embedding model reads, in format f.
func PassageText(p data.Passage, f PassageFormat) string {
	switch {
	case f == TitleContext:
		return "title: " + p.Title + ", context: " + p.Text
	case p.Title == "":
		return p.Text
	}
	return p.Title + " " + p.Text
}
