package raw

import (
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	u64 := []uint64{0, 1, 1 << 40}
	if got := Load[uint64](Bytes(u64)); !slices.Equal(got, u64) {
		t.Errorf("uint64: got %v, want %v", got, u64)
	}
	f32 := []float32{-1.5, 0, 3.25}
	if got := Load[float32](Bytes(f32)); !slices.Equal(got, f32) {
		t.Errorf("float32: got %v, want %v", got, f32)
	}
	i8 := []int8{-127, 0, 127}
	if got := Load[int8](Bytes(i8)); !slices.Equal(got, i8) {
		t.Errorf("int8: got %v, want %v", got, i8)
	}
	if b := []byte{1, 0, 2, 0}; !slices.Equal(Load[uint16](b), []uint16{1, 2}) {
		t.Errorf("uint16 of %v: got %v, want little-endian [1 2]", b, Load[uint16](b))
	}
	if Load[uint32]([]byte{1, 2}) != nil || Bytes([]uint32(nil)) != nil {
		t.Error("short input: want nil")
	}
}
