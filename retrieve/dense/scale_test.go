package dense

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
)

// TestScaleTable measures the dense index at a size given by
// DISTILL_DENSE_SCALE (rows; E5-small's dimension 384 unless
// DISTILL_DENSE_SCALE_DIM says otherwise) and prints the memory, recall
// and speed of each precision, exact and through IVF, as a Markdown table:
//
//	make bench-scale-dense DENSE_ROWS=5000000
//
// The vectors (unit vectors around one random centre per 1,000 rows, as
// the benchmarks use) are generated a block at a time into a float32
// index, the "embeddings on disk"; the float16 and int8 indexes are
// written from it a block at a time, and IVF partitions (nlist
// DISTILL_DENSE_SCALE_NLIST, default 2048) are built over them by
// BuildIVF, which reads vectors.bin a block at a time: each step's peak
// resident memory is reported. recall@10 is against exact search over the
// float32 vectors, for 1,000 queries from the same clusters; queries/s is
// one query at a time (its rows split over all cores), next to the memory
// bandwidth measured in the same run. The files go under
// DISTILL_SCALE_DIR (default the temporary directory) and are removed at
// the end: about 3.5 times the float32 vectors (7.7 GB at 5M x 384), so
// 27 GB at 5M x 384.
func TestScaleTable(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DISTILL_DENSE_SCALE"))
	if n <= 0 {
		t.Skip("set DISTILL_DENSE_SCALE=ROWS to measure the dense index at that size")
	}
	dim := envInt("DISTILL_DENSE_SCALE_DIM", 384)
	nlist := envInt("DISTILL_DENSE_SCALE_NLIST", 2048)
	root, err := os.MkdirTemp(os.Getenv("DISTILL_SCALE_DIR"), "distill-dense-scale-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	ctx := context.Background()
	const nq = 1000
	cs := centres(1, max(1, n/1000), dim)
	qv := around(cs, 2, nq, dim, benchSpread)
	queries := make([][]float32, nq)
	for i := range queries {
		queries[i] = qv[i*dim : (i+1)*dim]
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "scale: "+format+"\n", args...)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d x %d vectors (unit, around %d centres), %d queries from the same clusters, %d cores\n\n",
		n, dim, len(cs)/dim, nq, runtime.GOMAXPROCS(0))

	// The float32 index, generated a block at a time.
	dirs := map[Precision]string{}
	step := func(what string, fn func() error) (time.Duration, float64) {
		t.Helper()
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS()
		start := time.Now()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d, peak := time.Since(start), peakRSSMiB()
		logf("%s: %v, peak RSS %.0f MiB", what, d.Round(time.Second), peak)
		return d, peak
	}
	dirs[Float32] = filepath.Join(root, "float32")
	_, genPeak := step("generate the float32 index", func() error {
		return writeGenerated(dirs[Float32], n, dim, Float32, func(lo, hi int) []float32 {
			return around(cs, uint64(lo)+3, hi-lo, dim, benchSpread)
		})
	})
	fmt.Fprintf(&out, "float32 index generated in blocks: peak RSS %.0f MiB\n", genPeak)
	for _, prec := range []Precision{Float16, Int8} {
		dirs[prec] = filepath.Join(root, string(prec))
		d, peak := step("write the "+string(prec)+" index from the float32 vectors", func() error {
			return convertIndex(dirs[Float32], dirs[prec], prec)
		})
		fmt.Fprintf(&out, "%s index written from the float32 vectors on disk in %.0fs: peak RSS %.0f MiB\n", prec, d.Seconds(), peak)
	}

	// IVF partitions of the compact indexes (before the bandwidth probe,
	// whose buffers would count in the peaks).
	type ivfBuild struct {
		st   IVFStats
		peak float64
	}
	ivfs := map[Precision]ivfBuild{}
	for _, prec := range []Precision{Float16, Int8} {
		var b ivfBuild
		_, b.peak = step("IVF over the "+string(prec)+" index", func() error {
			var err error
			b.st, err = BuildIVF(ctx, dirs[prec], IVFOptions{NList: nlist, Seed: 1})
			return err
		})
		ivfs[prec] = b
	}

	// Ground truth: exact search over the float32 vectors, 64 queries a scan.
	truth := searchAll(t, dirs[Float32], OpenOptions{}, queries)
	_, _, _, readAll := memoryBandwidth()
	fmt.Fprintf(&out, "memory bandwidth (read, all cores): %.1f GB/s\n\n", readAll/1e9)
	fmt.Fprintln(&out, "| precision | search | nprobe | recall@10 | queries/s | ns per vector scored | scan/read bandwidth | file MiB | resident MiB | build s | build peak RSS MiB |")
	fmt.Fprintln(&out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, prec := range Precisions() {
		dir := dirs[prec]
		got := truth
		if prec != Float32 {
			got = searchAll(t, dir, OpenOptions{}, queries)
		}
		qps, rss := timeSingle(t, dir, OpenOptions{}, queries, 20)
		perQuery := float64(n) * float64(dim*prec.bytesPer())
		if prec == Int8 {
			perQuery += 4 * float64(n)
		}
		_, _, _, readAll := memoryBandwidth()
		fmt.Fprintf(&out, "| %s | exact | | %.4f | %.1f | %.2f | %.2f | %.0f | %.0f | | |\n",
			prec, recall(truth, got), qps, 1e9/(qps*float64(n)), perQuery*qps/readAll, fileMiB(filepath.Join(dir, vectorsFile)), rss)
		b, ok := ivfs[prec]
		if !ok {
			continue
		}
		for _, nprobe := range []int{8, 16, 32, 64, 128} {
			opts := OpenOptions{NProbe: nprobe}
			got := searchAll(t, dir, opts, queries)
			qps, rss := timeSingle(t, dir, opts, queries, 300)
			scored := probedRows(t, dir, nprobe, queries[:min(300, len(queries))])
			fmt.Fprintf(&out, "| %s | IVF (%d lists) | %d | %.4f | %.0f | %.2f | | %.0f | %.0f | %.0f | %.0f |\n",
				prec, b.st.NList, nprobe, recall(truth, got), qps, 1e9/(qps*scored), fileMiB(filepath.Join(dir, ivfFile)), rss, b.st.Elapsed.Seconds(), b.peak)
		}
	}
	fmt.Fprintln(&out, "\nresident MiB: the searching process's resident memory after the timed queries, less before Open.")
	fmt.Println(out.String())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// writeGenerated writes an index of n rows made by gen (as float32, a
// block of rows at a time), stored at prec; passage i is "d<i>".
func writeGenerated(dir string, n, dim int, prec Precision, gen func(lo, hi int) []float32) error {
	if err := writeTinyDocs(dir, n); err != nil {
		return err
	}
	const block = 1 << 16
	h := newVectorsHeader(prec, n, dim, true, 0x5ca1e)
	err := writeVectorFile(filepath.Join(dir, vectorsFile), h, func(emit func([]float32) error) error {
		for lo := 0; lo < n; lo += block {
			if err := emit(gen(lo, min(lo+block, n))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeScaleMeta(dir, prec, n, dim, h.BuildID)
}

// convertIndex writes the index at src again at another precision,
// reading its vectors a block at a time.
func convertIndex(src, dst string, prec Precision) error {
	vf, err := openVectorFile(filepath.Join(src, vectorsFile))
	if err != nil {
		return err
	}
	defer vf.Close()
	n, dim := vf.n(), int(vf.h.Dim)
	if err := writeTinyDocs(dst, n); err != nil {
		return err
	}
	h := newVectorsHeader(prec, n, dim, true, vf.h.BuildID+1)
	err = writeVectorFile(filepath.Join(dst, vectorsFile), h, func(emit func([]float32) error) error {
		const block = 1 << 14
		var buf blockBuf
		for lo := 0; lo < n; lo += block {
			hi := min(lo+block, n)
			rows, err := vf.block(lo, hi, &buf)
			if err != nil {
				return err
			}
			if err := emit(rows.f32); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeScaleMeta(dst, prec, n, dim, h.BuildID)
}

func writeTinyDocs(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w, err := newDocWriter(dir)
	if err != nil {
		return err
	}
	for i := range n {
		id := "d" + strconv.Itoa(i)
		if err := w.add(data.Passage{ID: id, Title: id, Text: "passage " + id}); err != nil {
			w.abort()
			return err
		}
	}
	return w.finish()
}

func writeScaleMeta(dir string, prec Precision, n, dim int, id uint64) error {
	return writeMeta(dir, Meta{
		Format: Format, Version: vectorsVersion, Model: "synthetic", Dim: dim,
		QueryPrefix: DefaultQueryPrefix, PassagePrefix: DefaultPassagePrefix, Precision: prec,
		Normalized: true, Metric: "inner_product", Passages: int64(n), BuildID: fmt.Sprintf("%016x", id),
	})
}

// searchAll answers every query (top 10), 64 at a time.
func searchAll(t *testing.T, dir string, opts OpenOptions, queries [][]float32) [][]retrieve.Hit {
	t.Helper()
	x, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var out [][]retrieve.Hit
	for lo := 0; lo < len(queries); lo += queryBatch {
		got, err := x.SearchBatchVectors(context.Background(), queries[lo:min(lo+queryBatch, len(queries))], 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got...)
	}
	return out
}

// timeSingle opens the index, runs one query (to bring its pages in),
// then times up to limit queries one at a time (at least 3 seconds'
// worth, or all of them), and returns queries/s and the resident memory
// the index added, in MiB.
func timeSingle(t *testing.T, dir string, opts OpenOptions, queries [][]float32, limit int) (float64, float64) {
	t.Helper()
	ctx := context.Background()
	runtime.GC()
	debug.FreeOSMemory()
	before := rssMiB()
	x, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.SearchVector(ctx, queries[len(queries)-1], 10, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := 0
	for done < min(limit, len(queries)) && (done < 3 || time.Since(start) < 3*time.Second) {
		if _, err := x.SearchVector(ctx, queries[done], 10, nil); err != nil {
			t.Fatal(err)
		}
		done++
	}
	qps := float64(done) / time.Since(start).Seconds()
	return qps, rssMiB() - before
}

// probedRows is the mean number of rows an IVF search of the queries
// scores: the sizes of the nprobe partitions nearest each.
func probedRows(t *testing.T, dir string, nprobe int, queries [][]float32) float64 {
	t.Helper()
	x, err := Open(dir, OpenOptions{NProbe: nprobe})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	total := 0
	for _, q := range queries {
		pq, err := x.prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		order := x.ivf.probeOrder(pq, x.Dim())
		slices.SortFunc(order, compareCands)
		for _, c := range order[:min(nprobe, len(order))] {
			total += int(x.ivf.listOff[c.row+1] - x.ivf.listOff[c.row])
		}
	}
	return float64(total) / float64(len(queries))
}

func fileMiB(path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return float64(st.Size()) / (1 << 20)
}

// resetPeakRSS starts a new peak of resident memory (Linux: clear_refs 5).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSSMiB() float64 { return procStatusMiB("VmHWM:") }

func rssMiB() float64 { return procStatusMiB("VmRSS:") }

// procStatusMiB reads a kB field of /proc/self/status, or -1.
func procStatusMiB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}
