// Package lexical is the text analysis behind distill's built-in roles: the
// lexical judge and the features of the trained linear judge (package
// judge), the lexical extractor and reader and the extractive baselines
// (package rollout).
//
// Text is read as words carrying the index terms of the BM25 analyzer
// (internal/analysis), so that the built-in roles match words the way
// retrieval does. A question becomes its names, its answer type and its
// content words; evidence sentences are placed on the question's chain of
// documents (the blocks about its names, then those whose titles they
// name). The decisions made from that analysis are exported as entry
// points over plain values, one per role: Verdict, Features (with
// FeatureNames and FeaturesVersion), Answer, Rank and Similar. The roles
// themselves (their model names, template hashes and raw outputs) stay
// with the packages that define them.
//
// Every entry point is deterministic and safe for concurrent use: each
// takes a lexer, whose caches of words and stems make the repeated
// analysis of a question's rounds cheap, from a pool for the length of the
// call.
package lexical
