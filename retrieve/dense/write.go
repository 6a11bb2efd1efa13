package dense

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// writeVectors writes vectors.bin from the checkpoints and returns its size.
func writeVectors(ctx context.Context, dir string, n, dim int, opts BuildOptions, hashes []uint64, id uint64) (int64, error) {
	h := newVectorsHeader(opts.Precision, n, dim, !opts.NoNormalize, id)
	err := writeVectorFile(filepath.Join(dir, vectorsFile), h, func(emit func([]float32) error) error {
		for c := range hashes {
			if err := ctx.Err(); err != nil {
				return err
			}
			first := c * opts.ChunkSize
			count := min(opts.ChunkSize, n-first)
			path := filepath.Join(dir, chunksDir, chunkName(c))
			vecs, err := readChunk(path, first, count, dim, hashes[c])
			if err != nil {
				if errors.Is(err, errCorrupt) {
					os.Remove(path)
					return fmt.Errorf("%w; it has been removed: run the build again to embed its passages again", err)
				}
				return err
			}
			if err := emit(vecs); err != nil {
				return err
			}
		}
		return nil
	})
	return int64(h.size()), err
}

// writeVectorFile writes a vectors file laid out by h; each calls emit
// with the float32 rows in order, any number at a time.
func writeVectorFile(path string, h vectorsHeader, each func(emit func([]float32) error) error) error {
	dim := int(h.Dim)
	var scales []float32
	var f16 []uint16
	var i8 []int8
	rows := uint64(0)
	return data.WriteAtomic(path, func(w *bufio.Writer) error {
		w.Write(h.encode())
		err := each(func(vecs []float32) error {
			if dim == 0 || len(vecs)%dim != 0 {
				return fmt.Errorf("write %s: %d floats are not whole rows of %d", path, len(vecs), dim)
			}
			rows += uint64(len(vecs) / dim)
			switch h.Precision {
			case Float32:
				w.Write(raw.Bytes(vecs))
			case Float16:
				f16 = f16[:0]
				for _, x := range vecs {
					f16 = append(f16, toFloat16(x))
				}
				w.Write(raw.Bytes(f16))
			case Int8:
				i8 = append(i8[:0], make([]int8, dim)...)
				for r := range len(vecs) / dim {
					scales = append(scales, quantizeInt8(i8, vecs[r*dim:(r+1)*dim]))
					w.Write(raw.Bytes(i8))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if rows != h.N {
			return fmt.Errorf("write %s: %d rows, want %d", path, rows, h.N)
		}
		if h.ScalesLen > 0 {
			w.Write(make([]byte, h.ScalesOff-(h.RowsOff+h.RowsLen)))
			w.Write(raw.Bytes(scales))
		}
		return nil
	})
}
