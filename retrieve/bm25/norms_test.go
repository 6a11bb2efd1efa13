package bm25

import "testing"

// TestLengthNorms checks that the two-byte lengths give the norms that
// the build scored with, for short and long documents alike.
func TestLengthNorms(t *testing.T) {
	lens := []uint32{0, 1, 37, 65534, 65535, 65536, 1 << 20}
	n := newLengthNorms(lens, DefaultK1, DefaultB, 120)
	want := norms(lens, DefaultK1, DefaultB, 120)
	for d := range lens {
		if got := n.of(uint32(d)); got != want[d] {
			t.Errorf("length %d: norm %v, want %v", lens[d], got, want[d])
		}
	}
}
