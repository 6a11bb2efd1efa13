// Command scale measures the BM25 index at corpus sizes up to Wikipedia's:
// for each size it builds an index over a generated corpus (package synth:
// English-like text, 100-word passages as in the DPR Wikipedia split,
// nothing downloaded), then opens it and searches it, and prints one line
//
//	passages=N build_s=… peak_rss_mib=… disk_mib=… open_s=… qps_single=… qps_batch=… …
//
// The build and the searches run in child processes of their own, so that
// each size's peak resident memory (the build's; search_rss_mib is the
// searching process's) is its own. qps_single is one query at a time from
// one goroutine, qps_batch the batch search over all cores; both return
// the top 10 with their passages. On a shared machine wall times depend on
// the other work, so build_cpu_s (the build's CPU time, all cores) and
// qps_single_cpu (queries per second of the searching thread's own CPU
// time) are given beside them. The per-query figures (p50_ms, p99_ms,
// max_ms) are the searching thread's CPU time, the fastest of two runs,
// and worst_ratio compares each query's with its time at the first size:
// the largest ratio over the queries whose time at the first size is at
// least 0.1 ms (below that, timer resolution and caches dominate). Index
// directories go under -dir and are removed after each size unless -keep.
// With -times FILE, each query's time at each size is written to FILE (tab
// separated: passages, query number, milliseconds, query), to find the
// queries that grow most. With -cpuprofile PREFIX, the search process
// writes a CPU profile of its timed one-at-a-time passes at each size to
// PREFIX-N.pprof (go tool pprof reads it).
//
//	go run ./retrieve/bm25/scale -sizes 1000000,5000000,21000000
//
// With -write DIR it writes the corpus of the first size as JSON lines
// (DIR/corpus.jsonl) and the queries (DIR/queries.tsv) instead, so that
// other engines can be timed on the same data:
//
//	go run ./retrieve/bm25/scale -sizes 1000000 -write /tmp/corpus
//	distill index --kind elasticsearch --corpus /tmp/corpus/corpus.jsonl --es-index scale
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/distill-rag/distill/retrieve/internal/benchfile"

	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/internal/synth"
)

// Seeds of the corpus and of the queries.
const (
	corpusSeed = 1
	querySeed  = 2
)

type config struct {
	sizes   []int
	dir     string
	queries int
	words   int
	keep    bool
	write   string
	times   string
	profile string
	// child mode
	phase string
	n     int
	index string
}

func main() {
	var c config
	var sizes string
	flag.StringVar(&sizes, "sizes", "1000000,5000000,21000000", "comma-separated corpus sizes (passages)")
	flag.StringVar(&c.dir, "dir", os.TempDir(), "directory for the indexes (one at a time)")
	flag.IntVar(&c.queries, "queries", 1000, "number of queries")
	flag.IntVar(&c.words, "words", 100, "words per passage")
	flag.BoolVar(&c.keep, "keep", false, "keep the index directories")
	flag.StringVar(&c.times, "times", "", "write each query's time at each size to `FILE` (passages, query, ms, text; tab separated)")
	flag.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the one-at-a-time passes at each size N to `PREFIX`-N.pprof")
	flag.StringVar(&c.write, "write", "", "write the corpus of the first size and the queries to `DIR` (corpus.jsonl, queries.tsv), for other engines, instead of measuring")
	flag.StringVar(&c.phase, "phase", "", "internal: build or search, run as a child process")
	flag.IntVar(&c.n, "n", 0, "internal: corpus size of the child")
	flag.StringVar(&c.index, "index", "", "internal: index directory of the child")
	flag.Parse()
	var err error
	switch c.phase {
	case "build":
		err = childBuild(c)
	case "search":
		err = childSearch(c)
	case "":
		for _, s := range strings.Split(sizes, ",") {
			n, perr := strconv.Atoi(strings.TrimSpace(s))
			if perr != nil || n < 1 {
				err = fmt.Errorf("-sizes: %q is not a positive number", s)
				break
			}
			c.sizes = append(c.sizes, n)
		}
		switch {
		case err != nil:
		case c.write != "":
			err = writeCorpus(c)
		default:
			err = run(c)
		}
	default:
		err = fmt.Errorf("unknown -phase %q", c.phase)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// buildResult and searchResult are what the children print as JSON.
type buildResult struct {
	Seconds  float64 `json:"seconds"`
	CPU      float64 `json:"cpu_seconds"`
	Terms    int64   `json:"terms"`
	Postings int64   `json:"postings"`
}

type searchResult struct {
	OpenSeconds float64   `json:"open_seconds"`
	QPSSingle   float64   `json:"qps_single"`
	QPSCPU      float64   `json:"qps_single_cpu"`
	QPSBatch    float64   `json:"qps_batch"`
	Times       []float64 `json:"times"` // CPU seconds per query, fastest of two
}

func run(c config) error {
	var base []float64
	var times strings.Builder
	texts := make([]string, c.queries)
	w := synth.NewWords(querySeed)
	for i := range texts {
		texts[i] = w.Query()
	}
	for _, n := range c.sizes {
		dir := filepath.Join(c.dir, fmt.Sprintf("distill-scale-%d", n))
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		var b buildResult
		buildRSS, err := child(c, "build", n, dir, &b)
		if err != nil {
			return err
		}
		disk, err := benchfile.DirSize(dir)
		if err != nil {
			return err
		}
		var s searchResult
		searchRSS, err := child(c, "search", n, dir, &s)
		if err != nil {
			return err
		}
		if !c.keep {
			os.RemoveAll(dir)
		}
		if base == nil {
			base = s.Times
		}
		worst := 0.0
		for i, t := range s.Times {
			if i < len(base) && base[i] >= 1e-4 {
				worst = max(worst, t/base[i])
			}
		}
		for i, t := range s.Times {
			fmt.Fprintf(&times, "%d\t%d\t%.4f\t%s\n", n, i, 1000*t, texts[i])
		}
		if c.times != "" {
			if err := os.WriteFile(c.times, []byte(times.String()), 0o644); err != nil {
				return err
			}
		}
		sorted := slices.Clone(s.Times)
		slices.Sort(sorted)
		fmt.Printf("passages=%d build_s=%.1f peak_rss_mib=%.0f disk_mib=%.0f open_s=%.3f qps_single=%.0f qps_batch=%.0f build_cpu_s=%.0f qps_single_cpu=%.0f terms=%d postings=%d search_rss_mib=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f worst_ratio=%.1f\n",
			n, b.Seconds, mib(buildRSS), mib(disk), s.OpenSeconds, s.QPSSingle, s.QPSBatch, b.CPU, s.QPSCPU, b.Terms, b.Postings,
			mib(searchRSS), 1000*quantile(sorted, 0.5), 1000*quantile(sorted, 0.99), 1000*sorted[len(sorted)-1], worst)
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func quantile(sorted []float64, q float64) float64 {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// child runs this program with -phase and decodes the JSON it prints into
// out; it returns the child's peak resident memory in bytes.
func child(c config, phase string, n int, dir string, out any) (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, "-phase", phase, "-n", strconv.Itoa(n), "-index", dir,
		"-queries", strconv.Itoa(c.queries), "-words", strconv.Itoa(c.words), "-cpuprofile", c.profile)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s %d passages: %w", phase, n, err)
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		return 0, fmt.Errorf("%s %d passages: %w", phase, n, err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, errors.New("no resource usage from the child process")
	}
	return ru.Maxrss * 1024, nil // kilobytes on Linux
}

func childBuild(c config) error {
	src := synth.NewCorpus(corpusSeed, c.n, synth.Options{Words: c.words})
	start := time.Now()
	last := time.Now()
	st, err := bm25.Build(context.Background(), c.index, src, bm25.BuildOptions{
		SourceName: fmt.Sprintf("synth seed %d, %d passages of %d words", corpusSeed, c.n, c.words),
		Progress: func(done int64) {
			if time.Since(last) > 30*time.Second {
				last = time.Now()
				fmt.Fprintf(os.Stderr, "scale: %d of %d passages indexed in %.0fs\n", done, c.n, time.Since(start).Seconds())
			}
		},
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(buildResult{
		Seconds: time.Since(start).Seconds(), CPU: cpuSeconds(), Terms: st.Terms, Postings: st.Postings,
	})
}

func childSearch(c config) error {
	ctx := context.Background()
	start := time.Now()
	x, err := bm25.Open(c.index)
	if err != nil {
		return err
	}
	defer x.Close()
	res := searchResult{OpenSeconds: time.Since(start).Seconds()}
	w := synth.NewWords(querySeed)
	queries := make([]retrieve.BatchQuery, c.queries)
	for i := range queries {
		queries[i] = retrieve.BatchQuery{ID: strconv.Itoa(i), Text: w.Query()}
	}
	// The first pass brings the pages the queries touch into memory; the
	// next two are timed, and each query keeps its faster time. The
	// goroutine keeps its thread, whose CPU time is its own.
	runtime.LockOSThread()
	res.Times = make([]float64, len(queries))
	stopProfile := func() error { return nil }
	for pass := range 3 {
		if pass == 1 && c.profile != "" {
			if stopProfile, err = startProfile(fmt.Sprintf("%s-%d.pprof", c.profile, c.n)); err != nil {
				return err
			}
		}
		wall, cpu := time.Duration(0), 0.0
		for i, q := range queries {
			t, c := time.Now(), threadCPU()
			if _, err := x.Search(ctx, retrieve.Query{Text: q.Text, K: 10}); err != nil {
				return err
			}
			wall += time.Since(t)
			d := threadCPU() - c
			cpu += d
			if pass == 1 || d < res.Times[i] {
				res.Times[i] = d
			}
		}
		if pass > 0 {
			res.QPSSingle = max(res.QPSSingle, float64(len(queries))/wall.Seconds())
			res.QPSCPU = max(res.QPSCPU, float64(len(queries))/cpu)
		}
	}
	runtime.UnlockOSThread()
	if err := stopProfile(); err != nil {
		return err
	}
	// The batch runs the queries again and again for two seconds at least.
	t, done := time.Now(), 0
	for done == 0 || time.Since(t) < 2*time.Second {
		err = retrieve.SearchBatch(ctx, x, queries, retrieve.BatchOptions{K: 10, Workers: runtime.GOMAXPROCS(0)},
			func(retrieve.BatchResult) error { return nil })
		if err != nil {
			return err
		}
		done += len(queries)
	}
	res.QPSBatch = float64(done) / time.Since(t).Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// startProfile starts a CPU profile into path; stop ends it and closes
// the file.
func startProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// cpuSeconds returns the user and system CPU time of the process, or 0
// where it cannot tell.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// threadCPU returns the calling thread's CPU time, to the nanosecond
// (Linux's CLOCK_THREAD_CPUTIME_ID), or 0 where it cannot tell.
func threadCPU() float64 {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}

// writeCorpus writes the corpus of the first size and the queries as
// files.
func writeCorpus(c config) error {
	if err := os.MkdirAll(c.write, 0o755); err != nil {
		return err
	}
	write := func(name string, fill func(w *bufio.Writer) error) error {
		return benchfile.Write(filepath.Join(c.write, name), fill)
	}
	src := synth.NewCorpus(corpusSeed, c.sizes[0], synth.Options{Words: c.words})
	_, err := benchfile.WriteCorpus(filepath.Join(c.write, "corpus.jsonl"), src.Next)
	if err != nil {
		return err
	}
	return write("queries.tsv", func(w *bufio.Writer) error {
		words := synth.NewWords(querySeed)
		for i := range c.queries {
			fmt.Fprintf(w, "q%d\t%s\n", i, words.Query())
		}
		return nil
	})
}
