package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/rollout/runner"
)

func mergeCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:      "merge",
		Usage:     "join the outputs of rollout or label shards into one",
		ArgsUsage: "INPUT_DIR...",
		Description: `Joins finished rollout outputs (typically the --shard runs of one rollout) into
OUT/trajectories.parquet, the inputs' rows in the order given, and OUT/run.json. The
inputs must be configured alike (loop, roles, limit, same n of --shard i/n), and a
question found in two inputs is an error. Shards of the split that are not among
the inputs are reported. The outputs of distill label --shard are merged the same way,
into OUT/labels.parquet and OUT/label.json.`,
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "out", Usage: "output `DIR` (empty or absent)"},
		},
		Action: func(c *cli.Context) error {
			if err := rejectFlagsAfterArgs(c); err != nil {
				return err
			}
			out := c.Path("out")
			if out == "" {
				return usageErrorf("merge: --out is required")
			}
			if c.NArg() == 0 {
				return usageErrorf("merge: give the rollout output directories to merge")
			}
			inputs := c.Args().Slice()
			labels := 0
			for _, dir := range inputs {
				if label.IsRun(dir) {
					labels++
				}
			}
			switch {
			case labels == len(inputs):
				return mergeLabels(c, out, inputs)
			case labels > 0:
				return usageErrorf("merge: the inputs mix labelling and rollout outputs")
			}
			rep, err := runner.Merge(c.Context, out, inputs)
			if err != nil {
				return mergeError("merge", "", out, err, runner.ErrOptions)
			}
			o := rep.Counts.Output
			rows := [][2]any{
				{"inputs", len(rep.Inputs)},
				{"written", fmt.Sprintf("%d questions (%d done, %d failed), %d rows", o.Questions, o.Done, o.Failed, o.Rows)},
				{"retrievals per question", rounds(o.Rounds)},
			}
			if len(rep.MissingShards) > 0 {
				rows = append(rows, [2]any{"missing shards", strings.Join(rep.MissingShards, ", ")})
				loggerFrom(c).Warn("the merged output lacks shards of the split", "missing", rep.MissingShards)
			}
			rows = append(rows,
				[2]any{"trajectories", filepath.Join(out, runner.TrajectoriesFile)},
				[2]any{"run record", filepath.Join(out, runner.ReportFile)},
			)
			return printCounts(c.App.Writer, rows)
		},
	})
}

// mergeError is the error of the command cmd when a merge into out
// failed with err: an output directory that is not empty, inputs that do
// not go together and the merge's errOptions are usage errors (those two
// shown after prefix), anything else is returned as it is. The stages'
// merge errors are package stage's, the same values in runner and label.
func mergeError(cmd, prefix, out string, err, errOptions error) error {
	switch {
	case errors.Is(err, runner.ErrOutExists):
		return usageErrorf("%s: %s is not empty: choose another --out", cmd, out)
	case errors.Is(err, runner.ErrMismatch), errors.Is(err, errOptions):
		return usageErrorf("%s%w", prefix, err)
	}
	return err
}

// mergeLabels joins the outputs of labelling shards.
func mergeLabels(c *cli.Context, out string, inputs []string) error {
	rep, err := label.Merge(c.Context, out, inputs)
	if err != nil {
		return mergeError("merge", "", out, err, label.ErrOptions)
	}
	o := rep.Counts.Output
	rows := [][2]any{
		{"inputs", len(inputs)},
		{"written", fmt.Sprintf("%d states, %d sufficient, %d failed", o.States, o.Sufficient, o.Failed)},
	}
	if len(rep.MissingShards) > 0 {
		rows = append(rows, [2]any{"missing shards", strings.Join(rep.MissingShards, ", ")})
		loggerFrom(c).Warn("the merged labels lack shards of the split", "missing", rep.MissingShards)
	}
	rows = append(rows, [2]any{"labels", filepath.Join(out, label.LabelsFile)}, [2]any{"run record", filepath.Join(out, label.ReportFile)})
	return printCounts(c.App.Writer, rows)
}
