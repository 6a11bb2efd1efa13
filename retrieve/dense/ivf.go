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

	"github.com/distill-rag/distill/retrieve/internal/mmap"
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
//	  [24:32) rows N
//	  [32:40) build id of the vectors.bin it partitions
//	  [40:48) offset of the centroids, [48:56) of the list offsets,
//	  [56:64) of the list rows
//	  [64:68) CRC-32C of bytes [0:64)
//	centroids  [L*D]float32, row after row
//	listOff    [L+1]uint64: list j holds rows[listOff[j]:listOff[j+1]]
//	rows       [N]uint32: every row once, ascending within a list
type ivfHeader struct {
	NList, Dim                   uint32
	N, BuildID                   uint64
	CentOff, ListOffOff, RowsOff uint64
}

func newIVFHeader(nlist, dim, n int, id uint64) ivfHeader {
	h := ivfHeader{NList: uint32(nlist), Dim: uint32(dim), N: uint64(n), BuildID: id}
	h.CentOff = pageHeader
	h.ListOffOff = align8(h.CentOff + 4*uint64(nlist)*uint64(dim))
	h.RowsOff = h.ListOffOff + 8*uint64(nlist+1)
	return h
}

func (h ivfHeader) size() uint64 { return h.RowsOff + 4*h.N }

func (h ivfHeader) encode() []byte {
	b := make([]byte, pageHeader)
	copy(b, ivfMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], ivfVersion)
	le.PutUint32(b[12:], h.NList)
	le.PutUint32(b[16:], h.Dim)
	le.PutUint64(b[24:], h.N)
	le.PutUint64(b[32:], h.BuildID)
	le.PutUint64(b[40:], h.CentOff)
	le.PutUint64(b[48:], h.ListOffOff)
	le.PutUint64(b[56:], h.RowsOff)
	le.PutUint32(b[64:], crc32.Checksum(b[:64], castagnoli))
	return b
}

// ivfIndex is an opened ivf.bin.
type ivfIndex struct {
	nlist     int
	centroids []float32
	halfNorm  []float32 // |c|²/2 of each centroid
	listOff   []uint64
	rows      []uint32
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
		return nil, fmt.Errorf("%s: format version %d, this build reads version %d: build it again with BuildIVF", ivfFile, v, ivfVersion)
	}
	if crc32.Checksum(b[:64], castagnoli) != le.Uint32(b[64:]) {
		return bad("header checksum")
	}
	nlist, dim, n, id := le.Uint32(b[12:]), le.Uint32(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
	if id != vh.BuildID || dim != vh.Dim || n != vh.N {
		return nil, fmt.Errorf("%s was built for another vectors.bin (rebuilt since?): build it again with BuildIVF", ivfFile)
	}
	if nlist == 0 || uint64(nlist) > max(n, 1) {
		return bad("partition count")
	}
	h := newIVFHeader(int(nlist), int(dim), int(n), id)
	if le.Uint64(b[40:]) != h.CentOff || le.Uint64(b[48:]) != h.ListOffOff || le.Uint64(b[56:]) != h.RowsOff || uint64(len(b)) != h.size() {
		return bad("layout")
	}
	x := &ivfIndex{
		nlist:     int(nlist),
		centroids: raw.Load[float32](b[h.CentOff : h.CentOff+4*uint64(nlist)*uint64(dim)]),
		listOff:   raw.Load[uint64](b[h.ListOffOff:h.RowsOff]),
		rows:      raw.Load[uint32](b[h.RowsOff:h.size()]),
	}
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

// search returns the k best rows of the nprobe partitions nearest q. When
// those hold fewer than k rows that are not excluded, it goes on to the
// next partitions, so a search returns k hits whenever the index has them.
func (x *ivfIndex) search(ctx context.Context, s *rows, q []float32, k, nprobe int, excl []int32, workers int) ([]cand, error) {
	cs := x.probeOrder(q, s.dim)
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
	var buf []float32
	if s.prec != Float32 {
		buf = make([]float32, s.dim)
	}
	scanned, excluded := 0, 0
	for {
		segs := make([][]uint32, 0, len(order))
		total := 0
		for _, c := range order {
			seg := x.rows[x.listOff[c.row]:x.listOff[c.row+1]]
			segs = append(segs, seg)
			total += len(seg)
			if len(excl) > 0 {
				for _, r := range seg {
					if _, found := slices.BinarySearch(excl, int32(r)); found {
						excluded++
					}
				}
			}
		}
		if err := x.scanLists(ctx, s, q, segs, total, result, buf, workers); err != nil {
			return nil, err
		}
		scanned += total
		if scanned-excluded >= k || scanned >= s.n {
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

// scanLists offers the rows of segs to result, split among goroutines when
// there are many.
func (x *ivfIndex) scanLists(ctx context.Context, s *rows, q []float32, segs [][]uint32, total int, result *topK, buf []float32, workers int) error {
	parts := s.parts(total, workers)
	if parts == 1 {
		return scanRows(ctx, s, q, segs, 0, total, result, buf)
	}
	ts := make([]*topK, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		ts[p] = newTopK(result.k, result.excl)
		wg.Go(func() {
			var b []float32
			if s.prec != Float32 {
				b = make([]float32, s.dim)
			}
			errs[p] = scanRows(ctx, s, q, segs, p*total/parts, (p+1)*total/parts, ts[p], b)
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

// scanRows offers the rows at positions [lo, hi) of the concatenation of
// segs to t.
func scanRows(ctx context.Context, s *rows, q []float32, segs [][]uint32, lo, hi int, t *topK, buf []float32) error {
	pos := 0
	for _, seg := range segs {
		if pos >= hi {
			break
		}
		a, b := max(lo-pos, 0), min(hi-pos, len(seg))
		pos += len(seg)
		if a >= b {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, r := range seg[a:b] {
			if v := s.score(q, int(r), buf); v >= t.floor {
				t.offer(v, int32(r))
			}
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
func BuildIVF(ctx context.Context, dir string, opts IVFOptions) (IVFStats, error) {
	start := time.Now()
	meta, err := readMeta(dir)
	if err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	b, unmap, err := mmap.Map(filepath.Join(dir, vectorsFile), false)
	if err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	defer unmap()
	vh, err := decodeVectorsHeader(b)
	if err != nil {
		return IVFStats{}, fmt.Errorf("build IVF: %w", err)
	}
	s := rowsOf(b, vh)
	if s.n == 0 {
		return IVFStats{}, errors.New("build IVF: the index is empty")
	}
	nlist := opts.NList
	if nlist <= 0 {
		nlist = int(math.Round(4 * math.Sqrt(float64(s.n))))
	}
	nlist = max(1, min(nlist, s.n))
	iters := opts.Iterations
	if iters <= 0 {
		iters = 10
	}
	sample := opts.SampleSize
	if sample <= 0 {
		sample = 64 * nlist
	}
	sample = max(nlist, min(sample, s.n))
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	km := &kmeans{dim: s.dim, k: nlist, workers: workers, rng: rand.New(rand.NewPCG(opts.Seed, 0x1f5eed))}
	km.points = km.sample(s, sample)
	if err := km.init(ctx); err != nil {
		return IVFStats{}, err
	}
	done, err := km.train(ctx, iters)
	if err != nil {
		return IVFStats{}, err
	}
	// Assign every row, a block at a time.
	labels := make([]int32, s.n)
	if err := km.assignRows(ctx, s, labels); err != nil {
		return IVFStats{}, err
	}
	listOff := make([]uint64, nlist+1)
	for _, l := range labels {
		listOff[l+1]++
	}
	st := IVFStats{NList: nlist, Sample: sample, Iterations: done}
	for j := range nlist {
		size := int(listOff[j+1])
		st.LargestList = max(st.LargestList, size)
		if size == 0 {
			st.EmptyLists++
		}
		listOff[j+1] += listOff[j]
	}
	next := slices.Clone(listOff[:nlist])
	members := make([]uint32, s.n)
	for r, l := range labels {
		members[next[l]] = uint32(r)
		next[l]++
	}
	h := newIVFHeader(nlist, s.dim, s.n, vh.BuildID)
	err = writeAtomic(filepath.Join(dir, ivfFile), func(w *bufio.Writer) error {
		w.Write(h.encode())
		w.Write(raw.Bytes(km.centroids))
		w.Write(make([]byte, h.ListOffOff-(h.CentOff+4*uint64(len(km.centroids)))))
		w.Write(raw.Bytes(listOff))
		_, err := w.Write(raw.Bytes(members))
		return err
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
