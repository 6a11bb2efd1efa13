package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/eval"
)

func scoreCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "score",
		Usage: "score a file of predicted answers with the benchmark's EM and F1",
		Description: `Scores predictions, a JSONL file of {"id": ..., "prediction": ...}, against the gold
answers of --questions, exactly as distill bench scores its own answers (SQuAD
normalisation, EM against any gold answer, F1 the best over them; --scoring squad
for SQuAD v1.1's treatment of empty answers). --questions is a questions.parquet
that distill data import wrote, or a dataset file in any layout it reads (give
--format). A question without a prediction scores 0 and is counted as missing;
predictions for unknown ids are counted as extra.

Prints EM, F1, precision and recall (percent, over every question) and the counts;
with --per-question, stdout is one JSON line {"id", "em", "f1"} per question, in the
questions' order, and the summary goes to stderr.`,
		Flags: []cli.Flag{
			presetFlag(),
			&cli.PathFlag{Name: "questions", Usage: "questions `FILE`: questions.parquet, or a dataset file with --format", TakesFile: true, EnvVars: []string{"DISTILL_QUESTIONS"}},
			&cli.StringFlag{Name: "format", Usage: "layout of --questions when it is a dataset file: " + names(data.QuestionFormats())},
			&cli.PathFlag{Name: "predictions", Usage: "predictions `FILE` (JSONL of {\"id\", \"prediction\"})", TakesFile: true},
			&cli.BoolFlag{Name: "per-question", Usage: "print one JSON line {\"id\", \"em\", \"f1\"} per question on stdout"},
			scoringFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the summary as one JSON object"},
		},
		Action: scoreAction,
	})
}

func scoreAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("score: unexpected argument %q (see '%s --help')", c.Args().First(), helpName(c))
	}
	opts := eval.ScoreOptions{Questions: c.Path("questions"), Predictions: c.Path("predictions")}
	if opts.Questions == "" || opts.Predictions == "" {
		return usageErrorf("score: --questions and --predictions are required")
	}
	var err error
	if f := c.String("format"); f != "" {
		if opts.Format, err = data.ParseQuestionFormat(f); err != nil {
			return usageErrorf("score: %w", err)
		}
	} else if !strings.HasSuffix(opts.Questions, ".parquet") {
		return usageErrorf("score: --questions %s is not a .parquet file: give its layout with --format (%s)", opts.Questions, names(data.QuestionFormats()))
	}
	if opts.Scoring, err = eval.ParseScoring(c.String("scoring")); err != nil {
		return usageErrorf("score: --scoring: %w", err)
	}
	out, summary := bufio.NewWriter(c.App.Writer), c.App.Writer
	if c.Bool("per-question") {
		enc := json.NewEncoder(out)
		opts.PerQuestion = func(q eval.QuestionScore) error { return enc.Encode(q) }
		summary = c.App.ErrWriter
	}
	sum, err := eval.Score(c.Context, opts)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	switch {
	case errors.Is(err, eval.ErrOptions):
		return usageErrorf("%w", err)
	case err != nil:
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(summary)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	rows := [][2]any{
		{"scoring", sum.Scoring},
		{"questions", sum.Questions}, {"predictions", sum.Predictions},
		{"answered", sum.Answered}, {"missing", sum.Missing}, {"extra", sum.Extra},
		{"EM", fmt.Sprintf("%.2f", sum.EM)}, {"F1", fmt.Sprintf("%.2f", sum.F1)},
		{"precision", fmt.Sprintf("%.2f", sum.Precision)}, {"recall", fmt.Sprintf("%.2f", sum.Recall)},
	}
	if sum.DuplicateQuestions > 0 {
		rows = append(rows, [2]any{"duplicate question ids skipped", sum.DuplicateQuestions})
	}
	if len(sum.MissingIDs) > 0 {
		rows = append(rows, [2]any{"missing ids", listIDs(sum.MissingIDs, sum.Missing)})
	}
	if len(sum.ExtraIDs) > 0 {
		rows = append(rows, [2]any{"extra ids", listIDs(sum.ExtraIDs, sum.Extra)})
	}
	return printCounts(summary, rows)
}

// scoringFlag is --scoring, shared by score and bench.
func scoringFlag() cli.Flag {
	return &cli.StringFlag{Name: "scoring", Value: string(eval.ScoringReference),
		Usage: "how two answers that normalise to the empty string score: reference (the method's: F1 1) or squad (SQuAD v1.1: F1 0)"}
}

// listIDs shows the first ids of a count.
func listIDs(ids []string, total int) string {
	s := strings.Join(ids, ", ")
	if total > len(ids) {
		s += fmt.Sprintf(", ... (%d in all)", total)
	}
	return s
}
