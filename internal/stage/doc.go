// Package stage is the engine of the resumable, checkpointed, sharded runs
// of the pipeline's long stages (rollout/runner for rollouts, label for
// labelling): it owns their output directory, their parts, their report
// and their merge, while each stage supplies what is its own as values and
// functions of a Job (or a MergeJob).
//
// # Data flow
//
// A stage's run turns units of work (a question to run the loop on, a
// state to label) into rows (data.State, data.Label), every unit's rows
// written together. Run:
//
//	Job.Units ─> Select ─> Plan.Left ─> Workers x Job.Work ─> writer ─┬> parts/part-NNNNN.parquet
//	 (input)    (count,   (units not     (or Job.Produce)    (one     └> report (each checkpoint)
//	            select)    done yet)                         goroutine)
//	parts ─> Job.Count ─> output file (once every selected unit is in a part)
//
// Step by step:
//
//  1. The output directory is claimed (data/outdir: one writer at a
//     time, ErrBusy otherwise). It must be empty or absent (ErrOutExists),
//     unless the run is resumed: then it must hold the stage's report
//     (ErrNotRun), configured as this run is (Layout.Same; ErrMismatch).
//     Leftovers of interrupted writes are removed (data.PrepareParts).
//  2. Select reads the keys of the units the committed parts hold, and
//     whether each failed (Layout.Failure), and ranges over Job.Units
//     once, to count the units selected, those done and the failed ones
//     to do again; a unit found twice is an error unless its earlier
//     records are failures, and parts holding units the run does not
//     select mean another input (ErrMismatch).
//  3. Plan.Left ranges over Job.Units again and yields the units not done.
//     At most Workers goroutines (errgroup, with a semaphore taken before
//     the budget is checked) run Job.Work on one each, and send its rows
//     to the one goroutine that writes; a stage with its own way of doing
//     units (label's batch API) supplies Job.Produce instead.
//  4. The writer appends each unit's rows to the current part
//     (data.PartWriter) and commits it after CheckpointUnits units or
//     CheckpointInterval, and when the work ends; at every commit it
//     rewrites the report (status running).
//  5. When every unit is written, the parts are read in order, and the
//     last record of each selected unit is copied into the output file
//     (Job.Count on each), which is then renamed into place; the report
//     gets its final content (status done), and the parts are removed
//     (data.DropParts): a finished output stores its rows once. When
//     every unit of the output failed, Run says so (ErrAllFailed).
//
// A systemic error (one that Work or Produce returned, a write that
// failed, cancellation, Job.StopAfterFailures units failing in a row:
// ErrFailing) cancels the workers and ends the run: the report says
// interrupted, with the error. With a budget, no unit starts once
// it is spent; those in flight are finished and written, and the report
// says budget-reached (ErrBudget).
//
// # Checkpoints and resuming
//
// A part holds whole units only, and a part that exists is complete: it is
// written under a temporary name and renamed into place once synced. A
// kill at any moment loses at most the units of the part being written,
// and leaves at most temporary files, which the next invocation removes.
// A resumed run skips the units its parts hold and goes on with new parts,
// so that no unit is lost or written twice. A unit whose work failed (its
// rows say so, Layout.Failure) is done again, unless Job.KeepFailed: its
// new record goes to a new part, and replaces the failure in the output
// (Header.Retried counts them). The output file is written only when the
// parts hold every selected unit, so it is never partial. Once it is
// written the parts are removed; resuming a finished run makes its output
// file part 0 (data.AdoptOutput: it holds each unit's last record, whole
// units in order, as a part does), goes on from there and assembles the
// output again. A kill between the output's rename and the parts' removal
// leaves both: the parts are then the checkpoint, and the output is
// written again from them. The report is written when the run starts
// (stamped, so that it carries the usage of the earlier invocations), at
// every checkpoint and at the end, so that a resumed run adds its usage
// to theirs and counts its resumes.
//
// # Reports
//
// A report (run.json, label.json) is one JSON object: the Header, which
// the engine keeps (status, error, version, times, resumes, usage, cost,
// and for merges the inputs and missing shards), beside the stage's own
// configuration and counts. A stage's report type embeds Header.
//
// # Merging
//
// Merge joins the outputs of finished runs, the shards of one run, into a
// new output directory: same configuration but for the shard, distinct
// shards of one split, no unit in two inputs. Rows are streamed.
//
// # Memory
//
// Memory does not grow with the rows: they go to disk as each unit is
// written, and are streamed when the output is assembled or merged (the
// output file's writer keeps the pages of its row group on disk too,
// data.SpillPages). What grows with the number of units is the set of
// their keys, to resume and to check, and the metadata of the output
// file's row groups, which its writer keeps until it closes it.
package stage
