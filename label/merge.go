package label

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

// Merge joins the outputs of finished labelling runs, the shards of one
// run (Options.Shard), into out: out/labels.parquet holds the labels of
// every input, in the order of inputs, and out/label.json their combined
// report. The inputs must be done and configured alike but for their
// shard; a shard given twice or a state found in two inputs is an error,
// and then nothing is written. out must be empty or absent (ErrOutExists).
// Rows are streamed.
func Merge(ctx context.Context, out string, inputs []string) (Report, error) {
	if len(inputs) == 0 || out == "" {
		return Report{}, fmt.Errorf("merge: no inputs or no output directory: %w", ErrOptions)
	}
	start := time.Now()
	var merged Report
	var first string // the shard of the first input
	shards := map[string]string{}
	for i, dir := range inputs {
		rep, err := ReadReport(dir)
		if err != nil {
			return Report{}, fmt.Errorf("merge: %w", err)
		}
		if rep.Status != StatusDone {
			return Report{}, fmt.Errorf("merge: %s has not finished (status %s): resume it first", dir, rep.Status)
		}
		if s := rep.Config.Shard; s != "" {
			if other, dup := shards[s]; dup {
				return Report{}, fmt.Errorf("merge: %s and %s are both shard %s: %w", other, dir, s, ErrMismatch)
			}
			shards[s] = dir
		}
		if i > 0 && shardCount(rep.Config.Shard) != shardCount(first) {
			return Report{}, fmt.Errorf("merge: %s (shard %q) and %s (shard %q) split the questions differently: %w",
				inputs[0], first, dir, rep.Config.Shard, ErrMismatch)
		}
		if i == 0 {
			first = rep.Config.Shard
			merged = Report{Status: StatusDone, Version: rep.Version, Config: rep.Config}
			merged.Config.Shard, merged.Config.Workers = "", 0
			continue
		}
		a, b := merged.Config, rep.Config
		a.Shard, b.Shard = "", ""
		if err := sameLabels(a, b); err != nil {
			return Report{}, fmt.Errorf("merge: %s and %s: %w", inputs[0], dir, err)
		}
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return Report{}, fmt.Errorf("merge: %s: %w", out, ErrOutExists)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Report{}, err
	}
	w, err := data.CreateParquet[data.Label](filepath.Join(out, LabelsFile), data.KindLabels)
	if err != nil {
		return Report{}, err
	}
	defer w.Abort()
	t := newTally()
	for _, dir := range inputs {
		rep, _ := ReadReport(dir)
		err := data.EachRow(ctx, filepath.Join(dir, LabelsFile), data.KindLabels, func(rows []data.Label) error {
			for i := range rows {
				if err := t.add(&rows[i]); err != nil {
					return fmt.Errorf("%s: %w: %w", dir, err, ErrMismatch)
				}
			}
			return w.Write(rows)
		})
		if err != nil {
			return Report{}, fmt.Errorf("merge: %w", err)
		}
		c := &merged.Counts
		c.InputRows, c.FailedQuestionRows = rep.Counts.InputRows, rep.Counts.FailedQuestionRows
		c.Selected += rep.Counts.Selected
		merged.Usage = llm.AddStats(merged.Usage, rep.Usage)
		merged.CostUSD += rep.CostUSD
		merged.Batches = append(merged.Batches, rep.Batches...)
	}
	if t.out.States != merged.Counts.Selected {
		return Report{}, fmt.Errorf("merge: the inputs hold %d states, their reports %d", t.out.States, merged.Counts.Selected)
	}
	if err := w.Close(); err != nil {
		return Report{}, err
	}
	merged.Counts.Output = t.out
	merged.StartedAt, merged.FinishedAt = start.UTC(), time.Now().UTC()
	merged.WallSeconds = time.Since(start).Seconds()
	if n := len(shards); n > 0 {
		sh, err := data.ParseShard(firstKey(shards))
		if err == nil && n < sh.N {
			merged.Error = fmt.Sprintf("%d of %d shards merged", n, sh.N)
		}
	}
	return merged, writeReport(out, merged)
}

// shardCount returns the n of a shard i/n, 0 for a run not sharded.
func shardCount(shard string) int {
	s, _ := data.ParseShard(shard)
	return s.N
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// IsRun reports whether dir holds a labelling run's output (label.json).
func IsRun(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ReportFile))
	return !errors.Is(err, os.ErrNotExist)
}
