// Package rollout runs the loop of S2G-RAG on a question and records every
// state it passes through, the raw material of the judge's training data.
//
// Data flows through one question as METHOD.md describes it. Run starts
// with an empty evidence context (data.Context) and, at each round t:
//
//  1. asks the Judge about (question, C_t) and records a data.State row:
//     the rendered context exactly as the judge saw it, the structured
//     evidence with its provenance, the queries and documents so far, the
//     judge's raw output, verdict and parse error. A verdict that could not
//     be parsed counts as insufficient with no gaps; a sufficient verdict on
//     the empty context of round 0 is overridden (one retrieval always
//     happens);
//  2. stops when the judge calls the evidence sufficient (policy EarlyStop)
//     or the retrieval budget is spent, and asks the Reader for the answer,
//     recorded on that last state;
//  3. otherwise builds the query (BuildQuery: the question and the first
//     three gap items), asks the Retriever for the top-k documents not seen
//     before (by doc id, or by title), splits them into sentences numbered
//     globally from 1 (Numbered), lets the Extractor point at up to K of
//     them, drops invalid, repeated and surplus ids (counted), and appends
//     the chosen sentences to the context, grouped by title
//     (data.Context.Append). What this round did is recorded on the next
//     state, the one whose context it produced.
//
// The roles are interfaces declared here, where they are consumed. The
// judges themselves, model-backed or built in, and the judge's prompt live
// in package judge, whose contract every Judge meets. This package holds
// the extractors and readers: model-backed ones (NewLLMExtractor,
// NewLLMReader) that talk to any OpenAI-compatible server through an
// llm.Chatter, with prompts written in prompts.go; built-in deterministic
// ones that need no model, LexicalExtractor and LexicalReader (baselines
// that match words the way BM25 does, over the analysis of
// internal/lexical); and the compressors and extractors of the ablations
// (LeadSummary, FocusedSummary, LLMSummarizer, AllSentences,
// SimilarityExtractor). Every result carries the data.Call the rows
// record: raw output, parse error, model name, template hash and token
// usage.
//
// Run handles one question and is safe to call from many goroutines at
// once with the same roles. Its errors tell the caller what to do: a
// *RoleError loses the question only (record FailedState and go on); any
// other error (a cancelled context, a broken retriever, bad options) is
// systemic.
package rollout
