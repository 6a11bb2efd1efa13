package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

// Merge joins the outputs of finished runs, typically the shards of one
// run, into out: out/trajectories.parquet holds the rows of every input, in
// the order of inputs, and out/run.json their combined report (Inputs lists
// them; MissingShards names the shards of the split that are not among
// them). The inputs must be finished (status done) and configured alike
// (same loop, limit and roles: ErrMismatch), and no question may appear in
// two of them (ErrMismatch too); then nothing is written. out must be empty
// or absent (ErrOutExists). Rows are streamed: memory grows with the number
// of question ids only.
func Merge(ctx context.Context, out string, inputs []string) (Report, error) {
	if len(inputs) == 0 {
		return Report{}, fmt.Errorf("merge: no inputs: %w", ErrOptions)
	}
	if out == "" {
		return Report{}, fmt.Errorf("merge: no output directory: %w", ErrOptions)
	}
	start := time.Now()
	reports := make([]Report, len(inputs))
	shards := map[string]string{}
	for i, dir := range inputs {
		if same, err := sameDir(dir, out); err != nil || same {
			if err == nil {
				err = fmt.Errorf("merge: input %s is the output directory: %w", dir, ErrOptions)
			}
			return Report{}, err
		}
		rep, err := ReadReport(dir)
		if err != nil {
			return Report{}, fmt.Errorf("merge: %w", err)
		}
		if rep.Status != StatusDone {
			return Report{}, fmt.Errorf("merge: %s has not finished (status %s): resume it first", dir, rep.Status)
		}
		if i > 0 {
			if err := sameRows(reports[0], rep, false); err != nil {
				return Report{}, fmt.Errorf("merge: %s and %s: %w", inputs[0], dir, err)
			}
			if shardCount(rep) != shardCount(reports[0]) {
				return Report{}, fmt.Errorf("merge: %s (shard %q) and %s (shard %q) split the questions differently: %w",
					inputs[0], reports[0].Config.Shard, dir, rep.Config.Shard, ErrMismatch)
			}
		}
		if s := rep.Config.Shard; s != "" {
			if other, dup := shards[s]; dup {
				return Report{}, fmt.Errorf("merge: %s and %s are both shard %s: %w", other, dir, s, ErrMismatch)
			}
			shards[s] = dir
		}
		reports[i] = rep
	}

	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Report{}, fmt.Errorf("merge: %w", err)
	}
	if len(entries) > 0 {
		return Report{}, fmt.Errorf("merge: %s: %w", out, ErrOutExists)
	}
	created := errors.Is(err, os.ErrNotExist)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Report{}, fmt.Errorf("merge: %w", err)
	}
	rep, err := merge(ctx, out, inputs, reports)
	if err != nil {
		if created {
			os.Remove(out) // only if still empty
		}
		return Report{}, fmt.Errorf("merge: %w", err)
	}
	rep.StartedAt, rep.FinishedAt = start.UTC(), time.Now().UTC()
	if err := writeReport(out, rep); err != nil {
		return Report{}, fmt.Errorf("merge: %w", err)
	}
	return rep, nil
}

// merge streams the inputs' rows into out/trajectories.parquet and builds
// the merged report.
func merge(ctx context.Context, out string, inputs []string, reports []Report) (Report, error) {
	w, err := data.CreateParquet[data.State](filepath.Join(out, TrajectoriesFile), data.KindTrajectories)
	if err != nil {
		return Report{}, err
	}
	defer w.Abort()
	first := reports[0]
	rep := Report{
		Status:  StatusDone,
		Version: first.Version,
		Config:  first.Config,
		Roles:   Roles{Judge: configured(first.Roles.Judge), Extractor: configured(first.Roles.Extractor), Reader: configured(first.Roles.Reader)},
	}
	rep.Config.Shard = ""
	t := newTally()
	for i, dir := range inputs {
		in := reports[i]
		before := t.c
		src := t.source(dir)
		err := data.EachRow(ctx, filepath.Join(dir, TrajectoriesFile), data.KindTrajectories, func(rows []data.State) error {
			for j := range rows {
				if err := t.add(src, &rows[j]); err != nil {
					return err
				}
			}
			return w.Write(rows)
		})
		if twice := (*twiceError)(nil); errors.As(err, &twice) {
			// Inputs that overlap are the wrong inputs, as a shard given
			// twice is.
			err = fmt.Errorf("%w: %w", err, ErrMismatch)
		}
		if err != nil {
			return Report{}, fmt.Errorf("%s: %w", dir, err)
		}
		if in.Version != rep.Version {
			rep.Version = "mixed"
		}
		c := &rep.Counts
		c.Selected += in.Counts.Selected
		c.InputQuestions = max(c.InputQuestions, in.Counts.InputQuestions)
		c.DuplicateIDs = max(c.DuplicateIDs, in.Counts.DuplicateIDs)
		rep.Usage = llm.AddStats(rep.Usage, in.Usage)
		rep.CostUSD += in.CostUSD
		rep.WallSeconds = max(rep.WallSeconds, in.WallSeconds)
		rep.Resumes += in.Resumes
		if err := t.endSource(); err != nil {
			return Report{}, err
		}
		rep.Inputs = append(rep.Inputs, Input{
			Dir: dir, Shard: in.Config.Shard,
			Questions: t.c.Done + t.c.Failed - before.Done - before.Failed, Rows: t.c.Rows - before.Rows,
			WallSeconds: in.WallSeconds,
		})
	}
	oc, err := t.done()
	if err != nil {
		return Report{}, err
	}
	if err := w.Close(); err != nil {
		return Report{}, err
	}
	rep.Counts.Output = oc
	rep.Roles.Judge.Seen, rep.Roles.Extractor.Seen, rep.Roles.Reader.Seen = seenOf(t.judge), seenOf(t.extractor), seenOf(t.reader)
	rep.MissingShards = missingShards(reports)
	return rep, nil
}

// missingShards names the shards of the split that none of the reports is.
func missingShards(reports []Report) []string {
	have := map[data.Shard]bool{}
	n := 0
	for _, r := range reports {
		s, err := data.ParseShard(r.Config.Shard)
		if err != nil || s.N == 0 {
			return nil // not a split, or not one we can read
		}
		have[s] = true
		n = s.N
	}
	var missing []string
	for i := range n {
		if !have[data.Shard{I: i, N: n}] {
			missing = append(missing, data.Shard{I: i, N: n}.String())
		}
	}
	return missing
}

// shardCount returns the n of a run's shard i/n, 0 for a run not sharded.
func shardCount(r Report) int {
	s, _ := data.ParseShard(r.Config.Shard)
	return s.N
}

func sameDir(a, b string) (bool, error) {
	aa, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	bb, err := filepath.Abs(b)
	if err != nil {
		return false, err
	}
	return filepath.Clean(aa) == filepath.Clean(bb), nil
}
