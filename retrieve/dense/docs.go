package dense

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/internal/idtable"
	"github.com/distill-rag/distill/retrieve/internal/mmap"
	"github.com/distill-rag/distill/retrieve/internal/raw"
	"github.com/distill-rag/distill/retrieve/internal/record"
)

// docs.bin holds the passages, in row order, so that hits carry whole
// passages without going back to the corpus:
//
//	[0:8)     magic "DSTLDDOC"
//	records   one per passage: id and title (record.AppendString), then
//	          the body, text and sentences (record.AppendBody)
//	offsets   [N+1]uint64: where each record starts, the last where they end
//	idHash    [H]uint32: open addressing from FNV-1a(id) to row+1 (0 empty),
//	          H a power of two at least 2N
//	trailer   64 bytes: "DSTLDEND", version, N, the offsets' position, H,
//	          the table's position, CRC-32C of the trailer's first 48 bytes
//
// Sections start on 8-byte boundaries.

// docWriter streams passages into a temporary docs file and finishes it
// with the offsets, the id table and the trailer.
type docWriter struct {
	f    *os.File
	w    *bufio.Writer
	off  []uint64
	pos  uint64
	buf  []byte
	path string
}

func newDocWriter(dir string) (*docWriter, error) {
	path := filepath.Join(dir, docsFile)
	f, err := os.CreateTemp(dir, "."+docsFile+data.TmpMarker+"*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	w := &docWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), path: path}
	w.w.WriteString(docsMagic)
	w.pos = uint64(len(docsMagic))
	w.off = append(w.off, w.pos)
	return w, nil
}

func (w *docWriter) add(p data.Passage) error {
	if p.ID == "" {
		return errors.New("empty doc id")
	}
	b := record.AppendString(w.buf[:0], p.ID)
	b = record.AppendString(b, p.Title)
	b = record.AppendBody(b, p.Text, p.Sentences)
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	w.pos += uint64(len(b))
	w.off = append(w.off, w.pos)
	return nil
}

func (w *docWriter) count() int { return len(w.off) - 1 }

// finish writes the tables and trailer, syncs the file and renames it into
// place. Duplicate ids are found here.
func (w *docWriter) finish() (err error) {
	defer func() {
		if err != nil {
			w.abort()
		}
	}()
	n := w.count()
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	// The id table needs the ids back: read them from the records written.
	recs, unmap, err := mmap.Map(w.f.Name(), false)
	if err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	table, err := idtable.Build(n, func(row int) []byte {
		r := record.Reader{B: recs[w.off[row]:w.off[row+1]]}
		return r.Bytes()
	})
	unmap()
	if err != nil {
		return err
	}

	pad := align8(w.pos) - w.pos
	w.w.Write(make([]byte, pad))
	offsetsAt := w.pos + pad
	w.w.Write(raw.Bytes(w.off))
	tableAt := offsetsAt + 8*uint64(len(w.off))
	w.w.Write(raw.Bytes(table))
	end := tableAt + 4*uint64(len(table))
	pad = align8(end) - end
	w.w.Write(make([]byte, pad))
	t := make([]byte, docsTrailer)
	copy(t, docsEndMagic)
	le := binary.LittleEndian
	le.PutUint32(t[8:], docsVersion)
	le.PutUint64(t[16:], uint64(n))
	le.PutUint64(t[24:], offsetsAt)
	le.PutUint64(t[32:], uint64(len(table)))
	le.PutUint64(t[40:], tableAt)
	le.PutUint32(t[48:], crc32.Checksum(t[:48], castagnoli))
	w.w.Write(t)
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := os.Rename(w.f.Name(), w.path); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

func (w *docWriter) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// docStore reads docs.bin. Every length is checked against the buffer, so a
// damaged file gives errors, never a panic.
type docStore struct {
	b     []byte
	n     int
	off   []uint64
	table []uint32
}

func openDocs(b []byte) (docStore, error) {
	bad := func(what string) (docStore, error) {
		return docStore{}, fmt.Errorf("%s: %s: %w", docsFile, what, errCorrupt)
	}
	if len(b) < len(docsMagic)+docsTrailer || string(b[:len(docsMagic)]) != docsMagic {
		return bad("not a distill dense docs file")
	}
	t := b[len(b)-docsTrailer:]
	le := binary.LittleEndian
	if string(t[:8]) != docsEndMagic {
		return bad("trailer")
	}
	if v := le.Uint32(t[8:]); v != docsVersion {
		return docStore{}, fmt.Errorf("%s: format version %d, this build reads version %d: rebuild the index", docsFile, v, docsVersion)
	}
	if crc32.Checksum(t[:48], castagnoli) != le.Uint32(t[48:]) {
		return bad("trailer checksum")
	}
	n, offAt, h, tableAt := le.Uint64(t[16:]), le.Uint64(t[24:]), le.Uint64(t[32:]), le.Uint64(t[40:])
	body := uint64(len(b) - docsTrailer)
	if n > math.MaxInt32 || h != uint64(idtable.Size(int(n))) || offAt%8 != 0 || offAt > body ||
		(n+1)*8 > body-offAt || tableAt != offAt+8*(n+1) || h*4 > body-tableAt {
		return bad("table positions")
	}
	s := docStore{
		b: b, n: int(n),
		off:   raw.Load[uint64](b[offAt : offAt+8*(n+1)]),
		table: raw.Load[uint32](b[tableAt : tableAt+4*h]),
	}
	if s.off[0] != uint64(len(docsMagic)) || s.off[n] > offAt {
		return bad("record offsets")
	}
	for i := 1; i <= s.n; i++ {
		if s.off[i] < s.off[i-1] {
			return bad("record offsets")
		}
	}
	for _, v := range s.table {
		if int(v) > s.n {
			return bad("id table")
		}
	}
	return s, nil
}

func (s *docStore) record(row int) record.Reader {
	return record.Reader{B: s.b[s.off[row]:s.off[row+1]]}
}

// id returns the id of row without copying.
func (s *docStore) id(row int) []byte {
	r := s.record(row)
	return r.Bytes()
}

// lookup returns the row of id, or -1.
func (s *docStore) lookup(id string) int {
	return idtable.Lookup(s.table, id, s.id)
}

// passage decodes row into a fresh Passage; with titlesOnly, the id and
// title alone.
func (s *docStore) passage(row int, titlesOnly bool) (data.Passage, error) {
	r := s.record(row)
	p := data.Passage{ID: string(r.Bytes()), Title: string(r.Bytes())}
	if !titlesOnly {
		p.Text, p.Sentences = r.Body()
	}
	if r.Err != nil {
		return p, fmt.Errorf("%s: passage %d: %w", docsFile, row, r.Err)
	}
	return p, nil
}
