package dense

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"
)

// kmeans clusters points by Euclidean distance. A point's partition is the
// centroid c maximising x·c - |c|²/2 (the nearest one), ties to the lower
// index, so assignments do not depend on how work is split.
type kmeans struct {
	dim, k, workers int
	rng             *rand.Rand
	points          []float32 // m*dim
	centroids       []float32 // k*dim
	halfNorm        []float32
}

func (km *kmeans) m() int { return len(km.points) / km.dim }

// sample copies m rows chosen uniformly without replacement (selection
// sampling: one pass, rows in order), decoded to float32 and scaled by
// their int8 scale where there is one.
func (km *kmeans) sample(vf *vectorFile, m int) ([]float32, error) {
	n := vf.n()
	out := make([]float32, 0, m*km.dim)
	buf := make([]float32, km.dim)
	var raw blockBuf
	need := m
	for r := 0; r < n && need > 0; r++ {
		if km.rng.IntN(n-r) < need {
			row, err := vf.block(r, r+1, &raw)
			if err != nil {
				return nil, err
			}
			out = append(out, row.vectors(0, 1, buf)...)
			need--
		}
	}
	return out, nil
}

// parallel runs fn over [0, n) split into blocks, on km.workers goroutines.
func (km *kmeans) parallel(ctx context.Context, n, block int, fn func(lo, hi int)) error {
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range min(km.workers, (n+block-1)/block) {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				lo := next
				next += block
				mu.Unlock()
				if lo >= n {
					return
				}
				fn(lo, min(lo+block, n))
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// init picks the starting centroids by k-means++: each next one is a point
// drawn with probability proportional to its squared distance from the
// nearest centroid so far.
func (km *kmeans) init(ctx context.Context) error {
	m, d := km.m(), km.dim
	km.centroids = make([]float32, 0, km.k*d)
	sq := make([]float32, m) // |x|²
	for i := range m {
		x := km.points[i*d : (i+1)*d]
		sq[i] = vek32.Dot(x, x)
	}
	dist := make([]float64, m)
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	pick := km.rng.IntN(m)
	for len(km.centroids) < km.k*d {
		c := km.points[pick*d : (pick+1)*d]
		km.centroids = append(km.centroids, c...)
		cc := vek32.Dot(c, c)
		err := km.parallel(ctx, m, 1024, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				v := float64(sq[i]) + float64(cc) - 2*float64(vek32.Dot(km.points[i*d:(i+1)*d], c))
				dist[i] = min(dist[i], max(v, 0))
			}
		})
		if err != nil {
			return err
		}
		var total float64
		for _, v := range dist {
			total += v
		}
		if total == 0 || math.IsNaN(total) || math.IsInf(total, 0) {
			// Fewer distinct points than partitions: any point will do.
			pick = km.rng.IntN(m)
			continue
		}
		u := km.rng.Float64() * total
		pick = m - 1
		for i, v := range dist {
			if u < v {
				pick = i
				break
			}
			u -= v
		}
	}
	km.setHalfNorms()
	return nil
}

func (km *kmeans) setHalfNorms() {
	d := km.dim
	km.halfNorm = make([]float32, km.k)
	for j := range km.k {
		c := km.centroids[j*d : (j+1)*d]
		km.halfNorm[j] = vek32.Dot(c, c) / 2
	}
}

// centroidBlock is the number of centroids scored against a block of
// points while they are in cache.
const (
	centroidBlock = 128
	pointBlock    = 16
)

// assign labels points (m*dim floats) with their nearest centroids.
func (km *kmeans) assign(points []float32, labels []int32, best []float32) {
	d := km.dim
	m := len(points) / d
	for i := range best[:m] {
		best[i] = float32(math.Inf(-1))
		labels[i] = 0
	}
	for pb := 0; pb < m; pb += pointBlock {
		pe := min(pb+pointBlock, m)
		for cb := 0; cb < km.k; cb += centroidBlock {
			ce := min(cb+centroidBlock, km.k)
			for i := pb; i < pe; i++ {
				x := points[i*d : (i+1)*d]
				bi, bl := best[i], labels[i]
				for j := cb; j < ce; j++ {
					v := vek32.Dot(x, km.centroids[j*d:(j+1)*d]) - km.halfNorm[j]
					if v > bi {
						bi, bl = v, int32(j)
					}
				}
				best[i], labels[i] = bi, bl
			}
		}
	}
}

// train runs up to iters Lloyd iterations and returns how many ran.
func (km *kmeans) train(ctx context.Context, iters int) (int, error) {
	m, d := km.m(), km.dim
	labels := make([]int32, m)
	prev := make([]int32, m)
	best := make([]float32, m)
	sums := make([]float64, km.k*d)
	counts := make([]int, km.k)
	done := 0
	for it := range iters {
		err := km.parallel(ctx, m, 256, func(lo, hi int) {
			km.assign(km.points[lo*d:hi*d], labels[lo:hi], best[lo:hi])
		})
		if err != nil {
			return done, err
		}
		done++
		if it > 0 && slices.Equal(labels, prev) {
			break
		}
		copy(prev, labels)
		// New centroids: the means of their points, summed in point order
		// so that the result does not depend on the number of workers.
		clear(sums)
		clear(counts)
		for i, l := range labels {
			counts[l]++
			s := sums[int(l)*d : int(l+1)*d]
			for c, v := range km.points[i*d : (i+1)*d] {
				s[c] += float64(v)
			}
		}
		for j := range km.k {
			if counts[j] == 0 {
				continue
			}
			c := km.centroids[j*d : (j+1)*d]
			for i := range c {
				c[i] = float32(sums[j*d+i] / float64(counts[j]))
			}
		}
		km.splitEmpty(counts)
		km.setHalfNorms()
	}
	return done, nil
}

// splitEmpty gives each empty partition half of a large one: it copies a
// centroid drawn with probability proportional to its partition's size
// and moves the two copies slightly apart.
func (km *kmeans) splitEmpty(counts []int) {
	const eps = 1.0 / 1024
	d := km.dim
	for j := range km.k {
		if counts[j] > 0 {
			continue
		}
		total := 0
		for _, c := range counts {
			total += max(c-1, 0)
		}
		if total == 0 {
			return
		}
		u := km.rng.IntN(total)
		big := 0
		for ; big < km.k; big++ {
			if w := counts[big] - 1; w > 0 {
				if u < w {
					break
				}
				u -= w
			}
		}
		cj, cb := km.centroids[j*d:(j+1)*d], km.centroids[big*d:(big+1)*d]
		for i := range cj {
			f := float32(eps)
			if i%2 == 1 {
				f = -f
			}
			cj[i] = cb[i] * (1 + f)
			cb[i] *= 1 - f
		}
		counts[j] = counts[big] / 2
		counts[big] -= counts[j]
	}
}

// assignRows labels every stored row with its nearest centroid, reading
// the rows a block at a time.
func (km *kmeans) assignRows(ctx context.Context, vf *vectorFile, labels []int32) error {
	const block = 256
	type scratch struct {
		raw       blockBuf
		buf, best []float32
	}
	pool := sync.Pool{New: func() any {
		return &scratch{buf: make([]float32, block*km.dim), best: make([]float32, block)}
	}}
	var mu sync.Mutex
	var first error
	err := km.parallel(ctx, vf.n(), block, func(lo, hi int) {
		sc := pool.Get().(*scratch)
		defer pool.Put(sc)
		s, err := vf.block(lo, hi, &sc.raw)
		if err != nil {
			mu.Lock()
			first = cmp.Or(first, err)
			mu.Unlock()
			return
		}
		km.assign(s.vectors(0, hi-lo, sc.buf), labels[lo:hi], sc.best)
	})
	return cmp.Or(first, err)
}
