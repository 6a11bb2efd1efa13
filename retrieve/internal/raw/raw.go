// Package raw views the little-endian arrays of the on-disk indexes (BM25,
// dense) as Go slices: on little-endian machines the file's bytes
// themselves, retyped without copying, so that a mapped index is used in
// place; elsewhere a decoded or encoded copy.
package raw

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Number is a type the index files store arrays of.
type Number interface {
	~uint16 | ~uint32 | ~uint64 | ~float32 | ~int8
}

// littleEndian is true where memory holds numbers as the files do.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Load returns the little-endian numbers in b: b itself, retyped, on
// little-endian machines (b must then be aligned for T, which sections
// and mappings are), a decoded copy elsewhere.
func Load[T Number](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) < size {
		return nil
	}
	if littleEndian || size == 1 {
		return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
	}
	out := make([]T, len(b)/size)
	le := binary.LittleEndian
	for i := range out {
		switch p := any(&out[i]).(type) {
		case *uint16:
			*p = le.Uint16(b[2*i:])
		case *uint32:
			*p = le.Uint32(b[4*i:])
		case *uint64:
			*p = le.Uint64(b[8*i:])
		case *float32:
			*p = math.Float32frombits(le.Uint32(b[4*i:]))
		}
	}
	return out
}

// Bytes returns the little-endian bytes of v: its memory on little-endian
// machines, an encoded copy elsewhere.
func Bytes[T Number](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(v[0]))
	if littleEndian || size == 1 {
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*size)
	}
	out := make([]byte, 0, len(v)*size)
	le := binary.LittleEndian
	for _, x := range v {
		switch x := any(x).(type) {
		case uint16:
			out = le.AppendUint16(out, x)
		case uint32:
			out = le.AppendUint32(out, x)
		case uint64:
			out = le.AppendUint64(out, x)
		case float32:
			out = le.AppendUint32(out, math.Float32bits(x))
		}
	}
	return out
}
