package dense

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
)

// peerRow is a row of retrieve/peers' JSON file (its Row, dense fields).
type peerRow struct {
	Engine    string         `json:"engine"`
	Corpus    string         `json:"corpus"`
	Passages  int            `json:"passages"`
	Queries   int            `json:"queries"`
	BuildS    float64        `json:"build_s"`
	IndexMB   float64        `json:"index_mb"`
	QPSSingle float64        `json:"qps_single"`
	QPSBatch  float64        `json:"qps_batch"`
	P50MS     float64        `json:"p50_ms"`
	P99MS     float64        `json:"p99_ms"`
	Precision string         `json:"precision"`
	NProbe    int            `json:"nprobe,omitempty"`
	Recall10  *float64       `json:"recall10"`
	Settings  map[string]any `json:"settings,omitempty"`
	Error     string         `json:"error,omitempty"`
	LoadAvg   string         `json:"load_average,omitempty"`
}

// TestPeersDense holds the dense index against FAISS on the same generated
// vectors (DISTILL_PEERS_DENSE_ROWS, default 1,000,000, x 384, unit
// vectors around one centre per 1,000 rows) and the same 1,000 queries:
// distill exact at float32, float16 and int8 and IVF (float32 and int8)
// against FAISS IndexFlatIP, IndexIVFFlat and IndexIVFScalarQuantizer (8
// bits a dimension, the peer of distill's int8 IVF) with the same number of lists
// (DISTILL_PEERS_NLIST, default 2048) and the same nprobes. recall@10 is
// against distill's exact float32 search. Queries/s one at a time run on
// one thread (OpenOptions.Workers 1; FAISS with one OpenMP thread), in
// batch on every core. Rows are added to the file DISTILL_PEERS_JSON
// (retrieve/peers' -json; make bench-peers sets both), and FAISS runs in the
// Python of DISTILL_PEERS_PYTHON. About 8 GB of files under
// DISTILL_SCALE_DIR at 1M rows, removed at the end.
func TestPeersDense(t *testing.T) {
	jsonPath := os.Getenv("DISTILL_PEERS_JSON")
	if jsonPath == "" {
		t.Skip("set DISTILL_PEERS_JSON=FILE (make bench-peers) to hold the dense index against FAISS")
	}
	python := os.Getenv("DISTILL_PEERS_PYTHON")
	n, dim := envInt("DISTILL_PEERS_DENSE_ROWS", 1_000_000), 384
	nlist, nprobes := envInt("DISTILL_PEERS_NLIST", 2048), []int{8, 16, 32, 64}
	root, err := os.MkdirTemp(os.Getenv("DISTILL_SCALE_DIR"), "distill-dense-peers-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	const nq = 1000
	cs := centres(1, max(1, n/1000), dim)
	gen := func(lo, hi int) []float32 { return around(cs, uint64(lo)+3, hi-lo, dim, benchSpread) }
	qv := around(cs, 2, nq, dim, benchSpread)
	queries := make([][]float32, nq)
	for i := range queries {
		queries[i] = qv[i*dim : (i+1)*dim]
	}
	// The embeddings on disk: a float32 index each precision is written
	// from, and the same rows as raw float32 for FAISS.
	src := filepath.Join(root, "source")
	if err := writeGenerated(src, n, dim, Float32, gen); err != nil {
		t.Fatal(err)
	}
	raw, rawQueries := filepath.Join(root, "vectors.f32"), filepath.Join(root, "queries.f32")
	if err := writeRaw(raw, n, gen); err != nil {
		t.Fatal(err)
	}
	if err := writeRaw(rawQueries, nq, func(lo, hi int) []float32 { return qv[lo*dim : hi*dim] }); err != nil {
		t.Fatal(err)
	}
	corpus := fmt.Sprintf("vectors-%dx%d", n, dim)
	var rows []peerRow
	var truth [][]retrieve.Hit
	for _, prec := range []Precision{Float32, Float16, Int8} {
		dir := filepath.Join(root, string(prec))
		start := time.Now()
		if err := convertIndex(src, dir, prec); err != nil {
			t.Fatal(err)
		}
		r := peerRow{Engine: "distill", Precision: string(prec), BuildS: time.Since(start).Seconds(),
			IndexMB:  fileMiB(filepath.Join(dir, vectorsFile)) * 1.048576,
			Settings: map[string]any{"search": "exact, one query's rows split over OpenOptions.Workers", "build": "written from the float32 vectors on disk"}}
		got := peerMeasure(t, dir, OpenOptions{}, queries, &r)
		if prec == Float32 {
			truth = got
		}
		rows = append(rows, withRecall(r, truth, got))
		if prec == Float16 {
			continue
		}
		start = time.Now()
		st, err := BuildIVF(context.Background(), dir, IVFOptions{NList: nlist, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		build := time.Since(start).Seconds()
		for _, nprobe := range nprobes {
			r := peerRow{Engine: "distill", Precision: string(prec), NProbe: nprobe, BuildS: build,
				IndexMB:  (fileMiB(filepath.Join(dir, vectorsFile)) + fileMiB(filepath.Join(dir, ivfFile))) * 1.048576,
				Settings: map[string]any{"nlist": st.NList, "search": "IVF: the nprobe nearest lists' rows", "build": "BuildIVF (k-means, seed 1) over the index's vectors"}}
			got := peerMeasure(t, dir, OpenOptions{NProbe: nprobe}, queries, &r)
			rows = append(rows, withRecall(r, truth, got))
		}
	}
	rows = append(rows, faissRows(t, python, raw, rawQueries, dim, nlist, nprobes, filepath.Join(root, "faiss"), truth)...)
	load := peerLoad()
	for i := range rows {
		rows[i].Corpus, rows[i].Passages, rows[i].Queries, rows[i].LoadAvg = corpus, n, nq, load
	}
	if err := mergePeerRows(jsonPath, corpus, rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%s %s nprobe %d: recall@10 %.4f, %.1f queries/s one at a time, %.1f in batch, build %.1f s", r.Engine, r.Precision, r.NProbe, *r.Recall10, r.QPSSingle, r.QPSBatch, r.BuildS)
	}
}

// peerMeasure times the queries one at a time on one thread (at least 20,
// and for 3 seconds at most beyond that) and all of them in batch on
// every core (for 2 seconds at least), and returns the batch's top 10s.
func peerMeasure(t *testing.T, dir string, opts OpenOptions, queries [][]float32, r *peerRow) [][]retrieve.Hit {
	t.Helper()
	ctx := context.Background()
	one := opts
	one.Workers = 1
	x, err := Open(dir, one)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.SearchVector(ctx, queries[len(queries)-1], 10, nil); err != nil {
		t.Fatal(err)
	}
	var times []float64
	start := time.Now()
	for i := 0; i < len(queries) && (i < 20 || time.Since(start) < 3*time.Second); i++ {
		q := time.Now()
		if _, err := x.SearchVector(ctx, queries[i], 10, nil); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(q).Seconds())
	}
	x.Close()
	r.QPSSingle = float64(len(times)) / time.Since(start).Seconds()
	slices.Sort(times)
	r.P50MS, r.P99MS = 1000*times[len(times)/2], 1000*times[min(len(times)-1, int(0.99*float64(len(times))))]
	if x, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var got [][]retrieve.Hit
	done := 0
	start = time.Now()
	for done == 0 || time.Since(start) < 2*time.Second {
		if got, err = x.SearchBatchVectors(ctx, queries, 10, nil); err != nil {
			t.Fatal(err)
		}
		done += len(queries)
	}
	r.QPSBatch = float64(done) / time.Since(start).Seconds()
	return got
}

func withRecall(r peerRow, truth, got [][]retrieve.Hit) peerRow {
	v := recall(truth, got)
	r.Recall10 = &v
	return r
}

// faissRows runs peers.py's dense mode and reads its rows, each with its
// recall against truth (FAISS returns row numbers; passage i is "d<i>").
func faissRows(t *testing.T, python, raw, queries string, dim, nlist int, nprobes []int, prefix string, truth [][]retrieve.Hit) []peerRow {
	t.Helper()
	fail := func(err error) []peerRow {
		return []peerRow{{Engine: "faiss", Error: err.Error()}}
	}
	var ps []string
	for _, p := range nprobes {
		ps = append(ps, strconv.Itoa(p))
	}
	cmd := exec.Command(python, "../peers/peers.py", "dense", raw, queries, strconv.Itoa(dim), strconv.Itoa(nlist), strings.Join(ps, ","), prefix)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fail(fmt.Errorf("peers.py dense: %w", err))
	}
	var got []struct {
		Index   string  `json:"index"`
		NProbe  int     `json:"nprobe"`
		BuildS  float64 `json:"build_s"`
		IndexMB float64 `json:"index_mb"`
		QPS1    float64 `json:"qps_single"`
		QPSB    float64 `json:"qps_batch"`
		P50     float64 `json:"p50_ms"`
		P99     float64 `json:"p99_ms"`
		Results string  `json:"results"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		return fail(fmt.Errorf("peers.py dense printed no figures: %w", err))
	}
	var rows []peerRow
	for _, g := range got {
		res, err := readRowResults(prefix + "-" + g.Results + ".tsv")
		if err != nil {
			return fail(err)
		}
		prec := Float32
		if g.Index == "IndexIVFScalarQuantizer" {
			prec = Int8 // 8 bits a dimension
		}
		r := peerRow{Engine: "faiss " + g.Index, Precision: string(prec), NProbe: g.NProbe, BuildS: g.BuildS, IndexMB: g.IndexMB,
			QPSSingle: g.QPS1, QPSBatch: g.QPSB, P50MS: g.P50, P99MS: g.P99,
			Settings: map[string]any{"search": "one OpenMP thread one at a time, 2 in batch"}}
		if g.NProbe > 0 {
			r.Settings["nlist"] = nlist
		}
		rows = append(rows, withRecall(r, truth, res))
	}
	return rows
}

func readRowResults(path string) ([][]retrieve.Hit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]retrieve.Hit
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, ids, _ := strings.Cut(sc.Text(), "\t")
		var hits []retrieve.Hit
		for _, s := range strings.Fields(ids) {
			if s == "-1" {
				continue
			}
			hits = append(hits, retrieve.Hit{Passage: data.Passage{ID: "d" + s}})
		}
		out = append(out, hits)
	}
	return out, sc.Err()
}

// writeRaw writes n rows made by gen as little-endian float32, a block of
// rows at a time.
func writeRaw(path string, n int, gen func(lo, hi int) []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	const block = 1 << 16
	buf := make([]byte, 0)
	for lo := 0; lo < n; lo += block {
		rows := gen(lo, min(lo+block, n))
		buf = slices.Grow(buf[:0], 4*len(rows))[:4*len(rows)]
		for i, v := range rows {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// mergePeerRows replaces the rows of corpus in the JSON file with rows,
// keeping the others.
func mergePeerRows(path, corpus string, rows []peerRow) error {
	var all []map[string]any
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &all); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	all = slices.DeleteFunc(all, func(r map[string]any) bool { return r["corpus"] == corpus })
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		all = append(all, m)
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

func peerLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b))[:3], " ") + fmt.Sprintf(" (%d cores)", runtime.NumCPU())
}
