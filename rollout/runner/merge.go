package runner

import (
	"context"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
)

// Merge joins the outputs of finished runs, typically the shards of one
// run, into out: out/trajectories.parquet holds the rows of every input, in
// the order of inputs, and out/run.json their combined report (Inputs lists
// them; MissingShards names the shards of the split that are not among
// them). The inputs must be finished (status done), configured alike (same
// loop, limit and roles: ErrMismatch), distinct shards of one split
// (ErrMismatch), and no question may appear in two of them (ErrMismatch
// too); then nothing is written. out must be empty or absent
// (ErrOutExists). Rows are streamed: memory grows with the number of
// question ids only. See stage.Merge.
func Merge(ctx context.Context, out string, inputs []string) (Report, error) {
	t := newTally()
	rep, err := stage.Merge(ctx, out, inputs, stage.MergeJob[string, data.State, *Report]{
		Layout:  layout(t.question),
		Combine: func(reps []*Report) *Report { return combine(reps, t) },
	})
	if err != nil {
		return Report{}, err
	}
	return *rep, nil
}

// combine returns the merged report of runs whose rows t counted.
func combine(reps []*Report, t *tally) *Report {
	first := reps[0]
	rep := &Report{
		Config: first.Config,
		Roles:  Roles{Judge: configured(first.Roles.Judge), Extractor: configured(first.Roles.Extractor), Reader: configured(first.Roles.Reader)},
	}
	rep.Config.Shard = ""
	c := &rep.Counts
	for _, in := range reps {
		c.Selected += in.Counts.Selected
		c.InputQuestions = max(c.InputQuestions, in.Counts.InputQuestions)
		c.DuplicateIDs = max(c.DuplicateIDs, in.Counts.DuplicateIDs)
	}
	c.Output = t.c
	t.seen(&rep.Roles)
	return rep
}

// Sharding returns the run's shard and the units it selected
// (stage.Sharded).
func (r *Report) Sharding() (string, int) { return r.Config.Shard, r.Counts.Selected }
