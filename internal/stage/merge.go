package stage

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/llm"
)

// Sharded is the report of a stage whose runs can be merged.
type Sharded interface {
	Report
	// Sharding returns the run's shard ("i/n"; "" for one not sharded)
	// and the units it selected, which its output holds.
	Sharding() (shard string, selected int)
}

// MergeJob is what Merge needs of a stage beyond its layout.
type MergeJob[K comparable, R any, P Sharded] struct {
	Layout[K, R, P]
	// Combine returns the report of the merge, once Count has seen every
	// row: the configuration of the first input less its shard, the
	// stage's counts added up, the output's counts. Merge fills in its
	// header.
	Combine func(reps []P) P
}

// Merge joins the outputs of finished runs of a stage, typically its
// shards, into out: the output file holds the rows of every input, in the
// order of inputs, and the report their combined one (Header.Inputs lists
// them, Header.MissingShards names the shards of their split that are not
// among them). The inputs must be done, configured alike but for their
// shard, distinct shards of one split (ErrMismatch), and hold no unit in
// common (ErrMismatch); out must be empty or absent (ErrOutExists) and
// none of the inputs. Otherwise nothing is written. Rows are streamed:
// memory grows with the number of units only.
func Merge[K comparable, R any, P Sharded](ctx context.Context, out string, inputs []string, j MergeJob[K, R, P]) (P, error) {
	var zero P
	if len(inputs) == 0 {
		return zero, fmt.Errorf("merge: no inputs: %w", ErrOptions)
	}
	if out == "" {
		return zero, fmt.Errorf("merge: no output directory: %w", ErrOptions)
	}
	start := time.Now()
	reps := make([]P, len(inputs))
	shards := map[string]string{}
	for i, dir := range inputs {
		if same, err := sameDir(dir, out); err != nil || same {
			if err == nil {
				err = fmt.Errorf("merge: input %s is the output directory: %w", dir, ErrOptions)
			}
			return zero, err
		}
		rep, err := j.Read(dir)
		if err != nil {
			return zero, fmt.Errorf("merge: %w", err)
		}
		if st := rep.header().Status; st != StatusDone {
			return zero, fmt.Errorf("merge: %s has not finished (status %s): resume it first", dir, st)
		}
		shard, _ := rep.Sharding()
		if i > 0 {
			if err := j.Same(reps[0], rep, false); err != nil {
				return zero, fmt.Errorf("merge: %s and %s: %w", inputs[0], dir, err)
			}
			if first, _ := reps[0].Sharding(); shardCount(shard) != shardCount(first) {
				return zero, fmt.Errorf("merge: %s (shard %q) and %s (shard %q) split the questions differently: %w",
					inputs[0], first, dir, shard, ErrMismatch)
			}
		}
		if shard != "" {
			if other, dup := shards[shard]; dup {
				return zero, fmt.Errorf("merge: %s and %s are both shard %s: %w", other, dir, shard, ErrMismatch)
			}
			shards[shard] = dir
		}
		reps[i] = rep
	}

	od, err := outdir.Claim(ctx, out, outdir.New)
	if err != nil {
		return zero, fmt.Errorf("merge: %w", err)
	}
	rep, err := mergeInto(ctx, out, inputs, reps, j, start)
	if err != nil {
		od.Abandon()
		return zero, fmt.Errorf("merge: %w", err)
	}
	return rep, od.Close()
}

// mergeInto writes the merge's output file and its report in out.
func mergeInto[K comparable, R any, P Sharded](ctx context.Context, out string, inputs []string, reps []P, j MergeJob[K, R, P], start time.Time) (P, error) {
	var zero P
	h, err := merge(ctx, out, inputs, reps, j)
	if err != nil {
		return zero, err
	}
	rep := j.Combine(reps)
	h.StartedAt, h.FinishedAt = start.UTC(), time.Now().UTC()
	*rep.header() = h
	if err := WriteReport(out, j.ReportFile, rep); err != nil {
		return zero, err
	}
	return rep, nil
}

// merge streams the inputs' rows into the output file and returns the
// header of the merged report.
func merge[K comparable, R any, P Sharded](ctx context.Context, out string, inputs []string, reps []P, j MergeJob[K, R, P]) (Header, error) {
	w, err := createOutput[R](filepath.Join(out, j.File), j.Kind)
	if err != nil {
		return Header{}, err
	}
	defer w.Abort() // unless closed
	h := Header{Status: StatusDone, Version: reps[0].header().Version}
	seen := newSeen(j.Describe)
	selected := 0
	for i, dir := range inputs {
		in := reps[i].header()
		src := seen.source(dir)
		units, rows := 0, int64(0)
		err := eachUnit(ctx, filepath.Join(dir, j.File), j.Kind, j.Key, func(k K, unit []R) error {
			if err := seen.add(k, src); err != nil {
				// Inputs that overlap are the wrong inputs, as a shard
				// given twice is.
				return fmt.Errorf("%w: %w", err, ErrMismatch)
			}
			if j.Count != nil {
				if err := j.Count(unit); err != nil {
					return fmt.Errorf("%s: %w", dir, err)
				}
			}
			units++
			rows += int64(len(unit))
			return w.Write(unit)
		})
		if err != nil {
			return Header{}, err
		}
		if in.Version != h.Version {
			h.Version = "mixed"
		}
		h.Usage = llm.AddStats(h.Usage, in.Usage)
		h.CostUSD += in.CostUSD
		h.WallSeconds = max(h.WallSeconds, in.WallSeconds)
		h.Resumes += in.Resumes
		shard, n := reps[i].Sharding()
		h.Inputs = append(h.Inputs, Input{Dir: dir, Shard: shard, Units: units, Rows: rows, WallSeconds: in.WallSeconds})
		selected += n
	}
	if n := seen.where.len(); n != selected {
		return Header{}, fmt.Errorf("the inputs hold %d %s, their reports %d", n, j.Unit, selected)
	}
	if err := w.Close(); err != nil {
		return Header{}, err
	}
	shards := make([]string, len(reps))
	for i, rep := range reps {
		shards[i], _ = rep.Sharding()
	}
	h.MissingShards = missingShards(shards)
	return h, nil
}

// missingShards names the shards of the split that none of shards is.
func missingShards(shards []string) []string {
	have := map[data.Shard]bool{}
	n := 0
	for _, sh := range shards {
		s, err := data.ParseShard(sh)
		if err != nil || s.N == 0 {
			return nil // not a split, or not one we can read
		}
		have[s] = true
		n = s.N
	}
	var missing []string
	for i := range n {
		if s := (data.Shard{I: i, N: n}); !have[s] {
			missing = append(missing, s.String())
		}
	}
	return missing
}

// shardCount returns the n of a shard i/n, 0 for a run not sharded.
func shardCount(shard string) int {
	s, _ := data.ParseShard(shard)
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
