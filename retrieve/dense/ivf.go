package dense

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/viterin/vek/vek32"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// IVFOptions configure BuildIVF. The zero value uses the defaults.
type IVFOptions struct {
	// NList is the number of partitions; 0 means 4*sqrt(N).
	NList int
	// Iterations of k-means (Lloyd) after the k-means++ start; 0 means 10.
	// Training stops early when no sample vector changes partition.
	Iterations int
	// SampleSize is the number of vectors k-means trains on; 0 means 64 per
	// partition (all vectors for a small index).
	SampleSize int
	// Seed seeds the sample and the k-means++ start: the same seed, options
	// and index give the same partitions.
	Seed uint64
	// Workers is the number of goroutines; 0 means GOMAXPROCS.
	Workers int
}

// IVFStats describe a finished IVF build.
type IVFStats struct {
	NList      int `json:"nlist"`
	Sample     int `json:"sample"`
	Iterations int `json:"iterations"`
	// EmptyLists and LargestList describe the partitions of all vectors.
	EmptyLists  int           `json:"empty_lists"`
	LargestList int           `json:"largest_list"`
	Elapsed     time.Duration `json:"-"`
}

// IVFMeta is the part of meta.json that describes ivf.bin.
type IVFMeta struct {
	NList       int     `json:"nlist"`
	Sample      int     `json:"sample"`
	Iterations  int     `json:"iterations"`
	Seed        uint64  `json:"seed"`
	EmptyLists  int     `json:"empty_lists"`
	LargestList int     `json:"largest_list"`
	Seconds     float64 `json:"build_seconds"`
}

// ivf.bin, little-endian:
//
//	header (pageHeader bytes):
//	  [0:8)   magic "DSTLDIVF"
//	  [8:12)  version
//	  [12:16) partitions L
//	  [16:20) dimension D
//	  [20:24) precision code of the vectors (that of vectors.bin)
//	  [24:32) rows N
//	  [32:40) build id of the vectors.bin it partitions
//	  [40:48) offset of the centroids, [48:56) of the list offsets,
//	  [56:64) of the list rows, [64:72) of the list vectors,
//	  [72:80) of the list scales (int8; else 0)
//	  [80:84) CRC-32C of bytes [0:80)
//	centroids  [L*D]float32, row after row
//	listOff    [L+1]uint64: list j holds rows[listOff[j]:listOff[j+1]]
//	rows       [N]uint32: every row once, ascending within a list
//	vectors    [N*D] at the index's precision: the vector of rows[i] at
//	           place i, so that a list's vectors are contiguous
//	scales     [N]float32, int8 only: the scale of rows[i] at place i
//
// Version 1 had no vectors: a search read its rows where they lie in
// vectors.bin, scattered, at several times the cost per row of a scan.
type ivfHeader struct {
	NList, Dim                                      uint32
	Precision                                       Precision
	N, BuildID                                      uint64
	CentOff, ListOffOff, RowsOff, VecOff, ScalesOff uint64
}

func newIVFHeader(nlist, dim int, prec Precision, n int, id uint64) ivfHeader {
	h := ivfHeader{NList: uint32(nlist), Dim: uint32(dim), Precision: prec, N: uint64(n), BuildID: id}
	h.CentOff = pageHeader
	h.ListOffOff = align8(h.CentOff + 4*uint64(nlist)*uint64(dim))
	h.RowsOff = h.ListOffOff + 8*uint64(nlist+1)
	h.VecOff = align64(h.RowsOff + 4*uint64(n))
	if prec == Int8 {
		h.ScalesOff = align8(h.VecOff + h.vecLen())
	}
	return h
}

func align64(n uint64) uint64 { return (n + 63) &^ 63 }

func (h ivfHeader) vecLen() uint64 {
	return h.N * uint64(h.Dim) * uint64(h.Precision.bytesPer())
}

func (h ivfHeader) size() uint64 {
	if h.ScalesOff > 0 {
		return h.ScalesOff + 4*h.N
	}
	return h.VecOff + h.vecLen()
}

func (h ivfHeader) encode() []byte {
	b := make([]byte, pageHeader)
	copy(b, ivfMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], ivfVersion)
	le.PutUint32(b[12:], h.NList)
	le.PutUint32(b[16:], h.Dim)
	le.PutUint32(b[20:], h.Precision.code())
	le.PutUint64(b[24:], h.N)
	le.PutUint64(b[32:], h.BuildID)
	le.PutUint64(b[40:], h.CentOff)
	le.PutUint64(b[48:], h.ListOffOff)
	le.PutUint64(b[56:], h.RowsOff)
	le.PutUint64(b[64:], h.VecOff)
	le.PutUint64(b[72:], h.ScalesOff)
	le.PutUint32(b[80:], crc32.Checksum(b[:80], castagnoli))
	return b
}

// ivfIndex is an opened ivf.bin.
type ivfIndex struct {
	nlist     int
	centroids []float32
	halfNorm  []float32 // |c|²/2 of each centroid
	listOff   []uint64
	rows      []uint32
	// vecs holds the vectors in list order: its row i is row rows[i] of
	// vectors.bin.
	vecs rows
}

func openIVF(b []byte, vh vectorsHeader) (*ivfIndex, error) {
	bad := func(what string) (*ivfIndex, error) {
		return nil, fmt.Errorf("%s: %s: %w", ivfFile, what, errCorrupt)
	}
	le := binary.LittleEndian
	if len(b) < pageHeader || string(b[:8]) != ivfMagic {
		return bad("not a distill IVF file")
	}
	if v := le.Uint32(b[8:]); v != ivfVersion {
		return nil, fmt.Errorf("%s: format version %d, this build reads version %d: build it again with BuildIVF (distill index --ivf)", ivfFile, v, ivfVersion)
	}
	if crc32.Checksum(b[:80], castagnoli) != le.Uint32(b[80:]) {
		return bad("header checksum")
	}
	nlist, dim, n, id := le.Uint32(b[12:]), le.Uint32(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
	if id != vh.BuildID || dim != vh.Dim || n != vh.N || le.Uint32(b[20:]) != vh.Precision.code() {
		return nil, fmt.Errorf("%s was built for another vectors.bin (rebuilt since?): build it again with BuildIVF", ivfFile)
	}
	if nlist == 0 || uint64(nlist) > max(n, 1) {
		return bad("partition count")
	}
	h := newIVFHeader(int(nlist), int(dim), vh.Precision, int(n), id)
	if le.Uint64(b[40:]) != h.CentOff || le.Uint64(b[48:]) != h.ListOffOff || le.Uint64(b[56:]) != h.RowsOff ||
		le.Uint64(b[64:]) != h.VecOff || le.Uint64(b[72:]) != h.ScalesOff || uint64(len(b)) != h.size() {
		return bad("layout")
	}
	x := &ivfIndex{
		nlist:     int(nlist),
		centroids: raw.Load[float32](b[h.CentOff : h.CentOff+4*uint64(nlist)*uint64(dim)]),
		listOff:   raw.Load[uint64](b[h.ListOffOff:h.RowsOff]),
		rows:      raw.Load[uint32](b[h.RowsOff : h.RowsOff+4*n]),
	}
	var scales []byte
	if h.ScalesOff > 0 {
		scales = b[h.ScalesOff:h.size()]
	}
	x.vecs = *viewRows(b[h.VecOff:h.VecOff+h.vecLen()], scales, int(n), int(dim), vh.Precision)
	if x.listOff[0] != 0 || x.listOff[nlist] != n {
		return bad("list offsets")
	}
	for j := 1; j <= int(nlist); j++ {
		if x.listOff[j] < x.listOff[j-1] {
			return bad("list offsets")
		}
	}
	seen := make([]uint64, (n+63)/64)
	for _, r := range x.rows {
		if uint64(r) >= n || seen[r/64]&(1<<(r%64)) != 0 {
			return bad("list rows")
		}
		seen[r/64] |= 1 << (r % 64)
	}
	x.halfNorm = make([]float32, nlist)
	for j := range x.halfNorm {
		c := x.centroids[j*int(dim) : (j+1)*int(dim)]
		for _, v := range c {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return bad("centroids")
			}
		}
		x.halfNorm[j] = vek32.Dot(c, c) / 2
	}
	return x, nil
}

// probeOrder scores every partition for q as q·c - |c|²/2, which ranks
// centroids by their distance to q, nearest first: the rule that assigned
// the rows. For the unit vectors of a normalised index, the nearest
// centroid is where the rows of highest inner product with q are likely
// to be.
func (x *ivfIndex) probeOrder(q []float32, dim int) []cand {
	cs := make([]cand, x.nlist)
	for j := range cs {
		cs[j] = cand{vek32.Dot(q, x.centroids[j*dim:(j+1)*dim]) - x.halfNorm[j], int32(j)}
	}
	return cs
}

// span is a range of places in the list order: a partition's rows.
type span struct{ lo, hi int }

// search returns the k best rows of the nprobe partitions nearest q. When
// those hold fewer than k rows that are not excluded, it goes on to the
// next partitions, so a search returns k hits whenever the index has them.
func (x *ivfIndex) search(ctx context.Context, q []float32, k, nprobe int, excl []int32, workers int) ([]cand, error) {
	cs := x.probeOrder(q, x.vecs.dim)
	// Only the first nprobe partitions are usually needed: select them
	// and sort the rest only if the search must go further.
	t := newTopK(min(nprobe, len(cs)), nil)
	for _, c := range cs {
		if c.score >= t.floor {
			t.offer(c.score, c.row)
		}
	}
	order := merge(len(t.h), t)
	taken := make([]bool, len(cs))
	for _, c := range order {
		taken[c.row] = true
	}
	var rest []cand
	result := newTopK(k, excl)
	pq := x.vecs.prepare(q)
	scanned, excluded := 0, 0
	for {
		spans := make([]span, 0, len(order))
		total := 0
		for _, c := range order {
			sp := span{int(x.listOff[c.row]), int(x.listOff[c.row+1])}
			spans = append(spans, sp)
			total += sp.hi - sp.lo
			if len(excl) > 0 {
				for _, r := range x.rows[sp.lo:sp.hi] {
					if _, found := slices.BinarySearch(excl, int32(r)); found {
						excluded++
					}
				}
			}
		}
		if err := x.scanLists(ctx, pq, spans, total, result, workers); err != nil {
			return nil, err
		}
		scanned += total
		if scanned-excluded >= k || scanned >= x.vecs.n {
			break
		}
		// Too few rows: probe as many partitions again as so far, nearest
		// first.
		if rest == nil {
			for _, c := range cs {
				if !taken[c.row] {
					rest = append(rest, c)
				}
			}
			slices.SortFunc(rest, compareCands)
		}
		more := min(len(rest), max(1, len(order)))
		if more == 0 {
			break
		}
		order, rest = rest[:more], rest[more:]
	}
	return merge(k, result), nil
}

// scanLists offers the rows of spans to result, split among goroutines
// when there are many.
func (x *ivfIndex) scanLists(ctx context.Context, q prepared, spans []span, total int, result *topK, workers int) error {
	parts := x.vecs.parts(total, workers)
	if parts == 1 {
		return x.scanSpans(ctx, q, spans, 0, total, result)
	}
	ts := make([]*topK, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		ts[p] = newTopK(result.k, result.excl)
		wg.Go(func() {
			errs[p] = x.scanSpans(ctx, q, spans, p*total/parts, (p+1)*total/parts, ts[p])
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, t := range ts {
		for _, c := range t.h {
			if c.score >= result.floor {
				result.offer(c.score, c.row)
			}
		}
	}
	return nil
}

// scanSpans offers the rows at positions [lo, hi) of the concatenation of
// spans to t: the vectors of a span lie one after the other.
func (x *ivfIndex) scanSpans(ctx context.Context, q prepared, spans []span, lo, hi int, t *topK) error {
	var scores []float32
	pos := 0
	for _, sp := range spans {
		if pos >= hi {
			break
		}
		a, b := max(lo-pos, 0), min(hi-pos, sp.hi-sp.lo)
		pos += sp.hi - sp.lo
		for a < b {
			if err := ctx.Err(); err != nil {
				return err
			}
			end := min(b, a+scanBlock)
			if scores == nil {
				scores = make([]float32, min(scanBlock, hi-lo))
			}
			x.vecs.dots(q, sp.lo+a, sp.lo+end, scores)
			for i, v := range scores[:end-a] {
				if v >= t.floor {
					t.offer(v, int32(x.rows[sp.lo+a+i]))
				}
			}
			a = end
		}
	}
	return nil
}

// BuildIVF partitions the vectors of the index in dir with k-means and
// writes ivf.bin, which Open uses when OpenOptions.NProbe > 0, and adds its
// description to meta.json. Training runs on a seeded sample: k-means++
// picks the starting centroids, then Lloyd iterations move them; every
// vector then joins the partition of its nearest centroid. A search probes
// the partitions whose centroids are nearest the query and scores their
// rows exactly, with the same arithmetic as the exact search: probing every
// partition gives the exact result.
//
// ivf.bin holds a copy of the vectors, grouped by partition, so that a
// search reads each probed partition in one sweep. The build reads
// vectors.bin with plain reads, a block at a time: besides its sample of
// SampleSize vectors, it keeps 8 bytes per row in memory (4 for int8
// scales).
func BuildIVF(ctx context.Context, dir string, opts IVFOptions) (IVFStats, error) {
	start := time.Now()
	meta, err := readMeta(dir)
	if err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	vf, err := openVectorFile(filepath.Join(dir, vectorsFile))
	if err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	defer vf.Close()
	n, dim := vf.n(), int(vf.h.Dim)
	if n == 0 {
		return IVFStats{}, errors.New("build IVF: the index is empty")
	}
	nlist := opts.NList
	if nlist <= 0 {
		nlist = int(math.Round(4 * math.Sqrt(float64(n))))
	}
	nlist = max(1, min(nlist, n))
	iters := opts.Iterations
	if iters <= 0 {
		iters = 10
	}
	sample := opts.SampleSize
	if sample <= 0 {
		sample = 64 * nlist
	}
	sample = max(nlist, min(sample, n))
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	km := &kmeans{dim: dim, k: nlist, workers: workers, rng: rand.New(rand.NewPCG(opts.Seed, 0x1f5eed))}
	if km.points, err = km.sample(vf, sample); err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	if err := km.init(ctx); err != nil {
		return IVFStats{}, err
	}
	done, err := km.train(ctx, iters)
	if err != nil {
		return IVFStats{}, err
	}
	// Assign every row, a block at a time.
	labels := make([]int32, n)
	if err := km.assignRows(ctx, vf, labels); err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	st := IVFStats{NList: nlist, Sample: sample, Iterations: done}
	listOff, members := invertLists(labels, nlist, &st)
	h := newIVFHeader(nlist, dim, vf.h.Precision, n, vf.h.BuildID)
	err = data.WriteAtomic(filepath.Join(dir, ivfFile), func(w *bufio.Writer) error {
		return writeIVF(ctx, w, h, vf, km.centroids, listOff, members)
	})
	if err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	st.Elapsed = time.Since(start)
	meta.IVF = &IVFMeta{
		NList: nlist, Sample: sample, Iterations: done, Seed: opts.Seed,
		EmptyLists: st.EmptyLists, LargestList: st.LargestList, Seconds: st.Elapsed.Seconds(),
	}
	if err := writeMeta(dir, meta); err != nil {
		return st, fmt.Errorf("build IVF: %w", err)
	}
	return st, nil
}

// invertLists turns the list of every row into the lists' offsets in
// members (nlist+1 of them) and members, the rows list by list, counting
// the largest and the empty lists into st.
func invertLists(labels []int32, nlist int, st *IVFStats) (listOff []uint64, members []uint32) {
	listOff = make([]uint64, nlist+1)
	for _, l := range labels {
		listOff[l+1]++
	}
	for j := range nlist {
		size := int(listOff[j+1])
		st.LargestList = max(st.LargestList, size)
		if size == 0 {
			st.EmptyLists++
		}
		listOff[j+1] += listOff[j]
	}
	next := slices.Clone(listOff[:nlist])
	members = make([]uint32, len(labels))
	for r, l := range labels {
		members[next[l]] = uint32(r)
		next[l]++
	}
	return listOff, members
}

// writeIVF writes the IVF file: its header, the centroids, the lists, and
// the rows' vectors (and scales) in the lists' order.
func writeIVF(ctx context.Context, w *bufio.Writer, h ivfHeader, vf *vectorFile, centroids []float32, listOff []uint64, members []uint32) error {
	n := len(members)
	w.Write(h.encode())
	w.Write(raw.Bytes(centroids))
	w.Write(make([]byte, h.ListOffOff-(h.CentOff+4*uint64(len(centroids)))))
	w.Write(raw.Bytes(listOff))
	w.Write(raw.Bytes(members))
	w.Write(make([]byte, h.VecOff-(h.RowsOff+4*uint64(n))))
	if err := copyRows(ctx, vf, members, w); err != nil {
		return err
	}
	if h.ScalesOff == 0 {
		return nil
	}
	w.Write(make([]byte, h.ScalesOff-(h.VecOff+h.vecLen())))
	all := make([]byte, 4*n)
	if err := vf.rawScales(0, n, all); err != nil {
		return err
	}
	scales := raw.Load[float32](all)
	out := make([]float32, 0, 4096)
	for i, r := range members {
		out = append(out, scales[r])
		if len(out) == cap(out) || i == n-1 {
			w.Write(raw.Bytes(out))
			out = out[:0]
		}
	}
	return nil
}

// copyRows writes the stored bytes of the rows of members, in that order.
// Rows are read in runs of consecutive rows (members ascend within a
// partition).
func copyRows(ctx context.Context, vf *vectorFile, members []uint32, w *bufio.Writer) error {
	const maxRun = 256
	var buf []byte
	for i := 0; i < len(members); {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		j := i + 1
		for j < len(members) && j-i < maxRun && members[j] == members[j-1]+1 {
			j++
		}
		lo := int(members[i])
		b := grow(&buf, (j-i)*vf.rowBytes)
		if err := vf.rawRows(lo, lo+j-i, b); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		i = j
	}
	return nil
}
