package dense

// The portable scan kernels, one row at a time: one vek32.Dot call for
// float32; eight partial sums for float16, so that the compiler keeps them
// in registers and a row scores the same in every call; an exact integer
// sum for int8.

import (
	"math"

	"github.com/viterin/vek/vek32"
)

// dotsI8Go sums exactly in integers, so it gives what the assembly does.
func dotsI8Go(q []int16, rows []int8, out []float32) {
	d := len(q)
	for i := range out {
		r := rows[i*d : (i+1)*d]
		var s int32
		for j, v := range r {
			s += int32(q[j]) * int32(v)
		}
		out[i] = float32(s)
	}
}

// int8Query rounds q to integers for scoring int8 rows: q ≈ scale * dst,
// the largest magnitude at the most that keeps the sum over dim products
// with int8 components within int32 (32767 up to dimension 512, then
// smaller: 4095 at 4096). The rounding error is then below one part in
// 2·32767 of the largest component up to dimension 512, far below that
// of the int8 rows themselves.
func int8Query(q []float32, dst []int16) (scale float32) {
	var m float32
	for _, x := range q {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 || len(q) == 0 {
		clear(dst)
		return 0
	}
	levels := min(32767, math.MaxInt32/(128*len(q)))
	inv := float64(levels) / float64(m)
	for i, x := range q {
		dst[i] = int16(math.RoundToEven(float64(x) * inv))
	}
	return m / float32(levels)
}

// dotsF32Go scores a row with one vek32.Dot call.
func dotsF32Go(q []float32, rows []float32, out []float32) {
	d := len(q)
	for i := range out {
		out[i] = vek32.Dot(q, rows[i*d:(i+1)*d])
	}
}

func dotsF16Go(q []float32, rows []uint16, out []float32) {
	d := len(q)
	for i := range out {
		r := rows[i*d : (i+1)*d]
		var s [8]float32
		j := 0
		for ; j+8 <= d; j += 8 {
			s[0] += q[j] * half[r[j]]
			s[1] += q[j+1] * half[r[j+1]]
			s[2] += q[j+2] * half[r[j+2]]
			s[3] += q[j+3] * half[r[j+3]]
			s[4] += q[j+4] * half[r[j+4]]
			s[5] += q[j+5] * half[r[j+5]]
			s[6] += q[j+6] * half[r[j+6]]
			s[7] += q[j+7] * half[r[j+7]]
		}
		for ; j < d; j++ {
			s[0] += q[j] * half[r[j]]
		}
		out[i] = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
	}
}
