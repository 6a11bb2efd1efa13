// Package label turns the states a rollout recorded into supervision for
// the judge: a teacher labels each state (question and evidence context,
// exactly as the judge saw them) with a verdict, {"sufficient", "gap_items"},
// possibly several times, and the samples are aggregated. It is the library
// behind `distill label`.
//
// # Data flow
//
// A labelling run is a stage of the engine in internal/stage, whose
// documentation describes once the data flow, the checkpoints and what
// resuming guarantees; a unit of work is a state, and its row is its
// label. What is labelling's own is described here.
//
//	trajectories.parquet ─> select the states (rows of failed questions
//	                        are counted, not labelled; the first Limit)
//	                     ─> Workers at a time: Teacher.Label x Samples,
//	                        Aggregate ─> writer ─┬> parts/part-NNNNN.parquet
//	                                             └> label.json (each checkpoint)
//	parts ─> labels.parquet (when every state is there, once)
//
// With Options.Batch the middle step is the Batch API instead (see
// BatchOptions): requests are written and uploaded, batches polled and
// their results mapped back by custom id, failed or expired requests sent
// again; each state goes to the writer once all its samples are answered.
//
// # Teachers
//
// Teacher is the contract; LLMTeacher asks a chat model with TeacherPrompt
// (its own instructions, and the judge's user message for the state byte
// for byte) for the judge's JSON schema, one call per sample, sample k > 0
// with its own seed; RetrievalTruth is the built-in baseline that labels
// from the gold titles and answers. Each label also carries the state's
// retrieval truth (data.JudgeTruth), which distill filter's rules use.
//
// # Aggregation
//
// Aggregate takes the majority verdict of the usable samples (a tie is
// insufficient), the agreement (the share of all samples that gave it), the
// gap items that more than half of the insufficient samples gave (matched
// on data.GapKey: normalised category, target and slot), and records every
// sample that contradicted itself (sufficient with gap items, insufficient
// with none, a "sufficient" that is not a boolean).
//
// # Resuming, budgets, preflight, merging
//
// Parts hold whole states and are committed by rename, so a run killed at
// any moment and resumed (Options.Resume) loses and repeats nothing; a
// resumed run must be configured as the first (ErrMismatch otherwise).
// Options.BudgetUSD stops the run cleanly once spent (ErrBudget); the
// states in flight then are finished and kept. Preflight counts the states,
// requests, exact prompt tokens and cost of a run without sending or
// writing anything (the engine's selection, stage.Select). Merge joins the
// outputs of the shards of one run (Options.Shard).
package label
