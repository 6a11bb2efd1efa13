//go:build !amd64

package dense

const simdAVX2, simdF16 = false, false

// dotsI8 sets out[i] to q · row i of rows, len(out) rows of len(q) int8s,
// the exact integer sum as a float32.
func dotsI8(q []int16, rows []int8, out []float32) { dotsI8Go(q, rows, out) }

// dotsF16 sets out[i] to q · row i of rows, len(out) rows of len(q) halves.
func dotsF16(q []float32, rows []uint16, out []float32) { dotsF16Go(q, rows, out) }

// dotsF32 sets out[i] to q · row i of rows, len(out) rows of len(q) floats.
func dotsF32(q []float32, rows []float32, out []float32) { dotsF32Go(q, rows, out) }
