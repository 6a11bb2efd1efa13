package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/rollout/runner"
)

func mergeCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:      "merge",
		Usage:     "join the outputs of rollout shards into one",
		ArgsUsage: "INPUT_DIR...",
		Description: `Joins finished rollout outputs (typically the --shard runs of one rollout) into
OUT/trajectories.parquet, the inputs' rows in the order given, and OUT/run.json. The
inputs must be configured alike (loop, roles, limit, same n of --shard i/n), and a
question found in two inputs is an error. Shards of the split that are not among
the inputs are reported.`,
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
			rep, err := runner.Merge(c.Context, out, c.Args().Slice())
			switch {
			case errors.Is(err, runner.ErrOutExists):
				return usageErrorf("merge: %s is not empty: choose another --out", out)
			case errors.Is(err, runner.ErrMismatch), errors.Is(err, runner.ErrOptions):
				return usageErrorf("%w", err)
			case err != nil:
				return err
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
