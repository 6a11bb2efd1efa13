package dense

import (
	"fmt"
	"os"
)

// vectorFile reads the rows of a vectors.bin with plain reads rather than
// a mapping, for the passes of an IVF build over every row: only the
// blocks being worked on are in the process's memory, however large the
// file (a mapping's pages would stay resident once touched).
type vectorFile struct {
	f        *os.File
	h        vectorsHeader
	rowBytes int
}

func openVectorFile(path string) (*vectorFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	head := make([]byte, pageHeader)
	if _, err := f.ReadAt(head, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", vectorsFile, errCorrupt)
	}
	h, err := decodeVectorsHead(head, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &vectorFile{f: f, h: h, rowBytes: int(h.Dim) * h.Precision.bytesPer()}, nil
}

func (v *vectorFile) Close() error { return v.f.Close() }

func (v *vectorFile) n() int { return int(v.h.N) }

// blockBuf holds the bytes of a block of rows and of their scales.
type blockBuf struct {
	rows, scales []byte
}

// grow returns n bytes of *b, reallocated when too short. Allocations of
// 16 bytes or more are 8-byte aligned, as raw.Load needs.
func grow(b *[]byte, n int) []byte {
	if cap(*b) < n {
		*b = make([]byte, max(n, 16))
	}
	return (*b)[:n]
}

// rawRows reads the stored bytes of rows [lo, hi) into dst.
func (v *vectorFile) rawRows(lo, hi int, dst []byte) error {
	_, err := v.f.ReadAt(dst[:(hi-lo)*v.rowBytes], int64(v.h.RowsOff)+int64(lo)*int64(v.rowBytes))
	if err != nil {
		return fmt.Errorf("read %s: %w", vectorsFile, err)
	}
	return nil
}

// rawScales reads the int8 scales of rows [lo, hi) into dst.
func (v *vectorFile) rawScales(lo, hi int, dst []byte) error {
	if _, err := v.f.ReadAt(dst[:4*(hi-lo)], int64(v.h.ScalesOff)+4*int64(lo)); err != nil {
		return fmt.Errorf("read %s: %w", vectorsFile, err)
	}
	return nil
}

// block reads rows [lo, hi) into buf and returns them as rows 0 to hi-lo.
func (v *vectorFile) block(lo, hi int, buf *blockBuf) (*rows, error) {
	b := grow(&buf.rows, (hi-lo)*v.rowBytes)
	if err := v.rawRows(lo, hi, b); err != nil {
		return nil, err
	}
	var sb []byte
	if v.h.Precision == Int8 {
		sb = grow(&buf.scales, 4*(hi-lo))
		if err := v.rawScales(lo, hi, sb); err != nil {
			return nil, err
		}
	}
	return viewRows(b, sb, hi-lo, int(v.h.Dim), v.h.Precision), nil
}
