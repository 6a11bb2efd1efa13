// Package pipeline runs distill's stages from one file, as `distill run`
// does: import -> index -> rollout -> label -> filter -> train -> bench,
// each stage into its own directory under one root.
//
// A pipeline file (Spec) names each stage's settings by the flags of the
// command that runs it (docs/commands.md lists them), so a setting means in
// the file exactly what it means on the command line. Plan turns the file
// into Stages: command lines whose inputs and outputs the runner chooses
// (--out, --in, --questions, --index, --judge-from). Run executes them
// through an Exec, which in the binary is distill's own command line run in
// the same process; the runner itself knows no stage's Options.
//
// Caching, for each stage:
//
//	ROOT/DIR/pipeline.json   written when the stage has finished: its key
//	                         (a hash of its command line, the size and
//	                         modification time of the files it names outside
//	                         the root, and the keys and finishing times of the
//	                         stages it reads from)
//	ROOT/.pipeline/NAME.json written when the stage starts, removed when it
//	                         finishes: an interrupted stage with the same key
//	                         resumes (rollout, label and bench take --resume;
//	                         the others start again)
//
// A stage whose record holds its current key is skipped. A stage that runs
// again finishes at a new time, which changes the key of every stage after
// it, so they run again too.
package pipeline
