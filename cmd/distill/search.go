package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/retrieve"
)

func searchCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:      "search",
		Usage:     "search an index, one query or a batch",
		ArgsUsage: "QUERY...",
		Description: `With a QUERY, prints the top hits for people to read (--json: one JSON object
per hit with the whole passage). With --queries FILE, searches every query of the
file in parallel over all cores and prints one line per hit, in query order, as
JSON lines {"query_id", "rank", "doc_id", "title", "score"} or (--format trec) as a
TREC run. FILE holds one query per line: a bare query (its id is its line number),
"id<TAB>query", or JSON {"id": ..., "query": ...}.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "index", Usage: indexSpecHelp, EnvVars: []string{"DISTILL_INDEX"}},
			&cli.IntFlag{Name: "k", Aliases: []string{"n"}, Value: 10, Usage: "hits per query"},
			&cli.BoolFlag{Name: "json", Usage: "one query: print hits as JSON lines with the whole passage"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "one query: doc `ID`s never to return (as the loop excludes documents seen in earlier rounds)"},
			&cli.PathFlag{Name: "queries", Usage: "batch mode: query `FILE` (- for stdin)", TakesFile: true},
			&cli.StringFlag{Name: "format", Value: retrieve.RunJSONL, Usage: "batch output: jsonl or trec"},
			&cli.StringFlag{Name: "run-tag", Value: "distill-bm25", Usage: "batch output: run name in TREC lines"},
			&cli.IntFlag{Name: "workers", Usage: "batch mode: concurrent searches", DefaultText: "one per CPU"},
		}, retrieverFlags()...),
		Action: func(c *cli.Context) error {
			if err := rejectFlagsAfterArgs(c); err != nil {
				return err
			}
			if c.String("index") == "" {
				return usageErrorf("search: --index is required")
			}
			if c.Int("k") < 1 {
				return usageErrorf("search: -k must be at least 1")
			}
			batch := c.Path("queries") != ""
			if batch == c.Args().Present() {
				return usageErrorf("search: give a QUERY or --queries FILE (exactly one of them)")
			}
			if batch {
				return searchBatch(c)
			}
			return searchOne(c)
		},
	})
}

func searchOne(c *cli.Context) error {
	x, err := openIndex(c, c.String("index"))
	if err != nil {
		return err
	}
	defer x.Close()
	q := retrieve.Query{Text: strings.Join(c.Args().Slice(), " "), K: c.Int("k"), Exclude: c.StringSlice("exclude")}
	start := time.Now()
	hits, err := x.Search(c.Context, q)
	if err != nil {
		return err
	}
	loggerFrom(c).Debug("searched", "hits", len(hits), "elapsed", time.Since(start))
	w := bufio.NewWriter(c.App.Writer)
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		for i, h := range hits {
			if err := enc.Encode(struct {
				Rank      int      `json:"rank"`
				DocID     string   `json:"doc_id"`
				Title     string   `json:"title"`
				Score     float64  `json:"score"`
				Text      string   `json:"text"`
				Sentences []string `json:"sentences,omitempty"`
			}{i + 1, h.ID, h.Title, h.Score, h.Text, h.Sentences}); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	if len(hits) == 0 {
		fmt.Fprintln(w, "no passage matches the query")
	}
	for i, h := range hits {
		fmt.Fprintf(w, "%2d  %7.3f  %s  [%s]\n", i+1, h.Score, h.Title, h.ID)
		fmt.Fprintf(w, "             %s\n", snippet(h.Text, 160))
	}
	return w.Flush()
}

func searchBatch(c *cli.Context) error {
	path := c.Path("queries")
	in := c.App.Reader
	if in == nil {
		in = os.Stdin
	}
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	queries, err := retrieve.ReadQueries(in, path)
	if err != nil {
		return err
	}
	rw, err := retrieve.NewRunWriter(c.App.Writer, c.String("format"), c.String("run-tag"))
	if err != nil {
		return usageErrorf("search: %w", err)
	}
	x, err := openIndex(c, c.String("index"))
	if err != nil {
		return err
	}
	defer x.Close()
	bar := newProgress(c, int64(len(queries)), "searching", "queries")
	start := time.Now()
	err = retrieve.SearchBatch(c.Context, x, queries, retrieve.BatchOptions{K: c.Int("k"), Workers: c.Int("workers"), TitlesOnly: true},
		func(res retrieve.BatchResult) error {
			bar.Add(1)
			return rw.Write(res)
		})
	bar.Finish()
	if err != nil {
		return err
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	loggerFrom(c).Info("batch search done", "queries", len(queries), "seconds", elapsed.Seconds(),
		"queries_per_second", float64(len(queries))/elapsed.Seconds())
	return nil
}

// snippet returns the start of s, at most n bytes, cut at a space.
func snippet(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut] + " ..."
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
