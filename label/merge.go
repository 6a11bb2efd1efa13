package label

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
)

// Merge joins the outputs of finished labelling runs, the shards of one
// run (Options.Shard), into out: out/labels.parquet holds the labels of
// every input, in the order of inputs, and out/label.json their combined
// report (Inputs lists them; MissingShards names the shards of the split
// that are not among them). The inputs must be done, configured alike but
// for their shard, and distinct shards of one split; a state found in two
// inputs is an error (ErrMismatch, as those are), and then nothing is
// written. out must be empty or absent (ErrOutExists). Rows are streamed.
// See stage.Merge.
func Merge(ctx context.Context, out string, inputs []string) (Report, error) {
	t := &tally{}
	rep, err := stage.Merge(ctx, out, inputs, stage.MergeJob[data.StateKey, data.Label, *Report]{
		Layout:  layout(t.state),
		Combine: func(reps []*Report) *Report { return combine(reps, t) },
	})
	if err != nil {
		return Report{}, err
	}
	return *rep, nil
}

// combine returns the merged report of runs whose labels t counted.
func combine(reps []*Report, t *tally) *Report {
	m := &Report{Config: reps[0].Config}
	m.Config.Shard, m.Config.Workers = "", 0
	c := &m.Counts
	for _, rep := range reps {
		// Every shard read the whole input.
		c.InputRows, c.FailedQuestionRows = rep.Counts.InputRows, rep.Counts.FailedQuestionRows
		c.Selected += rep.Counts.Selected
		m.Batches = append(m.Batches, rep.Batches...)
	}
	c.Output = t.out
	return m
}

// IsRun reports whether dir holds a labelling run's output (label.json).
func IsRun(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ReportFile))
	return !errors.Is(err, os.ErrNotExist)
}

// Sharding returns the labelling run's shard and the units it selected
// (stage.Sharded).
func (r *Report) Sharding() (string, int) { return r.Config.Shard, r.Counts.Selected }
