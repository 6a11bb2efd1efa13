package stage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/llm"
)

// PartsDir is the directory of the parts in a stage's output directory.
const PartsDir = "parts"

// Statuses of a run, as its report records them.
const (
	// StatusRunning: the run started and has not ended, or was killed.
	StatusRunning = "running"
	// StatusInterrupted: the run ended early (cancelled, or a systemic
	// error, in Header.Error); resuming it goes on.
	StatusInterrupted = "interrupted"
	// StatusBudget: the run stopped because its budget was spent; resuming
	// it with a larger budget goes on.
	StatusBudget = "budget-reached"
	// StatusDone: the output file holds every selected unit.
	StatusDone = "done"
)

// Errors that callers branch on. The stages re-export these very values.
var (
	// ErrOptions is the cause of errors about bad options.
	ErrOptions = errors.New("bad run options")
	// ErrOutExists is returned when the output directory is not empty and
	// the run is not resumed, or a merge's output directory is not empty.
	ErrOutExists = outdir.ErrNotEmpty
	// ErrBusy is returned when another writer, in this process or
	// another, holds the output directory (an *outdir.BusyError, naming
	// it).
	ErrBusy = outdir.ErrBusy
	// ErrNotRun is returned when a resumed run finds a directory that holds
	// no report of the stage.
	ErrNotRun = errors.New("not the output directory of a run")
	// ErrMismatch is the cause of errors about runs that cannot be
	// continued or merged together: configured differently, shards of
	// different splits, inputs that overlap.
	ErrMismatch = errors.New("runs configured differently")
	// ErrBudget is returned when a run stopped because its budget was
	// spent; what was done is checkpointed, and resuming with a larger
	// budget goes on.
	ErrBudget = errors.New("budget reached")
	// ErrFailing is returned when a run stopped because too many units
	// in a row failed (Job.StopAfterFailures): the cause is likely to fail
	// every unit (a server that cannot be reached, or that fails every
	// request). What was done is checkpointed; resuming once the cause is
	// fixed goes on, and does the failed units again.
	ErrFailing = errors.New("stopped: too many failures in a row")
	// ErrAllFailed is returned by a run that wrote its output, complete,
	// but every unit in it failed.
	ErrAllFailed = errors.New("all failed")
)

// OptionsErrorf returns an error about a stage's bad options: the message,
// wrapping ErrOptions.
func OptionsErrorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrOptions)
}

// Header is the part of a report that every stage shares: what the engine
// records about an invocation, or about a merge. A stage's report embeds
// it, with the stage's configuration and counts beside it, so that the
// file is one flat JSON object (run.json, label.json).
type Header struct {
	Status string `json:"status"`
	// Error is the systemic error that interrupted the run.
	Error   string `json:"error,omitempty"`
	Version string `json:"version,omitempty"`
	// StartedAt and FinishedAt bound this invocation (the last one of a
	// resumed run); WallSeconds is its time so far. For a merge, they bound
	// the merge, and WallSeconds is the longest of the inputs' (the time of
	// shards run side by side).
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	WallSeconds float64   `json:"wall_seconds"`
	// Resumes counts the earlier invocations this one continued (of every
	// input, for a merge).
	Resumes int `json:"resumes"`
	// Retried counts the units done again, over every invocation, because
	// their record of an earlier one was a failure.
	Retried int `json:"retried,omitempty"`
	// BudgetReached is set when this invocation stopped on its budget.
	BudgetReached bool `json:"budget_reached,omitempty"`
	// Usage is the model usage of every invocation of the run (as far as
	// each recorded it at its last checkpoint), as the model client
	// accounts it; CostUSD is its total cost.
	Usage   []llm.Stats `json:"usage,omitempty"`
	CostUSD float64     `json:"cost_usd"`
	// Inputs lists the runs a merged output was made of, and MissingShards
	// the shards of their split that are not among them (merges only).
	Inputs        []Input  `json:"inputs,omitempty"`
	MissingShards []string `json:"missing_shards,omitempty"`
}

func (h *Header) header() *Header { return h }

// Report is a stage's report: a pointer to a struct that embeds Header.
type Report interface {
	header() *Header
}

// Input is one run that a merged output was made of.
type Input struct {
	Dir   string `json:"dir"`
	Shard string `json:"shard,omitempty"`
	// Units and Rows count what its output held.
	Units       int     `json:"units"`
	Rows        int64   `json:"rows"`
	WallSeconds float64 `json:"wall_seconds"`
}

// ReadReport reads the report file name in dir into a T.
func ReadReport[T any](dir, name string) (T, error) {
	var r T
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err // *fs.PathError names the file
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", path, err)
	}
	return r, nil
}

// WriteReport writes rep to the report file name in dir, atomically.
func WriteReport(dir, name string, rep any) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return data.WriteFileAtomic(filepath.Join(dir, name), append(b, '\n'))
}
