// Package eval measures a judge inside the full S2G loop: it is the library
// behind `distill bench`.
//
// Run runs each variant of the paper's ablations (full, no-sft, no-judge,
// no-extractor, single-round and the compression variants; see VariantNames)
// as a resumable rollout of its own (package rollout/runner) under
// DIR/variants/NAME, all sharing one retriever and one model stack per role.
// The scores are computed from the rows those rollouts wrote, so that a
// benchmark can be resumed, sharded (MergeShards) and re-scored without running a
// model again:
//
//	questions ─> variants (rollout/runner) ─> trajectories ─> metrics ─┬> report.json, report.md, scores.jsonl
//	                     (streamed question by question)               ├> plots (SVG)
//	                                                                  └> traces.html, traces/ (TraceWriter)
//
// The metrics are the method's: SQuAD exact match and F1 (EM, F1), correct
// retrieval and title recall against the gold titles, the judge's
// calibration against retrieval truth (false positives, complete evidence
// judged insufficient), compression of the evidence against the raw
// retrieved documents, latency per stage, rounds, token usage and cost.
// Every variant is compared with full question by question (ComparePaired:
// paired differences with bootstrap intervals, McNemar's exact test), and a
// benchmark of a trained judge checks its questions against the judge's
// training questions (JudgeTraining). Compare sets two benchmarks side by
// side; Score scores any system's predictions with the same metric
// (ScoreAnswer, with the method's reference Scoring by default).
package eval
