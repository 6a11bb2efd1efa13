// Package analysis turns text into index terms the way Lucene's
// EnglishAnalyzer does (Analyzer, Normalize). It is shared by the BM25
// index (retrieve/bm25), which indexes and searches those terms, and the
// built-in lexical roles (internal/lexical), which match words the way the
// index does. It imports no other distill package.
package analysis
