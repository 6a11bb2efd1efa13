package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/rollout/retrieve/bm25"
)

func indexCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "index",
		Usage: "build a BM25 index over a corpus",
		Description: `Indexes title + " " + text of every passage with Lucene-style English analysis
and BM25 (k1 0.9, b 0.4 by default: the method's settings). The index is a directory
that distill search, rollout and bench open; it appears only once complete.`,
		Flags: []cli.Flag{
			&cli.PathFlag{Name: "corpus", Usage: "corpus `FILE` (corpus.parquet from data import, or any corpus layout)", TakesFile: true},
			&cli.StringFlag{Name: "corpus-format", Value: "auto", Usage: "corpus layout: auto or " + names(data.CorpusFormats())},
			&cli.StringFlag{Name: "dataset", Usage: "index a bundled dataset's corpus instead of --corpus: " + datasetSample},
			&cli.PathFlag{Name: "out", Usage: "index `DIR`", EnvVars: []string{"DISTILL_INDEX"}},
			&cli.Float64Flag{Name: "k1", Value: bm25.DefaultK1, Usage: "BM25 term frequency saturation"},
			&cli.Float64Flag{Name: "b", Value: bm25.DefaultB, Usage: "BM25 length normalisation"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing index at --out"},
			&cli.BoolFlag{Name: "skip-bad", Usage: "count and report bad corpus records instead of stopping at the first"},
		},
		Action: func(c *cli.Context) error {
			out := c.Path("out")
			if out == "" {
				return usageErrorf("index: --out is required")
			}
			var (
				src    bm25.Source
				name   string
				total  int64 = -1
				closer func() error
			)
			switch {
			case c.String("dataset") != "" && c.Path("corpus") != "":
				return usageErrorf("index: give --corpus or --dataset, not both")
			case c.String("dataset") == datasetSample:
				w := synth.Sample()
				src, name, total = data.NewPassageSlice(w.Passages), "dataset "+datasetSample, int64(len(w.Passages))
			case c.String("dataset") != "":
				return usageErrorf("index: unknown --dataset %q (bundled: %s)", c.String("dataset"), datasetSample)
			case c.Path("corpus") == "":
				return usageErrorf("index: --corpus or --dataset is required")
			default:
				path := c.Path("corpus")
				format, err := corpusFormat(path, c.String("corpus-format"))
				if err != nil {
					return err
				}
				r, err := data.OpenCorpus(path, format)
				if err != nil {
					return err
				}
				closer = r.Close
				name = path
				if format == data.CorpusParquet {
					total = r.Rows()
				}
				src = r
				if c.Bool("skip-bad") {
					log := loggerFrom(c)
					src = &data.SkipBad{Source: r, OnBad: func(e *data.RecordError) { log.Warn("skipped bad passage", "err", e) }}
				}
			}
			if closer != nil {
				defer closer()
			}
			bar := newProgress(c, total, "indexing")
			st, err := bm25.Build(c.Context, out, src, bm25.BuildOptions{
				K1: c.Float64("k1"), B: c.Float64("b"), Overwrite: c.Bool("overwrite"), SourceName: name,
				Progress: func(n int64) { bar.Set64(n) },
			})
			bar.Finish()
			if err != nil {
				return err
			}
			rows := [][2]any{
				{"index", out}, {"passages", st.Passages}, {"terms", st.Terms}, {"postings", st.Postings},
				{"average length (terms)", fmt.Sprintf("%.1f", st.AvgDocLen)},
				{"size", fmt.Sprintf("%.1f MiB (%.0f bytes/passage)", float64(st.IndexBytes)/(1<<20), float64(st.IndexBytes)/float64(max(st.Passages, 1)))},
				{"time", fmt.Sprintf("%.2fs (%.0f passages/s)", st.Elapsed.Seconds(), float64(st.Passages)/st.Elapsed.Seconds())},
			}
			if s, ok := src.(*data.SkipBad); ok {
				rows = append(rows, [2]any{"bad records skipped", s.Skipped})
			}
			return printCounts(c.App.Writer, rows)
		},
	})
}

// openIndex opens the index directory dir, saying what is wrong when dir is
// not one.
func openIndex(dir string) (*bm25.Index, error) {
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
		return nil, fmt.Errorf("%s is not an index directory (build one with distill index): %w", dir, err)
	}
	return bm25.Open(dir)
}
