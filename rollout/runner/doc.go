// Package runner runs the S2G loop (package rollout) over a whole set of
// questions, concurrently, and writes every state to disk in a way that
// survives being killed: it is the library behind `distill rollout` and
// `distill merge`.
//
// It is a stage of the engine in internal/stage, whose documentation
// describes once the data flow, the checkpoints and what resuming
// guarantees; a unit of work is a question, and its rows are its states.
// What is the rollout's own is described here.
//
// # Data flow
//
//	questions ─> select ─> Workers x rollout.Run ─> writer ─┬> parts/part-NNNNN.parquet
//	                                                        └> run.json (at each checkpoint)
//	parts ─> trajectories.parquet (once every selected question is in a part)
//
// Run reads the questions twice: to select them (the first Limit unique
// ids, those of the Shard, by a hash of the id so that shards partition
// the ids whatever the machine; a repeated id is counted and skipped), and
// to hand those not written yet to at most Workers goroutines, each
// running rollout.Run on one question.
//
// A question whose loop failed with a *rollout.RoleError is written as the
// states it completed (real, and paid for) followed by one failure row
// (rollout.FailedState: final, with the reason, numbered after them) and
// counted; it is never silently missing. A resumed run runs it again
// (unless Options.KeepFailed), and its new record replaces the failed one
// in trajectories.parquet. Questions failing in a row stop the run
// (ErrFailing: a model server that cannot be reached, or that fails every
// request), and a run whose every question failed ends with ErrAllFailed.
// Any other error (cancellation, a broken retriever, refused credentials,
// an output that cannot be written) is systemic: it cancels the workers
// and ends the run (Options.Resume goes on).
//
// A resumed run must be configured as the one it continues (loop, roles,
// limit, shard: ErrMismatch); without Resume a non-empty output directory
// is an error (ErrOutExists). trajectories.parquet is assembled from the
// parts once they hold every selected question, checked on the way to
// appear exactly once with a final row (a failure row for a failed one,
// its last record only); rows are
// in the order questions were written, not the input order. run.json
// (Report) then gets its final content: configuration, versions, role
// names, models and template hashes found in the rows, counts, rounds
// histogram, token usage and cost, wall time. The parts are kept: delete
// parts/ only once a run is done and will not be resumed.
//
// Merge joins the outputs of finished runs (the shards of one run) into one
// output, refusing a question that appears in two of them.
//
// # Memory
//
// Memory does not grow with the states written: rows go to disk as each
// question finishes, and are streamed when trajectories.parquet is
// assembled. What grows with the number of questions is the set of their
// ids (to select, deduplicate and resume).
package runner
