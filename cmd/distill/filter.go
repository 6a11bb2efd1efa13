package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/filter"
	"github.com/distill-rag/distill/label"
)

func filterCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "filter",
		Usage: "keep the teacher labels that agree with each other and with retrieval truth, split by question",
		Description: `Reads labels.parquet from distill label (several, with --in repeated: the labels of
several datasets or runs become one training set) and applies the method's rules, in order; the
first rule that drops a row records its name and a reason in OUT/dropped.parquet:
  teacher-failed               no usable teacher sample
  low-agreement                samples agree less than --min-agreement (default: all must
                               agree when the teacher was sampled more than once)
  self-contradictory           a sample contradicted itself (only with --drop-self-contradictory)
  contradicts-strong-positive  insufficient, yet >= 70% of gold titles and the answer are there
  contradicts-strong-negative  sufficient, yet <= 10% of gold titles and no answer are there
  empty-gaps                   insufficient with no gap item (unless --keep-empty-gaps)
  balance                      train's majority class cut to the minority's size (--balance),
                               or to --balance-ratio times it
Kept verdicts are normalised (categories mapped to the five of the method, repeated gap
items removed, an empty target set to "Answer") and split by question, so that no
question has states on both sides: --val-fraction of the questions (of the rows, with
--val-split row, as the reference code splits), chosen with --seed,
go to OUT/val.parquet, the rest to OUT/train.parquet. OUT/filter.json and the table on
stdout give the counts per rule (they add up to the input), class balance, gap
categories, the agreement histogram and how the teacher agrees with retrieval truth.`,
		Flags: []cli.Flag{
			presetFlag(),
			&cli.StringSliceFlag{Name: "in", Usage: "labels.parquet from distill label (or its directory); repeat it to filter several as one", TakesFile: true},
			&cli.PathFlag{Name: "out", Usage: "output `DIR`"},
			&cli.Float64Flag{Name: "min-agreement", Value: -1, Usage: "drop labels whose samples agree less than this", DefaultText: "1.0 when the teacher was sampled more than once, else none"},
			&cli.BoolFlag{Name: "keep-empty-gaps", Usage: "keep insufficient labels that name no gap item"},
			&cli.BoolFlag{Name: "drop-self-contradictory", Usage: "drop labels with a sample that contradicted itself"},
			&cli.BoolFlag{Name: "balance", Usage: "cut train's majority class to the size of its minority class (times --balance-ratio)"},
			&cli.Float64Flag{Name: "balance-ratio", Usage: "balance train, keeping at most this many rows of the majority class per row of the minority (at least 1; implies --balance)", Value: 1},
			&cli.BoolFlag{Name: "balance-upsample", Usage: "balance by writing minority rows again (each once before any twice) instead of dropping majority rows (implies --balance)"},
			&cli.BoolFlag{Name: "balance-hard-only", Usage: "balance only the rows retrieval truth does not settle, leaving strong positives and negatives as they are (implies --balance)"},
			&cli.BoolFlag{Name: "balance-per-round", Usage: "balance each round's rows apart (implies --balance)"},
			&cli.Float64Flag{Name: "val-fraction", Value: filter.DefaultValFraction, Usage: "share of the questions that go to validation (0: none)"},
			&cli.StringFlag{Name: "truth", Value: "distill", Usage: "retrieval truth of the strong-positive and strong-negative rules: distill (the label's own: exact titles, every alias, normalised) or reference (the authors' code: raw substrings of the titles and of the first answer in the context)"},
			&cli.StringFlag{Name: "val-split", Value: "question", Usage: "what --val-fraction splits: question (no question on both sides) or row (the reference code's)"},
			&cli.Int64Flag{Name: "seed", Value: filter.DefaultSeed, Usage: "seed of the split and of balancing"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace the outputs already in --out"},
		},
		Action: filterAction,
	})
}

func filterAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("filter: unexpected argument %q (see '%s --help')", c.Args().First(), helpName(c))
	}
	in, out := c.StringSlice("in"), c.Path("out")
	switch {
	case len(in) == 0:
		return usageErrorf("filter: --in is required (labels.parquet from distill label)")
	case out == "":
		return usageErrorf("filter: --out is required")
	case c.Float64("min-agreement") > 1:
		return usageErrorf("filter: --min-agreement must be at most 1")
	case c.Float64("val-fraction") < 0 || c.Float64("val-fraction") >= 1:
		return usageErrorf("filter: --val-fraction must be at least 0 and below 1")
	case c.Int64("seed") == 0:
		return usageErrorf("filter: --seed must not be 0")
	case c.String("val-split") != "question" && c.String("val-split") != "row":
		return usageErrorf("filter: --val-split must be question or row, not %q", c.String("val-split"))
	case c.String("truth") != "distill" && c.String("truth") != "reference":
		return usageErrorf("filter: --truth must be distill or reference, not %q", c.String("truth"))
	}
	for i, path := range in {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			in[i] = filepath.Join(path, label.LabelsFile)
		}
	}
	minAgreement := c.Float64("min-agreement")
	if !c.IsSet("min-agreement") {
		minAgreement = -1
	}
	valFraction := c.Float64("val-fraction")
	if valFraction == 0 {
		valFraction = -1 // the library reads 0 as its default
	}
	sum, err := filter.Run(c.Context, filter.Options{
		In: in, Out: out,
		MinAgreement:          minAgreement,
		KeepEmptyGaps:         c.Bool("keep-empty-gaps"),
		DropSelfContradictory: c.Bool("drop-self-contradictory"),
		Balance:               c.Bool("balance") || c.IsSet("balance-ratio") || c.Bool("balance-upsample") || c.Bool("balance-hard-only") || c.Bool("balance-per-round"),
		BalanceUpsample:       c.Bool("balance-upsample"),
		BalanceHardOnly:       c.Bool("balance-hard-only"),
		BalancePerRound:       c.Bool("balance-per-round"),
		BalanceRatio:          c.Float64("balance-ratio"),
		ValFraction:           valFraction,
		ValByRow:              c.String("val-split") == "row",
		ReferenceTruth:        c.String("truth") == "reference",
		Seed:                  c.Int64("seed"),
		Overwrite:             c.Bool("overwrite"),
		Logger:                loggerFrom(c),
	})
	// The library's errors say "filter: ...".
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return err // a missing input is not a usage error, as for every command
	case errors.Is(err, filter.ErrOutExists):
		return usageErrorf("%w: use --overwrite to replace what it holds, or another --out", err)
	case errors.Is(err, filter.ErrInput):
		return usageErrorf("%w", err)
	case err != nil:
		return err
	}
	return filter.WriteTable(c.App.Writer, sum)
}
