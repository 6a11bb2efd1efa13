package stage

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

// Layout describes a stage's output directory and the rows it holds, for
// Run and Merge alike. K is the key of a unit of work (a question id, a
// state), R the row type, P the stage's report (a pointer to a struct
// that embeds Header).
type Layout[K comparable, R any, P Report] struct {
	// File is the output file and ReportFile the report, both in the
	// output directory; Kind is the kind of the output file and its parts.
	File, ReportFile string
	Kind             data.Kind
	// Unit names the units in messages, in the plural ("questions").
	Unit string
	// Key returns the key of the unit a row belongs to. The rows of a unit
	// are contiguous and share their key; no two units have the same.
	Key func(*R) K
	// Describe names a unit in messages ("question q1").
	Describe func(K) string
	// Failure, when set, says why a unit's work failed, from its rows
	// ("" when it did not). A resumed run does a failed unit again
	// (unless Job.KeepFailed), a run stops once Job.StopAfterFailures
	// units in a row have failed (ErrFailing), and a run whose every unit
	// failed ends with ErrAllFailed once its output is written.
	Failure func(rows []R) string
	// Count, when set, is called with the rows of every unit of the
	// output, in order, as the output is assembled or merged: the stage
	// tallies them there for its report, and an error it returns (a unit
	// it finds malformed) ends the run or the merge.
	Count func(rows []R) error
	// Read reads the stage's report in a directory (ReadReport, with an
	// error satisfying os.ErrNotExist when there is none).
	Read func(dir string) (P, error)
	// Same says how two reports differ in what decides the rows they
	// hold, shards included when shard is set, as an error that wraps
	// ErrMismatch; nil when they do not.
	Same func(a, b P, shard bool) error
}

func (l Layout[K, R, P]) failure(rows []R) string {
	if l.Failure == nil {
		return ""
	}
	return l.Failure(rows)
}

// Job is one invocation of a stage, for Run: the layout, the work and the
// stage's hooks. U is what a unit's work starts from (a question, a
// state to label).
type Job[K comparable, U, R any, P Report] struct {
	Layout[K, R, P]
	// Name names the stage in the log ("rollout starting").
	Name string
	// Report is this invocation's report. Run fills in its Header and
	// calls Stamp before each time it writes it.
	Report P
	// Out is the output directory; Resume continues the run in it, doing
	// again the units whose last record is a failure unless KeepFailed.
	Out        string
	Resume     bool
	KeepFailed bool
	// StopAfterFailures is how many units in a row may fail before the
	// run stops (ErrFailing): a server that cannot be reached, or that
	// fails every request, ends the run early instead of failing every
	// unit one by one. Zero means DefaultStopAfterFailures or twice
	// Workers, whichever is larger; negative never stops.
	StopAfterFailures int
	// Input names the input in messages (a path, "questions").
	Input string
	// Units yields the units the run selects, in input order: the stage's
	// rules (a limit, a shard, repeated ids) apply there. Run ranges over
	// it twice, first with count set, to select (the stage may count what
	// it skipped for its report, and check the input as a whole), then
	// with count unset, to do the units not done yet; it may stop early.
	Units func(ctx context.Context, count bool) iter.Seq2[U, error]
	// UnitKey returns the key of the rows a unit's work produces.
	UnitKey func(U) K
	// Work does one unit and returns its rows, at least one. It is called
	// from Workers goroutines at once. An error is systemic: it ends the
	// run (a failure of the unit alone is recorded in its rows instead).
	Work func(ctx context.Context, u U) ([]R, error)
	// Produce, when set, replaces Work and the workers: it does the units
	// of todo its own way, hands the rows of each, whole, to emit (from one
	// goroutine at a time), and returns when it is done. Returning an
	// error that wraps ErrBudget is a budget stop.
	Produce func(ctx context.Context, todo iter.Seq2[U, error], emit func(rows []R) error) error
	// Workers bounds the units worked on at once; CheckpointUnits and
	// CheckpointInterval the units and the time between two checkpoints.
	// All three must be positive.
	Workers            int
	CheckpointUnits    int
	CheckpointInterval time.Duration
	// Budget, when positive, stops the run once Spent (what this
	// invocation spent, USD, safe to call from any goroutine) reaches it:
	// no unit starts after that, those in flight are finished and written,
	// and Run returns ErrBudget.
	Budget float64
	Spent  func() float64
	// Usage, when set, returns this invocation's model usage so far; Run
	// adds it to the earlier invocations'. It must be safe to call from
	// any goroutine.
	Usage func() []llm.Stats
	// Wrote, when set, is called with the rows of each unit once they are
	// written to the current part, from the one goroutine that writes.
	Wrote func(rows []R)
	// Stamp, when set, fills the stage's counts into Report, before each
	// write of it. Finish, when set, is called once the output is complete
	// (Count has seen every row), before the last Stamp and write. Neither
	// is called concurrently with Wrote or with itself.
	Stamp  func(Progress)
	Finish func()
	// Progress, when set, is called when the run starts, after each unit
	// is written and after each checkpoint, never concurrently; it must
	// return quickly.
	Progress func(Progress)
	// Logger receives the log; nil discards it. LogAttrs are added to the
	// line that says the run starts.
	Logger   *slog.Logger
	LogAttrs []any
}

// DefaultStopAfterFailures is the least number of failed units in a row
// that stops a run (Job.StopAfterFailures).
const DefaultStopAfterFailures = 20

// Progress is where a run stands.
type Progress struct {
	// Selected counts the units of the run, AlreadyDone those of them that
	// earlier invocations wrote, Total those this invocation does, and
	// Retry those of Total that earlier invocations recorded as failed.
	Selected, AlreadyDone, Total, Retry int
	// Done counts the units this invocation wrote so far, Rows their rows;
	// Failed those of Done that failed, Retried those that were a retry.
	Done, Failed, Retried int
	Rows                  int64
	// Parts counts the parts committed, by earlier invocations too; a unit
	// is safe from a kill once its part is committed.
	Parts int
}

// check rejects a job that Run cannot run.
func (j *Job[K, U, R, P]) check() error {
	bad := func(what string) error { return fmt.Errorf("%s: %w", what, ErrOptions) }
	switch {
	case j.Out == "":
		return bad("no output directory")
	case j.Workers < 1, j.CheckpointUnits < 1, j.CheckpointInterval <= 0:
		return bad("workers and checkpoint bounds must be positive")
	case j.Budget > 0 && j.Spent == nil:
		return bad("a budget needs a cost meter")
	case j.Work == nil && j.Produce == nil:
		return bad("no work")
	case j.Units == nil || j.UnitKey == nil || j.Key == nil || j.Describe == nil || j.Read == nil || j.Same == nil:
		return bad("the stage is not fully described")
	}
	return nil
}
