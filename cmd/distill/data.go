package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/dataset"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/data/synth"
)

// datasetSample is the value of --dataset that selects the bundled sample.
const datasetSample = "sample"

// questionsFlags checks the flags that say what a command runs on, and
// returns the --questions file ("" for the sample): --questions with
// --index and an output directory out, or --dataset naming the sample.
func questionsFlags(c *cli.Context, name, out string) (string, error) {
	questions, dataset := c.Path("questions"), c.String("dataset")
	switch {
	case questions != "" && dataset != "":
		return "", usageErrorf("%s: give --questions or --dataset, not both", name)
	case dataset != "" && dataset != datasetSample:
		return "", usageErrorf("%s: unknown --dataset %q (bundled: %s)", name, dataset, datasetSample)
	case questions != "" && c.String("index") == "":
		return "", usageErrorf("%s: --index is required with --questions", name)
	case questions != "" && out == "":
		return "", usageErrorf("%s: --out is required with --questions", name)
	}
	return questions, nil
}

func dataCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "data",
		Usage: "import datasets and corpora, synthesise the sample, show rows",
		Subcommands: []*cli.Command{
			dataImportCommand(),
			dataSynthCommand(),
			dataShowCommand(),
		},
	})
}

func dataImportCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "convert a QA dataset (and its corpus) into questions.parquet and corpus.parquet",
		Description: `Reads a question file in its dataset's own layout and writes DIR/questions.parquet
and, when there is a corpus, DIR/corpus.parquet. HotpotQA, 2Wiki and MuSiQue files
carry context paragraphs: their unique paragraphs become the corpus (doc id = sha1 of
title + "\n" + text) unless --corpus names a corpus file; then gold titles are looked
up in that corpus, and a HotpotQA fullwiki record whose context lacks them (or is empty)
is imported and counted. TriviaQA (--format triviaqa) is read in its original layout
({"Data": [...]}) or FlashRAG's. --dataset sample imports the bundled synthetic sample
instead of a file.`,
		Flags: []cli.Flag{
			presetFlag(),
			&cli.StringFlag{Name: "format", Usage: "question file layout: " + names(data.QuestionFormats())},
			&cli.PathFlag{Name: "in", Usage: "question `FILE` (JSON list or JSONL, optionally .gz)", TakesFile: true},
			&cli.PathFlag{Name: "corpus", Usage: "corpus `FILE` (instead of the questions' context paragraphs)", TakesFile: true},
			&cli.StringFlag{Name: "corpus-format", Value: "auto", Usage: "corpus layout: auto or " + names(data.CorpusFormats())},
			&cli.StringFlag{Name: "dataset", Usage: "import a bundled dataset instead of --in: " + datasetSample},
			&cli.StringFlag{Name: "name", Usage: "dataset name recorded with each question (default: the format's dataset)"},
			&cli.BoolFlag{Name: "triviaqa-value-only", Usage: "TriviaQA (original layout): the normalized value as the one gold answer, as the authors' code scores it, not every alias"},
			&cli.PathFlag{Name: "triviaqa-pages", Usage: "TriviaQA (original layout): the corpus is the questions' Wikipedia evidence pages, read from `DIR` (the rc release's evidence/wikipedia) and cut into passages of at most 800 characters; the pages' titles are the gold titles", TakesFile: true},
			&cli.StringFlag{Name: "id-prefix", Usage: "put `PREFIX` before every passage id (2wiki_ and triviaqa_ name 2Wiki's and TriviaQA's passages as the authors' code does)"},
			&cli.PathFlag{Name: "out", Usage: "output `DIR` (must be empty, or --overwrite)", EnvVars: []string{"DISTILL_OUT"}},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace what --out holds"},
			&cli.BoolFlag{Name: "skip-bad", Usage: "count and report bad records instead of stopping at the first"},
		},
		Action: func(c *cli.Context) error {
			out := c.Path("out")
			if out == "" {
				return usageErrorf("data import: --out is required")
			}
			if c.String("dataset") != "" {
				if c.String("dataset") != datasetSample {
					return usageErrorf("data import: unknown --dataset %q (bundled: %s)", c.String("dataset"), datasetSample)
				}
				if c.Path("in") != "" {
					return usageErrorf("data import: give --in or --dataset, not both")
				}
				w := synth.Sample()
				if err := dataset.Write(c.Context, out, w.Questions, w.Passages, c.Bool("overwrite")); err != nil {
					return outNotEmpty("data import", err)
				}
				return printCounts(c.App.Writer, [][2]any{
					{"dataset", datasetSample + " (synthetic, built in)"},
					{"questions", len(w.Questions)}, {"passages", len(w.Passages)},
					{"questions file", filepath.Join(out, data.QuestionsFile)},
					{"corpus file", filepath.Join(out, data.CorpusFile)},
				})
			}
			if c.Path("in") == "" || c.String("format") == "" {
				return usageErrorf("data import: --in and --format are required (or --dataset %s)", datasetSample)
			}
			qf, err := data.ParseQuestionFormat(c.String("format"))
			if err != nil {
				return usageErrorf("data import: %w", err)
			}
			opts := dataset.ImportOptions{
				In: c.Path("in"), Format: qf, Corpus: c.Path("corpus"), Out: out,
				SkipBad: c.Bool("skip-bad"), Dataset: c.String("name"), Logger: loggerFrom(c), Overwrite: c.Bool("overwrite"),
				IDPrefix: c.String("id-prefix"), TriviaQAValueOnly: c.Bool("triviaqa-value-only"), TriviaQAPages: c.Path("triviaqa-pages"),
			}
			if opts.Corpus != "" {
				if opts.CorpusFormat, err = corpusFormat(opts.Corpus, c.String("corpus-format")); err != nil {
					return err
				}
			}
			res, err := dataset.Import(c.Context, opts)
			if err != nil {
				return outNotEmpty("data import", err)
			}
			rows := [][2]any{
				{"questions", res.Questions}, {"passages", res.Passages},
				{"duplicate passages", res.DuplicatePassages}, {"empty passages", res.EmptyPassages},
				{"bad records skipped", res.BadRecords}, {"unresolved supporting facts", res.UnresolvedFacts},
				{"questions with all gold titles in the corpus", res.QuestionsWithAllGoldTitles},
				{"questions missing gold titles", res.QuestionsMissingGoldTitles},
				{"questions file", res.QuestionsPath},
			}
			if res.CorpusPath != "" {
				rows = append(rows, [2]any{"corpus file", res.CorpusPath})
			}
			if err := printCounts(c.App.Writer, rows); err != nil {
				return err
			}
			for _, e := range res.Errors {
				fmt.Fprintf(c.App.Writer, "skipped: %v\n", e)
			}
			if n := res.BadRecords - len(res.Errors); n > 0 {
				fmt.Fprintf(c.App.Writer, "skipped: ... and %d more\n", n)
			}
			return nil
		},
	}
}

func dataSynthCommand() *cli.Command {
	return &cli.Command{
		Name:  "synth",
		Usage: "write a synthetic multi-hop dataset (the bundled sample is seed 42, 200 questions)",
		Flags: []cli.Flag{
			&cli.Uint64Flag{Name: "seed", Value: synth.DefaultSeed, Usage: "random seed: the same seed and size give the same dataset"},
			&cli.IntFlag{Name: "count", Value: synth.DefaultQuestions, Usage: fmt.Sprintf("how many questions, 1 to %d", synth.MaxQuestions)},
			&cli.PathFlag{Name: "out", Usage: "output `DIR` (must be empty, or --overwrite)", EnvVars: []string{"DISTILL_OUT"}},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace what --out holds"},
		},
		Action: func(c *cli.Context) error {
			if c.Path("out") == "" {
				return usageErrorf("data synth: --out is required")
			}
			// Every world but the bundled sample has a dataset name and
			// question ids of its own (synth.DatasetName).
			cfg := synth.Config{Seed: c.Uint64("seed"), Questions: c.Int("count")}
			w, err := synth.Generate(cfg)
			if err != nil {
				return usageErrorf("data synth: %w", err)
			}
			if err := dataset.Write(c.Context, c.Path("out"), w.Questions, w.Passages, c.Bool("overwrite")); err != nil {
				return outNotEmpty("data synth", err)
			}
			return printCounts(c.App.Writer, [][2]any{
				{"dataset", synth.DatasetName(cfg) + " (its question ids " + synth.DatasetName(cfg) + "-000001, ...)"},
				{"questions", len(w.Questions)}, {"passages", len(w.Passages)},
				{"questions file", filepath.Join(c.Path("out"), data.QuestionsFile)},
				{"corpus file", filepath.Join(c.Path("out"), data.CorpusFile)},
			})
		},
	}
}

func dataShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print rows of a parquet file (questions, corpus, trajectories, labels) as JSON lines, or count them, or show its schema",
		UsageText: "distill data show [-n N | --count | --schema] FILE",
		ArgsUsage: "FILE",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: 10, Usage: "rows to print; 0 prints all"},
			&cli.BoolFlag{Name: "count", Usage: "print the number of rows (and row groups, and the kind of rows) instead of rows"},
			&cli.BoolFlag{Name: "schema", Usage: "print the file's parquet schema instead of rows"},
		},
		Action: func(c *cli.Context) error {
			if err := rejectFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.NArg() != 1 {
				return usageErrorf("data show: want one FILE, got %d arguments", c.NArg())
			}
			path := c.Args().First()
			if !c.Bool("count") && !c.Bool("schema") {
				return data.ShowParquet(c.App.Writer, path, c.Int("n"))
			}
			info, err := data.ParquetStats(path)
			if err != nil {
				return err
			}
			if c.Bool("count") {
				kind := string(info.Kind)
				if kind == "" {
					kind = "none that distill reads: " + info.KindError
				}
				if err := printCounts(c.App.Writer, [][2]any{{"rows", info.Rows}, {"row groups", info.RowGroups}, {"kind", kind}}); err != nil {
					return err
				}
			}
			if c.Bool("schema") {
				_, err := fmt.Fprintln(c.App.Writer, strings.TrimSpace(info.Schema))
				return err
			}
			return nil
		},
	}
}

// corpusFormat resolves --corpus-format, detecting it from the file for "auto".
func corpusFormat(path, name string) (data.CorpusFormat, error) {
	if name == "" || name == "auto" {
		return data.DetectCorpusFormat(path)
	}
	f, err := data.ParseCorpusFormat(name)
	if err != nil {
		return "", usageErrorf("%w", err)
	}
	return f, nil
}

// printCounts writes "name: value" lines, names aligned.
func printCounts(w io.Writer, rows [][2]any) error {
	width := 0
	for _, r := range rows {
		width = max(width, len(fmt.Sprint(r[0])))
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-*s  %v\n", width+1, fmt.Sprint(r[0])+":", r[1]); err != nil {
			return err
		}
	}
	return nil
}

// names joins format names for help texts.
func names[S ~string](all []S) string {
	out := ""
	for i, s := range all {
		if i > 0 {
			out += ", "
		}
		out += string(s)
	}
	return out
}

// outNotEmpty names the fix for an output directory that is not empty,
// for the commands that replace one with --overwrite; other errors pass.
func outNotEmpty(command string, err error) error {
	if errors.Is(err, outdir.ErrNotEmpty) {
		return usageErrorf("%s: %w: use --overwrite to replace what it holds, or another --out", command, err)
	}
	return err
}
