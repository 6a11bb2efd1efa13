// Package retrieve holds the contract that every retrieval backend of distill
// meets and the types they share. Backends live in sub-packages (bm25 and
// dense indexes on disk, elastic for an Elasticsearch or OpenSearch
// cluster); the shared conformance test that each of them runs is in
// retrievetest. Fusion ranks the hits of several by reciprocal rank
// fusion.
//
// A Registry opens an index from a spec string: each backend package
// makes its Kind (how to recognise a spec for it, how to open it), and a
// program builds the registry of the kinds it wants where it starts;
// specs joined by commas open as one Fusion.
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
