package dense

// The scan kernels in assembly (AVX2 and FMA, and F16C besides for
// float16), used where the processor has them and the dimension is a
// multiple of 8 (float32, float16) or 16 (int8); elsewhere the portable
// ones in kernel.go.

//go:noescape
func dotsI8AVX2(q *int16, dim int, rows *int8, n int, out *float32)

//go:noescape
func dotsF32AVX2(q *float32, dim int, rows *float32, n int, out *float32)

//go:noescape
func dotsF16AVX2(q *float32, dim int, rows *uint16, n int, out *float32)

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv() (lo uint32)

// simdAVX2 and simdF16 report which kernels the processor runs: AVX2 and
// FMA (with the operating system saving the YMM registers), and F16C
// besides.
var simdAVX2, simdF16 = func() (bool, bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false, false
	}
	_, _, c1, _ := cpuid(1, 0)
	_, b7, _, _ := cpuid(7, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
		f16c    = 1 << 29
		avx2    = 1 << 5
	)
	if c1&(fma|osxsave|avx) != fma|osxsave|avx || b7&avx2 == 0 {
		return false, false
	}
	if xgetbv()&6 != 6 { // XMM and YMM state
		return false, false
	}
	return true, c1&f16c != 0
}()

// dotsI8 sets out[i] to q · row i of rows, len(out) rows of len(q) int8s,
// the exact integer sum as a float32.
func dotsI8(q []int16, rows []int8, out []float32) {
	d := len(q)
	if len(out) == 0 {
		return
	}
	if simdAVX2 && d > 0 && d%16 == 0 {
		_ = rows[len(out)*d-1]
		dotsI8AVX2(&q[0], d, &rows[0], len(out), &out[0])
		return
	}
	dotsI8Go(q, rows, out)
}

// dotsF16 sets out[i] to q · row i of rows, len(out) rows of len(q) halves.
func dotsF16(q []float32, rows []uint16, out []float32) {
	d := len(q)
	if len(out) == 0 {
		return
	}
	if simdF16 && d > 0 && d%8 == 0 {
		_ = rows[len(out)*d-1]
		dotsF16AVX2(&q[0], d, &rows[0], len(out), &out[0])
		return
	}
	dotsF16Go(q, rows, out)
}

// dotsF32 sets out[i] to q · row i of rows, len(out) rows of len(q) floats.
func dotsF32(q []float32, rows []float32, out []float32) {
	d := len(q)
	if len(out) == 0 {
		return
	}
	if simdAVX2 && d > 0 && d%8 == 0 {
		_ = rows[len(out)*d-1]
		dotsF32AVX2(&q[0], d, &rows[0], len(out), &out[0])
		return
	}
	dotsF32Go(q, rows, out)
}
