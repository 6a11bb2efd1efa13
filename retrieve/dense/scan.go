package dense

import (
	"context"
	"math"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// cand is a scored row.
type cand struct {
	score float32
	row   int32
}

// better orders hits: a higher score first, and among equal scores the
// lower row (the earlier passage of the corpus).
func better(a, b cand) bool {
	return a.score > b.score || (a.score == b.score && a.row < b.row)
}

func compareCands(a, b cand) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// topK keeps the k best rows offered, skipping excluded rows and scores
// that are not finite (a damaged file). h is a heap with the worst kept
// row at its root; floor is that row's score once k rows are kept, so the
// scan loops compare each score with one number.
type topK struct {
	k     int
	h     []cand
	floor float32
	excl  []int32 // sorted
}

func newTopK(k int, excl []int32) *topK {
	return &topK{k: k, h: make([]cand, 0, min(k, 1024)), floor: float32(math.Inf(-1)), excl: excl}
}

// offer considers row with score s. Callers skip it when s < t.floor.
func (t *topK) offer(s float32, row int32) {
	if !(s <= math.MaxFloat32 && s >= -math.MaxFloat32) {
		return
	}
	c := cand{s, row}
	if len(t.h) == t.k && !better(c, t.h[0]) {
		return
	}
	if len(t.excl) > 0 {
		if _, found := slices.BinarySearch(t.excl, row); found {
			return
		}
	}
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
	} else {
		t.h[0] = c
		t.down(0)
	}
	if len(t.h) == t.k {
		t.floor = t.h[0].score
	}
}

func (t *topK) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (t *topK) down(i int) {
	h := t.h
	for {
		w := i
		l, r := 2*i+1, 2*i+2
		if l < len(h) && better(h[w], h[l]) {
			w = l
		}
		if r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[w], h[i] = h[i], h[w]
		i = w
	}
}

// merge returns the k best of the kept rows of ts, best first.
func merge(k int, ts ...*topK) []cand {
	var all []cand
	for _, t := range ts {
		all = append(all, t.h...)
	}
	slices.SortFunc(all, compareCands)
	if len(all) > k {
		all = all[:k]
	}
	return all
}

// rows are stored vectors at their precision: those of vectors.bin, or
// their copy in ivf.bin, grouped by partition. Every way of scoring a row
// (the exact scan, the batched scan, IVF) goes through dots, so a row
// scores the same whichever path found it.
type rows struct {
	n, dim int
	prec   Precision
	f32    []float32
	f16    []uint16
	i8     []int8
	scales []float32
}

// decode writes rows [lo, hi) as float32 into buf and returns the part of
// buf used, or the stored floats themselves for Float32 storage. For Int8
// the values are the stored integers: the caller multiplies the dot
// product by the row's scale.
func (s *rows) decode(lo, hi int, buf []float32) []float32 {
	d := s.dim
	switch s.prec {
	case Float16:
		src := s.f16[lo*d : hi*d]
		out := buf[:len(src)]
		for i, h := range src {
			out[i] = half[h]
		}
		return out
	case Int8:
		src := s.i8[lo*d : hi*d]
		out := buf[:len(src)]
		for i, v := range src {
			out[i] = float32(v)
		}
		return out
	}
	return s.f32[lo*d : hi*d]
}

// vectors returns rows [lo, hi) as the vectors they stand for (int8 rows
// times their scales), in buf unless they are stored as float32.
func (s *rows) vectors(lo, hi int, buf []float32) []float32 {
	out := s.decode(lo, hi, buf)
	if s.prec == Int8 {
		d := s.dim
		for r := lo; r < hi; r++ {
			vek32.MulNumber_Inplace(out[(r-lo)*d:(r-lo+1)*d], s.scales[r])
		}
	}
	return out
}

// prepared is a query made ready to score rows of one precision: int8
// rows take it rounded to int16 levels (int8Query), once per search.
type prepared struct {
	f     []float32
	i     []int16
	scale float32
}

func (s *rows) prepare(q []float32) prepared {
	p := prepared{f: q}
	if s.prec == Int8 {
		p.i = make([]int16, len(q))
		p.scale = int8Query(q, p.i)
	}
	return p
}

// dots sets out[i] to the score of row lo+i with q, for rows [lo, hi):
// the inner product. Every way of scoring (the exact scan, the batched
// scan, IVF) goes through it. float16 rows are converted inside the kernel
// (kernel.go) as they are read, so that they cost the memory they take,
// not a decoding pass. For int8 rows the kernel sums the products with the
// query's int16 levels exactly, in integers; the score is that sum times
// the query's and the row's scales.
func (s *rows) dots(q prepared, lo, hi int, out []float32) {
	d := s.dim
	out = out[:hi-lo]
	switch s.prec {
	case Float16:
		dotsF16(q.f, s.f16[lo*d:hi*d], out)
	case Int8:
		dotsI8(q.i, s.i8[lo*d:hi*d], out)
		for i, sc := range s.scales[lo:hi] {
			out[i] *= q.scale * sc
		}
	default:
		dotsF32(q.f, s.f32[lo*d:hi*d], out)
	}
}

// scanBlock is the number of rows scored between checks of the context.
const scanBlock = 4096

// scan offers rows [lo, hi) to t.
func (s *rows) scan(ctx context.Context, q prepared, lo, hi int, t *topK) error {
	scores := make([]float32, min(scanBlock, hi-lo))
	for b := lo; b < hi; b += scanBlock {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(b+scanBlock, hi)
		s.dots(q, b, end, scores)
		for i, v := range scores[:end-b] {
			if v >= t.floor {
				t.offer(v, int32(b+i))
			}
		}
	}
	return nil
}

// minPartRows is the least number of rows one goroutine of a parallel scan
// gets: below it, starting goroutines costs more than it saves.
const minPartRows = 2048

// parts is the number of goroutines to split n rows among.
func (s *rows) parts(n, workers int) int {
	return max(1, min(workers, n/minPartRows))
}

// exact returns the k best rows for q, scanning every row, the rows split
// among up to workers goroutines.
func (s *rows) exact(ctx context.Context, q []float32, k int, excl []int32, workers int) ([]cand, error) {
	parts := s.parts(s.n, workers)
	pq := s.prepare(q)
	ts := make([]*topK, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		ts[p] = newTopK(k, excl)
		lo, hi := p*s.n/parts, (p+1)*s.n/parts
		if parts == 1 {
			errs[p] = s.scan(ctx, pq, lo, hi, ts[p])
			break
		}
		wg.Go(func() { errs[p] = s.scan(ctx, pq, lo, hi, ts[p]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return merge(k, ts...), nil
}

// batchBlockBytes is the size of the block of rows that a batched scan
// scores against every query before moving on: small enough to stay in a
// core's L2 cache while the queries pass over it.
const batchBlockBytes = 128 << 10

// exactBatch returns the best rows for many queries at once: each block of
// rows is read from memory once and scored against every query while it
// is in cache. ks[i] and excl[i] belong to qs[i]; a nil
// query is skipped.
func (s *rows) exactBatch(ctx context.Context, qs [][]float32, ks []int, excl [][]int32, workers int) ([][]cand, error) {
	d := s.dim
	out := make([][]cand, len(qs))
	if !slices.ContainsFunc(qs, func(q []float32) bool { return q != nil }) {
		return out, nil
	}
	parts := s.parts(s.n, workers)
	blockRows := max(1, batchBlockBytes/(s.prec.bytesPer()*max(1, d)))
	pqs := make([]prepared, len(qs))
	for i, q := range qs {
		if q != nil {
			pqs[i] = s.prepare(q)
		}
	}
	ts := make([][]*topK, parts)
	errs := make([]error, parts)
	work := func(p int) {
		lo, hi := p*s.n/parts, (p+1)*s.n/parts
		mine := make([]*topK, len(qs))
		for i := range qs {
			mine[i] = newTopK(ks[i], excl[i])
		}
		ts[p] = mine
		scores := make([]float32, blockRows)
		for b := lo; b < hi; b += blockRows {
			if (b-lo)%scanBlock < blockRows {
				if err := ctx.Err(); err != nil {
					errs[p] = err
					return
				}
			}
			end := min(b+blockRows, hi)
			for i, q := range qs {
				if q == nil {
					continue
				}
				t := mine[i]
				s.dots(pqs[i], b, end, scores)
				for j, v := range scores[:end-b] {
					if v >= t.floor {
						t.offer(v, int32(b+j))
					}
				}
			}
		}
	}
	var wg sync.WaitGroup
	for p := range parts {
		if parts == 1 {
			work(p)
			break
		}
		wg.Go(func() { work(p) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for i := range qs {
		if qs[i] == nil {
			continue
		}
		mine := make([]*topK, parts)
		for p := range parts {
			mine[p] = ts[p][i]
		}
		out[i] = merge(ks[i], mine...)
	}
	return out, nil
}
