package bm25

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// Postings are gathered in segments of consecutive passages, so that the
// memory a build needs for them is bounded whatever the corpus size. When
// a segment holds segmentPostings postings it is sorted by term and
// written to a temporary file; at the end, the segments are merged term by
// term into index.bin, reading every file once, in order.
//
// Terms get their final numbers (list numbers: the place of their postings
// in index.bin) in the order they first occur in the corpus, as segments
// are sorted. Those numbers, and so the index's bytes, do not depend on
// how many workers analysed the corpus or how it was cut into segments.

// defaultSegmentPostings bounds a segment: 64 Mi postings, 768 MiB of
// buffers while it is sorted.
const defaultSegmentPostings = 1 << 26

// segmenter gathers the postings of the current segment and numbers the
// terms.
type segmenter struct {
	dir   string // for the segment files
	limit int
	// The current segment: passages from first on, in corpus order.
	first uint32
	ends  []uint32 // postings of the segment's passage i end at ends[i]
	terms []int32  // dictionary numbers until sorted, then list numbers
	tfs   []uint16
	// list[t] is the list number of dictionary term t, or -1; terms[l] is
	// the dictionary term of list l; df[l] its document frequency.
	list  []int32
	lists []int32
	df    []uint32
	files []segmentFile
	// Scratch reused from one segment to the next.
	start     []uint64
	sortedDoc []uint32
	sortedTF  []uint16
}

// segmentFile is a segment written out: lists uint32 counts (postings of
// each list, for the lists numbered when it was written), then the
// documents of every posting (uint32), then their frequencies (uint16),
// both grouped by list.
type segmentFile struct {
	path     string
	lists    int
	postings int
}

// add appends the postings of one passage of a job.
func (s *segmenter) add(terms []int32, tfs []uint16) {
	s.terms = append(s.terms, terms...)
	s.tfs = append(s.tfs, tfs...)
	s.ends = append(s.ends, uint32(len(s.terms)))
}

// full reports whether the segment should be written out.
func (s *segmenter) full() bool { return len(s.terms) >= s.limit }

// sort numbers the terms of the segment's postings (dictionary holds
// every term met so far) and sorts the postings by list, documents
// ascending within a list. It returns the postings of each list as
// [start[l], start[l+1]) of the sorted arrays.
func (s *segmenter) sort(dictionary int) (start []uint64, docs []uint32, tfs []uint16) {
	for len(s.list) < dictionary {
		s.list = append(s.list, -1)
	}
	count := s.start[:0]
	for i, t := range s.terms {
		l := s.list[t]
		if l < 0 {
			l = int32(len(s.lists))
			s.list[t] = l
			s.lists = append(s.lists, t)
			s.df = append(s.df, 0)
		}
		s.terms[i] = l
		for int(l) >= len(count) {
			count = append(count, 0)
		}
		count[l]++
	}
	for len(count) < len(s.lists) {
		count = append(count, 0)
	}
	// count becomes the start of each list, then (below) its end.
	var sum uint64
	for l, c := range count {
		s.df[l] += uint32(c)
		count[l] = sum
		sum += c
	}
	count = append(count, sum)
	s.sortedDoc = slices.Grow(s.sortedDoc[:0], len(s.terms))[:len(s.terms)]
	s.sortedTF = slices.Grow(s.sortedTF[:0], len(s.terms))[:len(s.terms)]
	i := 0
	for d, end := range s.ends {
		doc := s.first + uint32(d)
		for ; i < int(end); i++ {
			l := s.terms[i]
			j := count[l]
			count[l]++
			s.sortedDoc[j] = doc
			s.sortedTF[j] = s.tfs[i]
		}
	}
	// Shift the ends back into starts.
	copy(count[1:], count[:len(count)-1])
	count[0] = 0
	s.start = count
	return count, s.sortedDoc, s.sortedTF
}

// flush sorts the segment and writes it to a file of its own.
func (s *segmenter) flush(dictionary int) error {
	start, docs, tfs := s.sort(dictionary)
	path := filepath.Join(s.dir, fmt.Sprintf("segment-%05d", len(s.files)))
	err := writeFile(path, func(w *bufio.Writer) error {
		counts := make([]uint32, len(start)-1)
		for l := range counts {
			counts[l] = uint32(start[l+1] - start[l])
		}
		w.Write(raw.Bytes(counts))
		w.Write(raw.Bytes(docs))
		_, err := w.Write(raw.Bytes(tfs))
		return err
	})
	if err != nil {
		return err
	}
	s.files = append(s.files, segmentFile{path: path, lists: len(start) - 1, postings: len(docs)})
	s.next()
	return nil
}

// next starts a new segment after the current one.
func (s *segmenter) next() {
	s.first += uint32(len(s.ends))
	s.ends = s.ends[:0]
	s.terms = s.terms[:0]
	s.tfs = s.tfs[:0]
}

func writeFile(path string, fill func(w *bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// postingLists yields, for list numbers 0, 1, 2, ... in turn, the
// postings of each list in one segment.
type postingLists interface {
	next(l int) (docs []uint32, tfs []uint16, err error)
	close() error
}

// memoryLists are the lists of a segment sorted in memory.
type memoryLists struct {
	start []uint64
	docs  []uint32
	tfs   []uint16
}

func (m *memoryLists) next(l int) ([]uint32, []uint16, error) {
	if l+1 >= len(m.start) {
		return nil, nil, nil
	}
	a, b := m.start[l], m.start[l+1]
	return m.docs[a:b], m.tfs[a:b], nil
}

func (m *memoryLists) close() error { return nil }

// fileLists read a segment file front to back through three buffered
// readers: the counts, the documents and the frequencies.
type fileLists struct {
	f                 *os.File
	seg               segmentFile
	counts, docs, tfs *bufio.Reader
	num               [4]byte
	docBuf, tfBuf     []byte
}

func openLists(seg segmentFile) (*fileLists, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return nil, err
	}
	docsOff := 4 * int64(seg.lists)
	tfsOff := docsOff + 4*int64(seg.postings)
	section := func(off, n int64) *bufio.Reader {
		return bufio.NewReaderSize(io.NewSectionReader(f, off, n), 1<<18)
	}
	return &fileLists{
		f: f, seg: seg,
		counts: section(0, docsOff),
		docs:   section(docsOff, 4*int64(seg.postings)),
		tfs:    section(tfsOff, 2*int64(seg.postings)),
	}, nil
}

func (r *fileLists) next(l int) ([]uint32, []uint16, error) {
	if l >= r.seg.lists {
		return nil, nil, nil
	}
	if _, err := io.ReadFull(r.counts, r.num[:]); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", r.seg.path, err)
	}
	n := int(binary.LittleEndian.Uint32(r.num[:]))
	r.docBuf = slices.Grow(r.docBuf[:0], 4*n)[:4*n]
	r.tfBuf = slices.Grow(r.tfBuf[:0], 2*n)[:2*n]
	if _, err := io.ReadFull(r.docs, r.docBuf); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", r.seg.path, err)
	}
	if _, err := io.ReadFull(r.tfs, r.tfBuf); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", r.seg.path, err)
	}
	return raw.Load[uint32](r.docBuf), raw.Load[uint16](r.tfBuf), nil
}

func (r *fileLists) close() error {
	err := r.f.Close()
	if rerr := os.Remove(r.seg.path); err == nil {
		err = rerr
	}
	return err
}
