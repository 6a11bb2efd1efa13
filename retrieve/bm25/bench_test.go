package bm25

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
)

// The benchmark corpus: 200,000 passages of about 40 words (a two-word title
// and 30-50 words of text) drawn from a Zipf vocabulary of 200,000 words
// whose most frequent ranks are English function words, and 1,000 queries of
// 4-8 words from the same distribution.
const (
	benchPassages = 200_000
	benchVocab    = 200_000
	benchQueries  = 1_000
)

var bench struct {
	once    sync.Once
	corpus  []data.Passage
	queries []string
}

func benchData() ([]data.Passage, []string) {
	bench.once.Do(func() {
		g := newGenerator(42, benchVocab)
		bench.corpus = g.corpus(benchPassages)
		for range benchQueries {
			bench.queries = append(bench.queries, g.query())
		}
	})
	return bench.corpus, bench.queries
}

// BenchmarkBuild measures a whole build on one core: analysis, inversion and
// writing the index file.
func BenchmarkBuild(b *testing.B) {
	corpus, _ := benchData()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		out := filepath.Join(dir, strconv.Itoa(i))
		if _, err := Build(context.Background(), out, data.NewPassageSlice(corpus), BuildOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
	b.ReportMetric(float64(len(corpus)*b.N)/b.Elapsed().Seconds(), "passages/s")
}

func openBenchIndex(b *testing.B) (*Index, []string) {
	corpus, queries := benchData()
	x := buildAndOpen(b, corpus, BuildOptions{})
	return x, queries
}

// benchRequests turns the queries into second-round requests: each excludes
// the six documents its first round would have returned, as the loop does.
func benchRequests(b *testing.B, x *Index, queries []string) []retrieve.Query {
	reqs := make([]retrieve.Query, len(queries))
	for i, q := range queries {
		hits, err := x.Search(context.Background(), retrieve.Query{Text: q, K: 6})
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = retrieve.Query{Text: q, K: 10}
		for _, h := range hits {
			reqs[i].Exclude = append(reqs[i].Exclude, h.ID)
		}
	}
	return reqs
}

// BenchmarkSearch measures top-10 search on one goroutine, hits with their
// whole passages: first-round queries, and second-round queries that exclude
// the six documents their first round returned.
func BenchmarkSearch(b *testing.B) {
	x, queries := openBenchIndex(b)
	second := benchRequests(b, x, queries)
	first := make([]retrieve.Query, len(second))
	for i, q := range second {
		first[i] = retrieve.Query{Text: q.Text, K: q.K}
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		reqs []retrieve.Query
	}{{"first-round", first}, {"exclude-seen", second}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := x.Search(ctx, bc.reqs[i%len(bc.reqs)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// BenchmarkSearchParallel measures the same searches from GOMAXPROCS
// goroutines: throughput should grow with cores.
func BenchmarkSearchParallel(b *testing.B) {
	x, queries := openBenchIndex(b)
	reqs := benchRequests(b, x, queries)
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			if _, err := x.Search(ctx, reqs[i%len(reqs)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkOpen measures loading a persisted index of benchPassages passages
// and reports its memory: heap bytes per passage allocated by Open, and
// resident bytes per passage (heap plus the mapped pages that 1,000 searches
// touched, read from /proc/self/smaps_rollup where available).
func BenchmarkOpen(b *testing.B) {
	corpus, queries := benchData()
	dir := filepath.Join(b.TempDir(), "idx")
	if _, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), BuildOptions{}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	var x *Index
	for range b.N {
		if x != nil {
			x.Close()
		}
		var err error
		if x, err = Open(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	defer x.Close()
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/open")
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(x.Len())
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/passage")
	for _, q := range queries {
		x.Search(context.Background(), retrieve.Query{Text: q, K: 10})
	}
	if m := mappedResident(dir); m >= 0 {
		b.ReportMetric((float64(after.HeapAlloc-before.HeapAlloc)+float64(m))/n, "resident-B/passage")
	}
	var size int64
	for _, f := range []string{indexFile, docsFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			b.Fatal(err)
		}
		size += st.Size()
	}
	b.ReportMetric(float64(size)/n, "file-B/passage")
}

// mappedResident returns the resident bytes of the mappings of dir's index
// files, from /proc/self/smaps, or -1 when it cannot tell.
func mappedResident(dir string) int64 {
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return -1
	}
	abs, _ := filepath.Abs(dir)
	var total int64 = -1
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && len(fields) >= 5 {
			name := fields[len(fields)-1]
			in = name == filepath.Join(abs, indexFile) || name == filepath.Join(abs, docsFile)
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			if total < 0 {
				total = 0
			}
			total += kb * 1024
		}
	}
	return total
}

// TestWriteBenchmarkCorpus writes the benchmark corpus (corpus.jsonl) and
// 20,000 queries (queries.tsv) to the directory named by
// DISTILL_WRITE_BENCH_CORPUS, for timing the CLI against other engines on
// the same data:
//
//	DISTILL_WRITE_BENCH_CORPUS=/tmp/bench go test -run TestWriteBenchmarkCorpus ./retrieve/bm25/
//	distill index --corpus /tmp/bench/corpus.jsonl --out /tmp/bench/idx
//	distill search --index /tmp/bench/idx -k 10 --queries /tmp/bench/queries.tsv > /dev/null
func TestWriteBenchmarkCorpus(t *testing.T) {
	dir := os.Getenv("DISTILL_WRITE_BENCH_CORPUS")
	if dir == "" {
		t.Skip("set DISTILL_WRITE_BENCH_CORPUS=DIR to write the benchmark corpus")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	corpus, _ := benchData()
	var b strings.Builder
	for _, p := range corpus {
		fmt.Fprintf(&b, "{\"id\":%q,\"title\":%q,\"text\":%q}\n", p.ID, p.Title, p.Text)
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newGenerator(43, benchVocab)
	b.Reset()
	for i := range 20_000 {
		fmt.Fprintf(&b, "q%d\t%s\n", i+1, g.query())
	}
	if err := os.WriteFile(filepath.Join(dir, "queries.tsv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
