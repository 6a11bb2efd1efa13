package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/distill-rag/distill/retrieve/internal/benchfile"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
)

// childArgs are the flags of distill's build and search children.
type childArgs struct {
	corpus, index, queries, results string
	lucene                          bool
}

func (a *childArgs) flags(fs *flag.FlagSet) {
	fs.StringVar(&a.corpus, "corpus", "", "internal: the corpus of a build child")
	fs.StringVar(&a.index, "index", "", "internal: the index directory of a child")
	fs.StringVar(&a.queries, "queries-file", "", "internal: the queries of a search child")
	fs.StringVar(&a.results, "results", "", "internal: where a search child writes its top 10s")
	fs.BoolVar(&a.lucene, "lucene", false, "internal: build with Lucene's lengths and Porter's stemmer")
}

func runChild(phase string, a childArgs) error {
	var out engineOut
	var err error
	switch phase {
	case "build":
		out, err = buildDistill(a)
	case "search":
		out, err = searchDistill(a)
	default:
		err = fmt.Errorf("unknown -phase %q", phase)
	}
	if err != nil {
		return err
	}
	out.PeakRSS = peakRSS()
	return json.NewEncoder(os.Stdout).Encode(out)
}

func buildDistill(a childArgs) (engineOut, error) {
	start := time.Now()
	r, err := data.OpenCorpus(a.corpus, data.CorpusJSONL)
	if err != nil {
		return engineOut{}, err
	}
	defer r.Close()
	opts := bm25.BuildOptions{SourceName: a.corpus}
	settings := map[string]any{
		"analyzer": "Lucene's EnglishAnalyzer rules: Unicode words, possessives, lower case, Lucene's English stop words, Porter2",
		"k1":       bm25.DefaultK1, "b": bm25.DefaultB, "norms": "exact lengths",
		"topk":   "block-max MaxScore",
		"build":  fmt.Sprintf("bm25.Build, %d workers, reading the JSONL", runtime.GOMAXPROCS(0)),
		"stores": "ids, titles and passages",
	}
	if a.lucene {
		opts.LuceneNorms, opts.Stemmer = true, analysis.Porter
		settings["analyzer"] = strings.Replace(settings["analyzer"].(string), "Porter2", "Porter", 1)
		settings["norms"] = "Lucene's one-byte lengths"
	}
	if _, err := bm25.Build(context.Background(), a.index, r, opts); err != nil {
		return engineOut{}, err
	}
	return engineOut{BuildS: time.Since(start).Seconds(), Settings: settings}, nil
}

// searchDistill times the queries as peers.py does: one at a time (a
// warm-up pass, then two timed passes, each query keeping its faster wall
// time), then the batch over both cores for two seconds at least. Hits
// come with ids, titles and scores (TitlesOnly), not the passages: the
// peers but Pyserini return ids alone.
func searchDistill(a childArgs) (engineOut, error) {
	ctx := context.Background()
	queries, err := readQueries(a.queries)
	if err != nil {
		return engineOut{}, err
	}
	start := time.Now()
	x, err := bm25.Open(a.index)
	if err != nil {
		return engineOut{}, err
	}
	defer x.Close()
	out := engineOut{OpenS: time.Since(start).Seconds(), Times: make([]float64, len(queries))}
	top := make([]ranked, len(queries))
	runtime.LockOSThread()
	for pass := range 3 {
		t0 := time.Now()
		for i, q := range queries {
			t := time.Now()
			hits, err := x.Search(ctx, retrieve.Query{Text: q.Text, K: 10, TitlesOnly: true})
			if err != nil {
				return out, err
			}
			d := time.Since(t).Seconds()
			if pass == 1 || d < out.Times[i] {
				out.Times[i] = d
			}
			top[i] = ranked{}
			for _, h := range hits {
				top[i].ids = append(top[i].ids, h.Passage.ID)
				top[i].scores = append(top[i].scores, float64(h.Score))
			}
		}
		if pass > 0 {
			out.QPSSingle = max(out.QPSSingle, float64(len(queries))/time.Since(t0).Seconds())
		}
	}
	runtime.UnlockOSThread()
	if err := benchfile.Write(a.results, func(w *bufio.Writer) error {
		for i, q := range queries {
			scores := make([]string, len(top[i].scores))
			for j, sc := range top[i].scores {
				scores[j] = fmt.Sprint(sc)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", q.ID, strings.Join(top[i].ids, " "), strings.Join(scores, " "))
		}
		return nil
	}); err != nil {
		return out, err
	}
	t, done := time.Now(), 0
	for done == 0 || time.Since(t) < 2*time.Second {
		err := retrieve.SearchBatch(ctx, x, queries, retrieve.BatchOptions{K: 10, Workers: runtime.GOMAXPROCS(0), TitlesOnly: true},
			func(retrieve.BatchResult) error { return nil })
		if err != nil {
			return out, err
		}
		done += len(queries)
	}
	out.QPSBatch = float64(done) / time.Since(t).Seconds()
	return out, nil
}

func readQueries(path string) ([]retrieve.BatchQuery, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []retrieve.BatchQuery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, text, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			return nil, fmt.Errorf("%s: line %d has no tab", path, len(out)+1)
		}
		out = append(out, retrieve.BatchQuery{ID: id, Text: text})
	}
	return out, sc.Err()
}
