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
//	questions ─> variants (rollout/runner) ─> trajectories ─> metrics ─┬> report.json, report.md
//	                                                                  ├> plots (SVG)
//	                                                                  └> traces.html
//
// The metrics are the method's: SQuAD exact match and F1 (EM, F1), correct
// retrieval and title recall against the gold titles, the judge's
// calibration against retrieval truth (false positives, complete evidence
// judged insufficient), compression of the evidence against the raw
// retrieved documents, latency per stage, rounds, token usage and cost.
// Compare sets two reports side by side.
package eval
