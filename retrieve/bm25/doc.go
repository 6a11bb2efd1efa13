// Package bm25 is the in-process BM25 retriever of distill: an index of a
// corpus on local disk, built once and searched by many goroutines, with
// no server to run.
//
// Build reads a retrieve.Source and analyses title + " " + text
// of every passage as Lucene's EnglishAnalyzer does (see internal/analysis), on
// all cores, then writes an index directory: meta.json (what was indexed
// and how, with Format), index.bin (terms, postings, document lengths, ids
// and titles, laid out to be used in place) and docs.bin (the passages,
// for hits that carry their text). The directory appears only once
// complete. Postings are gathered in segments of bounded size, spilled to
// temporary files and merged at the end, so that a build's memory grows
// with the number of passages and distinct terms, not with the postings
// (see docs/performance.md for the figures at Wikipedia's size).
//
// Open maps the files into memory and checks them, so that a damaged index
// gives an error, never a crash. Search scores textbook BM25 with the k1
// and b stored in the index (the method's 0.9 and 0.4 by default),
// document at a time over the query's posting lists, skipping what cannot
// reach the top k ("max-score", with the bounds of blocks of 128 postings
// that index.bin keeps for every long list: "block-max MaxScore"), with
// the same results as scoring every posting; it holds no array the size
// of the corpus, so its cost follows the postings it reads. *Index is a
// retrieve.Retriever; Kind is its entry in a retrieve.Registry.
package bm25
