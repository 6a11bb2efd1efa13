package dense

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/viterin/vek/vek32"

	"github.com/distill-rag/distill/data"
)

// The benchmark index: unit vectors of dimension 768 (E5-base) around one
// random centre per 1,000 vectors, with Gaussian noise as long as the
// centre (a cosine of about 0.5 within a cluster), seeded. 100,000 vectors
// by default; 1,000,000 with DISTILL_DENSE_BENCH_1M set (3 GiB of float32,
// plus 1.5 and 0.8 GiB for the float16 and int8 copies, in memory and in a
// temporary directory; the IVF build takes minutes on few cores):
//
//	go test -run '^$' -bench . ./retrieve/dense/
//	DISTILL_DENSE_BENCH_1M=1 go test -run '^$' -bench . -benchtime 3s -timeout 60m ./retrieve/dense/
const (
	benchDim     = 768
	benchQueries = 256
	benchSpread  = 1.0
	bench1MEnv   = "DISTILL_DENSE_BENCH_1M"
)

func benchRows() int {
	if os.Getenv(bench1MEnv) != "" {
		return 1_000_000
	}
	return 100_000
}

// benchState is built once per process and shared by the benchmarks; the
// files are removed by TestMain.
var benchState struct {
	once    sync.Once
	root    string
	n       int
	queries [][]float32
	err     error
	mu      sync.Mutex
	dirs    map[Precision]string
	vecs    []float32 // dropped once every precision is written
	ivfOnce sync.Once
	ivf     IVFStats
	ivfErr  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchState.root != "" {
		os.RemoveAll(benchState.root)
	}
	os.Exit(code)
}

// benchIndex returns the directory of the benchmark index at prec, writing
// it on first use.
func benchIndex(b *testing.B, prec Precision) (dir string, n int, queries [][]float32) {
	b.Helper()
	s := &benchState
	s.once.Do(func() {
		s.n = benchRows()
		if s.n < 1_000_000 {
			b.Logf("%d vectors; set %s=1 for the 1,000,000-vector run", s.n, bench1MEnv)
		}
		start := time.Now()
		cs := centres(1, max(1, s.n/1000), benchDim)
		s.vecs = around(cs, 1, s.n, benchDim, benchSpread)
		// The queries come from the same clusters, with noise of their own.
		qv := around(cs, 2, benchQueries, benchDim, benchSpread)
		for i := range benchQueries {
			s.queries = append(s.queries, qv[i*benchDim:(i+1)*benchDim])
		}
		s.root, s.err = os.MkdirTemp("", "distill-dense-bench-")
		s.dirs = map[Precision]string{}
		b.Logf("generated %d x %d vectors in %v", s.n, benchDim, time.Since(start).Round(time.Millisecond))
	})
	if s.err != nil {
		b.Fatal(s.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.dirs[prec]; ok {
		return d, s.n, s.queries
	}
	if s.vecs == nil {
		b.Fatal("benchmark vectors already dropped")
	}
	dir = filepath.Join(s.root, string(prec))
	start := time.Now()
	if err := writeRawIndex(dir, s.vecs, s.n, benchDim, prec); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote the %s index in %v", prec, time.Since(start).Round(time.Millisecond))
	s.dirs[prec] = dir
	if len(s.dirs) == len(Precisions()) {
		s.vecs = nil
		runtime.GC()
	}
	return dir, s.n, s.queries
}

// writeRawIndex writes an index of given vectors without embedding them:
// passage i is "d<i>".
func writeRawIndex(dir string, vecs []float32, n, dim int, prec Precision) error {
	return writeGenerated(dir, n, dim, prec, func(lo, hi int) []float32 { return vecs[lo*dim : hi*dim] })
}

// bandwidthBufs are the buffers memoryBandwidth copies and reads.
var bandwidthBufs struct {
	once     sync.Once
	src, dst []float32
}

// memoryBandwidth measures copying a 512 MiB buffer (bytes copied per
// second, each read once and written once) and reading one (a sum), on one
// goroutine and split among GOMAXPROCS; the best of 5 runs each. Shared
// machines vary from minute to minute: the benchmarks measure it next to
// each figure they compare with it.
func memoryBandwidth() (copy1, copyAll, read1, readAll float64) {
	const size = 512 << 20
	bb := &bandwidthBufs
	bb.once.Do(func() {
		bb.src = make([]float32, size/4)
		bb.dst = make([]float32, size/4)
		for i := range bb.src {
			bb.src[i] = float32(i & 1023)
		}
		copy(bb.dst, bb.src) // fault the pages in
	})
	src, dst := bb.src, bb.dst
	p := runtime.GOMAXPROCS(0)
	best := func(run func()) float64 {
		var fastest time.Duration
		for i := range 5 {
			start := time.Now()
			run()
			if d := time.Since(start); i == 0 || d < fastest {
				fastest = d
			}
		}
		return size / fastest.Seconds()
	}
	split := func(fn func(lo, hi int)) {
		var wg sync.WaitGroup
		for i := range p {
			wg.Go(func() { fn(i*len(src)/p, (i+1)*len(src)/p) })
		}
		wg.Wait()
	}
	var sink float32
	var mu sync.Mutex
	copy1 = best(func() { copy(dst, src) })
	copyAll = best(func() { split(func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) }) })
	read1 = best(func() { sink += vek32.Sum(src) })
	readAll = best(func() {
		split(func(lo, hi int) {
			s := vek32.Sum(src[lo:hi])
			mu.Lock()
			sink += s
			mu.Unlock()
		})
	})
	if sink == 42 {
		println()
	}
	return copy1, copyAll, read1, readAll
}

// BenchmarkMemoryBandwidth reports the bounds the scan is compared with.
func BenchmarkMemoryBandwidth(b *testing.B) {
	var c1, ca, r1, ra float64
	for b.Loop() {
		c1, ca, r1, ra = memoryBandwidth()
	}
	b.ReportMetric(c1/1e9, "copy1-GB/s")
	b.ReportMetric(ca/1e9, "copy-GB/s")
	b.ReportMetric(r1/1e9, "read1-GB/s")
	b.ReportMetric(ra/1e9, "read-GB/s")
}

// BenchmarkExactSearch measures exact top-10 search by inner product over
// the benchmark index: one query at a time (its rows split among
// GOMAXPROCS goroutines) and 64 at a time (SearchBatchVectors), at each
// precision. scan-GB/s is the stored bytes a query must read times
// queries/s; scan/copy and scan/read compare it with the copy and read
// bandwidths of all cores, measured right after (above 1 for batches,
// which read each block of rows once for 64 queries; mem-GB/s is what they
// actually read).
func BenchmarkExactSearch(b *testing.B) {
	ctx := context.Background()
	for _, prec := range Precisions() {
		for _, batch := range []int{1, 64} {
			name := fmt.Sprintf("%s/batch=%d", prec, batch)
			b.Run(name, func(b *testing.B) {
				dir, n, queries := benchIndex(b, prec)
				x, err := Open(dir, OpenOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer x.Close()
				// Fault the pages in before timing.
				if _, err := x.SearchVector(ctx, queries[0], 10, nil); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				i := 0
				for b.Loop() {
					if batch == 1 {
						if _, err := x.SearchVector(ctx, queries[i%len(queries)], 10, nil); err != nil {
							b.Fatal(err)
						}
					} else {
						lo := (i * batch) % len(queries)
						if _, err := x.SearchBatchVectors(ctx, queries[lo:lo+batch], 10, nil); err != nil {
							b.Fatal(err)
						}
					}
					i++
				}
				qps := float64(b.N*batch) / b.Elapsed().Seconds()
				b.StopTimer()
				_, copyAll, _, readAll := memoryBandwidth()
				b.ReportMetric(copyAll/1e9, "copy-GB/s")
				perQuery := float64(n) * float64(benchDim*prec.bytesPer())
				if prec == Int8 {
					perQuery += 4 * float64(n)
				}
				b.ReportMetric(qps, "queries/s")
				b.ReportMetric(perQuery*qps/1e9, "scan-GB/s")
				b.ReportMetric(perQuery*qps/copyAll, "scan/copy")
				b.ReportMetric(perQuery*qps/readAll, "scan/read")
				if batch > 1 {
					b.ReportMetric(perQuery*qps/float64(batch)/1e9, "mem-GB/s")
				}
			})
		}
	}
}

// benchIVF builds the IVF partitions of the float32 benchmark index once.
func benchIVF(b *testing.B) (dir string, n int, queries [][]float32, st IVFStats) {
	dir, n, queries = benchIndex(b, Float32)
	s := &benchState
	s.ivfOnce.Do(func() {
		s.ivf, s.ivfErr = BuildIVF(context.Background(), dir, IVFOptions{Seed: 1})
		if s.ivfErr == nil {
			fmt.Fprintf(os.Stderr, "IVF over %d vectors: %d partitions (largest %d, %d empty), %d sample vectors, %d iterations, built in %v\n",
				n, s.ivf.NList, s.ivf.LargestList, s.ivf.EmptyLists, s.ivf.Sample, s.ivf.Iterations, s.ivf.Elapsed.Round(time.Millisecond))
		}
	})
	if s.ivfErr != nil {
		b.Fatal(s.ivfErr)
	}
	return dir, n, queries, s.ivf
}

// BenchmarkIVF measures top-10 search through the IVF partitions, one query
// at a time, for several nprobe: recall@10 against the exact search,
// queries/s, and the speed-up over exact search one query at a time
// (exact-q/s, measured right after). Two query sets: drawn from the clusters
// of the data ("cluster"), and random directions ("random": far from every
// cluster, so their neighbours spread over many partitions: the hard case).
// nlist and build-s describe the partitioning (default options).
func BenchmarkIVF(b *testing.B) {
	ctx := context.Background()
	dir, _, clusterQueries, st := benchIVF(b)
	exact, err := Open(dir, OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer exact.Close()
	rnd := randomUnit(3, benchQueries, benchDim)
	randomQueries := make([][]float32, benchQueries)
	for i := range randomQueries {
		randomQueries[i] = rnd[i*benchDim : (i+1)*benchDim]
	}
	// Exact search one query at a time, measured next to each IVF figure
	// (a shared machine's speed drifts).
	exactQPS := func() float64 {
		start := time.Now()
		runs := 0
		for time.Since(start) < time.Second || runs < 3 {
			if _, err := exact.SearchVector(ctx, clusterQueries[runs%len(clusterQueries)], 10, nil); err != nil {
				b.Fatal(err)
			}
			runs++
		}
		return float64(runs) / time.Since(start).Seconds()
	}
	for _, set := range []struct {
		name    string
		queries [][]float32
	}{{"cluster", clusterQueries}, {"random", randomQueries}} {
		want, err := exact.SearchBatchVectors(ctx, set.queries, 10, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, nprobe := range []int{4, 8, 16, 32, 64, 128, 256} {
			if nprobe > st.NList {
				continue
			}
			b.Run(fmt.Sprintf("queries=%s/nprobe=%d", set.name, nprobe), func(b *testing.B) {
				x, err := Open(dir, OpenOptions{NProbe: nprobe})
				if err != nil {
					b.Fatal(err)
				}
				defer x.Close()
				got, err := x.SearchBatchVectors(ctx, set.queries, 10, nil)
				if err != nil {
					b.Fatal(err)
				}
				r := recall(want, got)
				b.ResetTimer()
				i := 0
				for b.Loop() {
					if _, err := x.SearchVector(ctx, set.queries[i%len(set.queries)], 10, nil); err != nil {
						b.Fatal(err)
					}
					i++
				}
				qps := float64(b.N) / b.Elapsed().Seconds()
				b.StopTimer()
				e := exactQPS()
				b.ReportMetric(r, "recall@10")
				b.ReportMetric(qps, "queries/s")
				b.ReportMetric(e, "exact-q/s")
				b.ReportMetric(qps/e, "speedup")
				b.ReportMetric(float64(st.NList), "nlist")
				b.ReportMetric(st.Elapsed.Seconds(), "build-s")
			})
		}
	}
}

// BenchmarkBuild measures the build's own work (reading, checkpoints, the
// vector file) with an embedder that costs nothing: 20,000 passages of
// dimension 768.
func BenchmarkBuild(b *testing.B) {
	const n = 20_000
	vecs := clustered(5, n, benchDim, 20, benchSpread)
	corpus := vecCorpus(n)
	emb := &vecEmbedder{dim: benchDim, vecs: vecs}
	root := b.TempDir()
	i := 0
	for b.Loop() {
		dir := filepath.Join(root, strconv.Itoa(i))
		if _, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), emb, BuildOptions{Model: "m"}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dir)
		b.StartTimer()
		i++
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "passages/s")
}
