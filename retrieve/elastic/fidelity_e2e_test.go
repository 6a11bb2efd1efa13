//go:build e2e

package elastic_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/retrieve/elastic"
	"github.com/distill-rag/distill/retrieve/elastic/opensearchtest"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

// fidelityQueries are the questions of the slice, then the first
// sentence of every step-th passage, so that the two slices give more
// than 1,000 queries together.
func fidelityQueries(ds opensearchtest.Dataset, step int) []string {
	var qs []string
	for _, q := range ds.Questions {
		qs = append(qs, q.Text)
	}
	for i := 0; i < len(ds.Corpus); i += step {
		p := ds.Corpus[i]
		s := p.Text
		if len(p.Sentences) > 0 {
			s = p.Sentences[0]
		}
		qs = append(qs, s)
	}
	return qs
}

// fidelity is how two rankings of the same queries agree.
type fidelity struct {
	queries         int
	overlap         float64 // mean |A ∩ B| / max(|A|, |B|) of the top 10
	sameRank        float64 // share of ranks 1..10 holding the same document
	sameTop1        float64 // share of queries with the same first hit
	differingQuerys []int
}

func runAll(t *testing.T, r retrieve.Retriever, queries []string) ([][]string, float64) {
	t.Helper()
	ctx := context.Background()
	out := make([][]string, len(queries))
	start := time.Now()
	for i, q := range queries {
		hits, err := r.Search(ctx, retrieve.Query{Text: q, K: 10, TitlesOnly: true})
		if err != nil {
			t.Fatalf("query %d %q: %v", i, q, err)
		}
		out[i] = retrievetest.HitIDs(hits)
	}
	return out, float64(len(queries)) / time.Since(start).Seconds()
}

func compare(a, b [][]string) fidelity {
	f := fidelity{queries: len(a)}
	for i := range a {
		n := max(len(a[i]), len(b[i]))
		if n == 0 {
			f.overlap++
			f.sameRank++
			f.sameTop1++
			continue
		}
		common, same := 0, 0
		for j, id := range a[i] {
			if slices.Contains(b[i], id) {
				common++
			}
			if j < len(b[i]) && b[i][j] == id {
				same++
			}
		}
		f.overlap += float64(common) / float64(n)
		f.sameRank += float64(same) / float64(n)
		if len(a[i]) > 0 && len(b[i]) > 0 && a[i][0] == b[i][0] {
			f.sameTop1++
		}
		if common < n {
			f.differingQuerys = append(f.differingQuerys, i)
		}
	}
	q := float64(max(f.queries, 1))
	f.overlap /= q
	f.sameRank /= q
	f.sameTop1 /= q
	return f
}

// TestFidelity ranks the same queries over the same corpus with distill's
// in-process BM25 and with the node's (k1 0.9, b 0.4, the same English
// analysis), and prints how the top 10 agree and how fast each is:
//
//	make e2e-opensearch E2E_RUN=TestFidelity
//
// It does so for distill's default (exact document lengths) and with
// LuceneNorms, and fails when a mean overlap@10 falls below 0.95, the
// goal set for the in-process index.
func TestFidelity(t *testing.T) {
	n := opensearchtest.Shared(t)
	sets := opensearchtest.Datasets(t)
	steps := map[string]int{"hotpotqa": 2, "2wikimultihopqa": 12}
	// Each variant is held against the node loaded with its stemmer.
	variants := []struct {
		name string
		opts bm25.BuildOptions
	}{
		{"exact lengths (default)", bm25.BuildOptions{}},
		{"Lucene's lengths", bm25.BuildOptions{LuceneNorms: true}},
		{"Porter, Lucene's lengths", bm25.BuildOptions{LuceneNorms: true, Stemmer: analysis.Porter}},
	}
	all := make([]fidelity, len(variants))
	var lines []string
	for _, ds := range sets {
		queries := fidelityQueries(ds, steps[ds.Name])
		byID := map[string]string{}
		for _, p := range ds.Corpus {
			byID[p.ID] = p.Title
		}
		got, nodeQPS := map[analysis.Stemmer][][]string{}, map[analysis.Stemmer]float64{}
		for _, st := range []analysis.Stemmer{analysis.Porter2, analysis.Porter} {
			cfg := nodeConfig(n, "fidelity")
			// One worker loads in corpus order, so that ties fall as in bm25.
			opts := elastic.LoadOptions{Workers: 1, BatchSize: 500, Stemmer: string(st)}
			if _, err := elastic.Load(context.Background(), cfg, data.NewPassageSlice(ds.Corpus), opts); err != nil {
				t.Fatal(err)
			}
			remote := open(t, cfg, elastic.OpenOptions{})
			// A first pass warms the node up (it compiles its code paths).
			runAll(t, remote, queries[:min(100, len(queries))])
			got[st], nodeQPS[st] = runAll(t, remote, queries)
		}
		for vi, v := range variants {
			local, err := bm25test.Build(context.Background(), filepath.Join(t.TempDir(), "bm25"), ds.Corpus, v.opts)
			if err != nil {
				t.Fatal(err)
			}
			want, localQPS := runAll(t, local, queries)
			local.Close()
			st, _ := analysis.ParseStemmer(string(v.opts.Stemmer))
			f := compare(want, got[st])
			lines = append(lines, fmt.Sprintf("%-16s %-24s %5d passages %5d queries  overlap@10 %.4f  same rank %.4f  same top-1 %.4f  queries/s distill %.0f, OpenSearch %.0f",
				ds.Name, v.name, len(ds.Corpus), f.queries, f.overlap, f.sameRank, f.sameTop1, localQPS, nodeQPS[st]))
			for _, i := range f.differingQuerys[:min(3, len(f.differingQuerys))] {
				t.Logf("%s, %s: differs on %q\n  distill:    %v\n  OpenSearch: %v", ds.Name, v.name, queries[i], titles(byID, want[i]), titles(byID, got[st][i]))
			}
			w := float64(f.queries)
			all[vi].queries += f.queries
			all[vi].overlap += f.overlap * w
			all[vi].sameRank += f.sameRank * w
			all[vi].sameTop1 += f.sameTop1 * w
		}
	}
	for vi, v := range variants {
		a := all[vi]
		q := float64(a.queries)
		lines = append(lines, fmt.Sprintf("%-16s %-24s %14s %5d queries  overlap@10 %.4f  same rank %.4f  same top-1 %.4f",
			"all", v.name, "", a.queries, a.overlap/q, a.sameRank/q, a.sameTop1/q))
		if a.queries < 1000 {
			t.Errorf("%d queries, want at least 1000", a.queries)
		}
		if got := a.overlap / q; got < 0.95 {
			t.Errorf("%s: mean overlap@10 %.4f, want at least 0.95", v.name, got)
		}
		// Lucene's analysis and norms: Lucene's ranking (Pyserini's too).
		if got := a.overlap / q; v.opts.LuceneNorms && v.opts.Stemmer == analysis.Porter && got < 0.99 {
			t.Errorf("%s: mean overlap@10 %.4f, want at least 0.99", v.name, got)
		}
	}
	t.Log("distill BM25 against OpenSearch 2.19.6 (Lucene 9.12.3), top 10, k1 0.9, b 0.4, one query at a time:\n" + strings.Join(lines, "\n"))
}

func titles(byID map[string]string, ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out
}

// TestAnalyzerAgreesWithNode analyses every passage and question of the
// shared corpora with distill's analyzer and with the node's
// distill_english analyzer (the one Load defines), with each stemmer
// (Porter2, and Porter: Lucene's porter_stem), and reports the texts whose
// terms differ.
func TestAnalyzerAgreesWithNode(t *testing.T) {
	n := opensearchtest.Shared(t)
	sets := opensearchtest.Datasets(t)
	for _, st := range []analysis.Stemmer{analysis.Porter2, analysis.Porter} {
		t.Run(string(st), func(t *testing.T) {
			cfg := nodeConfig(n, "analyzer")
			load(t, cfg, sets[0].Corpus[:1], elastic.LoadOptions{Stemmer: string(st)})
			an := analysis.Analyzer{Stemmer: st}
			differ, total := 0, 0
			onlyDistill, onlyNode := map[string]int{}, map[string]int{}
			for _, ds := range sets {
				var texts []string
				for _, p := range ds.Corpus {
					texts = append(texts, passageText(p))
				}
				for _, q := range ds.Questions {
					texts = append(texts, q.Text)
				}
				for _, text := range texts {
					total++
					want := an.Terms(text)
					got := analyze(t, n, cfg.Index, text)
					if slices.Equal(want, got) {
						continue
					}
					differ++
					for _, w := range minus(want, got) {
						onlyDistill[w]++
					}
					for _, g := range minus(got, want) {
						onlyNode[g]++
					}
				}
			}
			t.Logf("%d of %d texts analysed differently\nonly distill: %v\nonly node: %v", differ, total, top(onlyDistill, 40), top(onlyNode, 40))
			if differ > 0 {
				t.Errorf("%d of %d texts analysed differently", differ, total)
			}
		})
	}
}

// minus returns the terms of a not matched by one of b (as multisets).
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, x := range b {
		left[x]++
	}
	var out []string
	for _, x := range a {
		if left[x] > 0 {
			left[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

func top(m map[string]int, k int) string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int { return m[b] - m[a] })
	var b strings.Builder
	for _, key := range keys[:min(k, len(keys))] {
		fmt.Fprintf(&b, "%q:%d ", key, m[key])
	}
	return b.String()
}
