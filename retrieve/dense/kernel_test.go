package dense

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKernels checks the float32, float16 and int8 scan kernels (the
// assembly ones where this processor runs them, and the portable ones)
// against a float64 dot product, for dimensions that do and do not fill
// the assembly's blocks of 32 and 8.
func TestKernels(t *testing.T) {
	t.Logf("assembly kernels: float32 and int8 %v, float16 %v", simdAVX2, simdF16)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{1, 7, 8, 16, 24, 32, 40, 72, 384, 768, 1030} {
		for _, n := range []int{1, 2, 5} {
			q, i8, f16 := kernelData(rng, dim, n)
			// The stored values as float64, for the reference.
			vals := map[string][]float64{"int8": make([]float64, n*dim), "float16": make([]float64, n*dim)}
			f32 := make([]float32, n*dim)
			for i := range i8 {
				f32[i] = fromFloat16(f16[i])
				vals["int8"][i], vals["float16"][i] = float64(i8[i]), float64(f32[i])
			}
			vals["float32"] = vals["float16"]
			for _, k := range []struct {
				name       string
				fast, slow func(out []float32)
			}{
				{"int8", func(out []float32) { int8Dots(q, i8, out, dotsI8) }, func(out []float32) { int8Dots(q, i8, out, dotsI8Go) }},
				{"float16", func(out []float32) { dotsF16(q, f16, out) }, func(out []float32) { dotsF16Go(q, f16, out) }},
				{"float32", func(out []float32) { dotsF32(q, f32, out) }, func(out []float32) { dotsF32Go(q, f32, out) }},
			} {
				fast := make([]float32, n+1)
				slow := make([]float32, n)
				fast[n] = 42 // must stay untouched
				k.fast(fast[:n])
				k.slow(slow)
				if fast[n] != 42 {
					t.Fatalf("%s dim %d: the kernel wrote past its %d rows", k.name, dim, n)
				}
				for r := range n {
					var want, mag float64
					for j, v := range vals[k.name][r*dim : (r+1)*dim] {
						want += float64(q[j]) * v
						mag += math.Abs(float64(q[j]) * v)
					}
					tol := 1e-4 * (mag + 1)
					if math.Abs(float64(fast[r])-want) > tol || math.Abs(float64(slow[r])-want) > tol {
						t.Errorf("%s dim %d row %d: got %v (portable %v), want %v", k.name, dim, r, fast[r], slow[r], want)
					}
					if k.name == "int8" && fast[r] != slow[r] {
						t.Errorf("int8 dim %d row %d: the kernels differ (%v, portable %v); both sum exactly", dim, r, fast[r], slow[r])
					}
				}
			}
		}
	}
}

// TestKernelRowsIndependent checks that a row scores the same whichever
// rows are scored with it: every search path relies on it.
func TestKernelRowsIndependent(t *testing.T) {
	const dim, n = 384, 9
	q, i8, f16 := kernelData(rand.New(rand.NewPCG(7, 8)), dim, n)
	f32 := make([]float32, len(f16))
	for i, h := range f16 {
		f32[i] = fromFloat16(h)
	}
	all8, all16, all32 := make([]float32, n), make([]float32, n), make([]float32, n)
	int8Dots(q, i8, all8, dotsI8)
	dotsF16(q, f16, all16)
	dotsF32(q, f32, all32)
	for r := range n {
		one := make([]float32, 1)
		int8Dots(q, i8[r*dim:(r+1)*dim], one, dotsI8)
		if one[0] != all8[r] {
			t.Errorf("int8 row %d: alone %v, among others %v", r, one[0], all8[r])
		}
		dotsF16(q, f16[r*dim:], one)
		if one[0] != all16[r] {
			t.Errorf("float16 row %d: alone %v, among others %v", r, one[0], all16[r])
		}
		dotsF32(q, f32[r*dim:(r+1)*dim], one)
		if one[0] != all32[r] {
			t.Errorf("float32 row %d: alone %v, among others %v", r, one[0], all32[r])
		}
	}
}

// int8Dots scores int8 rows as rows.dots does, before the rows' scales.
func int8Dots(q []float32, rows []int8, out []float32, kernel func([]int16, []int8, []float32)) {
	qi := make([]int16, len(q))
	qs := int8Query(q, qi)
	kernel(qi, rows, out)
	for i := range out {
		out[i] *= qs
	}
}

func TestInt8Query(t *testing.T) {
	long := make([]float32, 4096)
	long[0], long[1] = 1, -0.5
	for _, c := range []struct {
		q         []float32
		want      []int16
		wantScale float32
	}{
		{[]float32{0.5, -1, 0.25, 0}, []int16{16384, -32767, 8192, 0}, 1.0 / 32767},
		// Wider vectors get fewer levels, so that sums stay within int32.
		{long, append([]int16{4095, -2048}, make([]int16, 4094)...), 1.0 / 4095},
		{make([]float32, 8), make([]int16, 8), 0},
	} {
		got := make([]int16, len(c.q))
		scale := int8Query(c.q, got)
		if !slices.Equal(got, c.want) || scale != c.wantScale {
			t.Errorf("int8Query(%v...) (dimension %d): got %v... scale %v, want %v... scale %v",
				c.q[:4], len(c.q), got[:4], scale, c.want[:4], c.wantScale)
		}
	}
}

// kernelData returns a random query and n random rows of int8 and of
// float16 components.
func kernelData(rng *rand.Rand, dim, n int) (q []float32, i8 []int8, f16 []uint16) {
	q = make([]float32, dim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	i8 = make([]int8, n*dim)
	f16 = make([]uint16, n*dim)
	for i := range i8 {
		i8[i] = int8(rng.IntN(255) - 127)
		f16[i] = toFloat16(float32(rng.NormFloat64()))
	}
	return q, i8, f16
}
