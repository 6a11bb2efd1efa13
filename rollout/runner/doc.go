// Package runner runs the S2G loop (package rollout) over a whole set of
// questions, concurrently, and writes every state to disk in a way that
// survives being killed: it is the library behind `distill rollout` and
// `distill merge`.
//
// # Data flow
//
// Run reads the questions twice. The first pass selects them: the first
// Limit unique ids, those of the Shard (by a hash of the id, so that shards
// partition the ids whatever the machine), less those already written by an
// earlier invocation when resuming. The second pass hands the selected
// questions to at most Workers goroutines (errgroup with SetLimit), each
// running rollout.Run on one question and sending the question's rows, all
// together, to the one goroutine that writes the output:
//
//	questions ─> producer ─> workers (rollout.Run) ─> writer ─┬> parts/part-NNNNN.parquet
//	                                                           ├> trajectories.parquet
//	                                                           └> run.json (at each checkpoint)
//
// A question whose loop failed with a *rollout.RoleError is written as one
// failure row (rollout.FailedState: final, with the reason) and counted; it
// is never silently missing. Any other error (cancellation, a broken
// retriever, refused credentials, an output that cannot be written) is
// systemic: it cancels the workers and ends the run.
//
// # Checkpoints and resuming
//
// The writer appends rows to the current part and commits it (synced,
// renamed into place) after CheckpointQuestions questions or
// CheckpointInterval, and when the run ends or is interrupted. A part holds
// whole questions only, and a part that exists is complete: a kill at any
// moment loses at most the uncommitted part, and leaves at most a temporary
// file, which the next invocation removes. With Resume, Run reads the
// question ids of the existing parts, skips those questions and goes on
// with new parts; it refuses to resume a run configured differently (loop,
// roles, limit, shard). Without Resume, a non-empty output directory is an
// error (ErrOutExists). Failed questions are not run again on resume: their
// failure rows are their record.
//
// Each question's rows also go, as they are written to their part, to
// trajectories.parquet under a temporary name (a resumed run first copies
// the rows of the earlier parts into it, in order). The file is committed
// (renamed into place) only when every selected question is in it, checked
// on the way to appear exactly once with a final row; then run.json
// (Report) gets its final content: configuration, versions, role names,
// models and template hashes found in the rows, counts, rounds histogram,
// token usage and cost, wall time. run.json is also rewritten at every
// checkpoint (status running), so that a resumed run can add the usage of
// the invocations before it. Rows are in the order questions finished, not
// the input order. The parts are kept: they are what resuming reads, and
// resuming a finished run rebuilds trajectories.parquet from them. Delete
// parts/ only once a run is done and will not be resumed.
//
// Merge joins the outputs of finished runs (the shards of one run) into one
// output, refusing a question that appears in two of them.
//
// # Memory
//
// Memory does not grow with the states written: rows go to disk as each
// question finishes. What grows with the number of questions is the set of
// their ids (to select, deduplicate and resume), and the writer of
// trajectories.parquet holds up to one row group (data's bound, 50,000
// rows, compressed) before it writes it out.
package runner
