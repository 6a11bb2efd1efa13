package dense

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/distill-rag/distill/retrieve/internal/metafile"
	"github.com/distill-rag/distill/retrieve/internal/record"
)

// File names inside an index directory.
const (
	metaFile    = metafile.Name
	vectorsFile = "vectors.bin"
	docsFile    = "docs.bin"
	ivfFile     = "ivf.bin"
	stateFile   = "build.json"
	chunksDir   = "chunks"
)

// Format versions; a reader refuses any other.
const (
	vectorsVersion = 1
	docsVersion    = 1
	ivfVersion     = 2
	chunkVersion   = 1
)

const (
	vectorsMagic = "DSTLDVEC"
	docsMagic    = "DSTLDDOC"
	docsEndMagic = "DSTLDEND"
	ivfMagic     = "DSTLDIVF"
	chunkMagic   = "DSTLDCHK"
	// pageHeader is the size of the headers of vectors.bin and ivf.bin, so
	// that their arrays start on a page boundary of the mapping.
	pageHeader = 4096
	// chunkHeader is the size of a checkpoint chunk's header.
	chunkHeader = 64
	// docsTrailer is the size of the trailer at the end of docs.bin.
	docsTrailer = 64
)

// errCorrupt marks a damaged or foreign file.
var errCorrupt = record.ErrCorrupt

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Precision is how vectors.bin stores each component.
type Precision string

const (
	// Float32 stores vectors as they were embedded (4 bytes a component).
	Float32 Precision = "float32"
	// Float16 stores IEEE half-precision components (2 bytes), rounded to
	// nearest even; about three significant digits.
	Float16 Precision = "float16"
	// Int8 stores each component as a signed byte times a per-vector scale
	// (the largest magnitude over 127), plus 4 bytes a vector for the scale.
	Int8 Precision = "int8"
)

// Precisions lists the valid precisions, Float32 (the default) first.
func Precisions() []Precision { return []Precision{Float32, Float16, Int8} }

func (p Precision) code() uint32 {
	switch p {
	case Float32:
		return 1
	case Float16:
		return 2
	case Int8:
		return 3
	}
	return 0
}

func precisionOf(code uint32) (Precision, bool) {
	for _, p := range Precisions() {
		if p.code() == code {
			return p, true
		}
	}
	return "", false
}

// bytesPer is the size of one stored component.
func (p Precision) bytesPer() int {
	switch p {
	case Float16:
		return 2
	case Int8:
		return 1
	}
	return 4
}

// vectorsHeader is the fixed part of vectors.bin:
//
//	[0:8)    magic "DSTLDVEC"
//	[8:12)   version
//	[12:16)  precision code (1 float32, 2 float16, 3 int8)
//	[16:24)  rows N
//	[24:28)  dimension D
//	[28:32)  flags (bit 0: vectors are L2-normalised)
//	[32:40)  build id, which ivf.bin repeats
//	[40:48)  offset of the rows (pageHeader), N*D components, row after row
//	[48:56)  byte length of the rows
//	[56:64)  offset of the scales (int8: N float32; else 0)
//	[64:72)  byte length of the scales
//	[72:76)  CRC-32C of bytes [0:72)
//
// All numbers are little-endian.
type vectorsHeader struct {
	Precision  Precision
	N          uint64
	Dim        uint32
	Normalized bool
	BuildID    uint64
	RowsOff    uint64
	RowsLen    uint64
	ScalesOff  uint64
	ScalesLen  uint64
}

func newVectorsHeader(p Precision, n, dim int, normalized bool, id uint64) vectorsHeader {
	h := vectorsHeader{Precision: p, N: uint64(n), Dim: uint32(dim), Normalized: normalized, BuildID: id}
	h.RowsOff = pageHeader
	h.RowsLen = uint64(n) * uint64(dim) * uint64(p.bytesPer())
	if p == Int8 {
		h.ScalesOff = align8(h.RowsOff + h.RowsLen)
		h.ScalesLen = 4 * uint64(n)
	}
	return h
}

func (h vectorsHeader) size() uint64 {
	if h.ScalesLen > 0 {
		return h.ScalesOff + h.ScalesLen
	}
	return h.RowsOff + h.RowsLen
}

func (h vectorsHeader) encode() []byte {
	b := make([]byte, pageHeader)
	copy(b, vectorsMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], vectorsVersion)
	le.PutUint32(b[12:], h.Precision.code())
	le.PutUint64(b[16:], h.N)
	le.PutUint32(b[24:], h.Dim)
	if h.Normalized {
		le.PutUint32(b[28:], 1)
	}
	le.PutUint64(b[32:], h.BuildID)
	le.PutUint64(b[40:], h.RowsOff)
	le.PutUint64(b[48:], h.RowsLen)
	le.PutUint64(b[56:], h.ScalesOff)
	le.PutUint64(b[64:], h.ScalesLen)
	le.PutUint32(b[72:], crc32.Checksum(b[:72], castagnoli))
	return b
}

func decodeVectorsHeader(b []byte) (vectorsHeader, error) {
	return decodeVectorsHead(b, int64(len(b)))
}

// decodeVectorsHead checks the header at the start of b, of a vectors file
// of size bytes.
func decodeVectorsHead(b []byte, size int64) (vectorsHeader, error) {
	var h vectorsHeader
	if len(b) < pageHeader || string(b[:8]) != vectorsMagic {
		return h, fmt.Errorf("%s: not a distill dense vector file: %w", vectorsFile, errCorrupt)
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[8:]); v != vectorsVersion {
		return h, fmt.Errorf("%s: format version %d, this build reads version %d: rebuild the index", vectorsFile, v, vectorsVersion)
	}
	if crc32.Checksum(b[:72], castagnoli) != le.Uint32(b[72:]) {
		return h, fmt.Errorf("%s: header checksum: %w", vectorsFile, errCorrupt)
	}
	p, ok := precisionOf(le.Uint32(b[12:]))
	if !ok {
		return h, fmt.Errorf("%s: unknown precision: %w", vectorsFile, errCorrupt)
	}
	h = vectorsHeader{
		Precision: p, N: le.Uint64(b[16:]), Dim: le.Uint32(b[24:]), Normalized: le.Uint32(b[28:])&1 == 1,
		BuildID: le.Uint64(b[32:]), RowsOff: le.Uint64(b[40:]), RowsLen: le.Uint64(b[48:]),
		ScalesOff: le.Uint64(b[56:]), ScalesLen: le.Uint64(b[64:]),
	}
	if h.N > math.MaxInt32 || h.Dim > 1<<16 || (h.N > 0 && h.Dim == 0) {
		return h, fmt.Errorf("%s: %d rows of dimension %d: %w", vectorsFile, h.N, h.Dim, errCorrupt)
	}
	want := newVectorsHeader(p, int(h.N), int(h.Dim), h.Normalized, h.BuildID)
	if h != want || h.size() != uint64(size) {
		return h, fmt.Errorf("%s: layout does not match %d rows of dimension %d (file %d bytes): %w", vectorsFile, h.N, h.Dim, size, errCorrupt)
	}
	return h, nil
}

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// toFloat16 rounds f to the nearest IEEE 754 half-precision value (ties to
// even); magnitudes beyond the half range become infinities.
func toFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	e := int((b >> 23) & 0xff)
	mant := b & 0x7fffff
	if e == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := e - 127 + 15
	switch {
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		// A subnormal half: m * 2^-24 with m = (1.mant) * 2^(e-126).
		if exp < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - exp)
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++ // may carry into the smallest normal: still the right bits
		}
		return sign | uint16(q)
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent rounds up to the next binade or to infinity
	}
	return h
}

// fromFloat16 returns the value of half-precision h.
func fromFloat16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// half holds the value of every half-precision number (256 KiB), so that
// decoding a component is one load.
var half = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = fromFloat16(uint16(i))
	}
	return &t
}()

// quantizeInt8 writes round(v/scale) into dst and returns the scale, the
// largest magnitude of v over 127 (zero for a zero vector).
func quantizeInt8(dst []int8, v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 {
		clear(dst)
		return 0
	}
	scale := m / 127
	inv := 1 / float64(scale)
	for i, x := range v {
		q := math.RoundToEven(float64(x) * inv)
		dst[i] = int8(max(-127, min(127, q)))
	}
	return scale
}
