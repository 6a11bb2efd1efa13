package bm25

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/distill-rag/distill/retrieve/internal/idtable"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// indexer is the part of a build that runs on the goroutine that called
// Build: it takes the analysed batches in corpus order, streams the stored
// passages to docs.bin, gathers postings in segments, and finally writes
// index.bin.
type indexer struct {
	dict *dictionary
	seg  segmenter

	docLen    []uint32
	totalLen  uint64
	postings  uint64
	idOff     []uint64
	idData    []byte
	titleOff  []uint64
	titleData []byte
	docOff    []uint64
	docFile   *os.File
	docW      *bufio.Writer
	docBytes  uint64
	scratch   []byte
}

func newIndexer(dir string, dict *dictionary, segmentPostings int) (*indexer, error) {
	f, err := os.Create(filepath.Join(dir, docsFile))
	if err != nil {
		return nil, fmt.Errorf("build index: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(docsMagic)
	if segmentPostings <= 0 {
		segmentPostings = defaultSegmentPostings
	}
	return &indexer{
		dict:     dict,
		seg:      segmenter{dir: dir, limit: segmentPostings},
		docFile:  f,
		docW:     w,
		idOff:    []uint64{0},
		titleOff: []uint64{0},
		docOff:   []uint64{0},
	}, nil
}

// close releases docs.bin if the build stopped before finish.
func (x *indexer) close() { x.docFile.Close() }

// add stores the passages of j and adds their postings; before is the
// number of passages added so far, for error messages.
func (x *indexer) add(j *job, before int64) error {
	for i, p := range j.ps {
		if p.ID == "" {
			return fmt.Errorf("passage %d: empty doc id", before+int64(i)+1)
		}
		if len(x.docLen) >= math.MaxUint32-1 {
			return fmt.Errorf("passage %d: too many passages for one index", before+int64(i)+1)
		}
		lo := uint32(0)
		if i > 0 {
			lo = j.ends[i-1]
		}
		x.seg.add(j.terms[lo:j.ends[i]], j.tfs[lo:j.ends[i]])
		x.postings += uint64(j.ends[i] - lo)
		x.docLen = append(x.docLen, j.lens[i])
		x.totalLen += uint64(j.lens[i])
		x.idData = append(x.idData, p.ID...)
		x.idOff = append(x.idOff, uint64(len(x.idData)))
		x.titleData = append(x.titleData, p.Title...)
		x.titleOff = append(x.titleOff, uint64(len(x.titleData)))
		x.scratch = encodeDoc(x.scratch[:0], p.Text, p.Sentences)
		if _, err := x.docW.Write(x.scratch); err != nil {
			return fmt.Errorf("store passage: %w", err)
		}
		x.docBytes += uint64(len(x.scratch))
		x.docOff = append(x.docOff, x.docBytes)
		if x.seg.full() {
			if err := x.seg.flush(len(x.dict.snapshot())); err != nil {
				return fmt.Errorf("write postings: %w", err)
			}
		}
	}
	return nil
}

// finish closes docs.bin and writes index.bin in dir, merging the
// segments. It returns the header and the size of both files.
func (x *indexer) finish(ctx context.Context, dir string, k1, bParam float64) (header, int64, error) {
	if err := x.closeDocs(); err != nil {
		return header{}, 0, fmt.Errorf("build index: store passages: %w", err)
	}
	n := len(x.docLen)
	// The id table finds a document by id; building it also finds repeats.
	idHash, err := idtable.Build(n, func(d int) []byte { return x.idData[x.idOff[d]:x.idOff[d+1]] })
	if err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return header{}, 0, err
	}

	// The last segment stays in memory; the others are read back in order.
	terms := x.dict.snapshot()
	start, docs, tfs := x.seg.sort(len(terms))
	var lists []postingLists
	defer func() {
		for _, l := range lists {
			l.close()
		}
	}()
	for _, f := range x.seg.files {
		l, err := openLists(f)
		if err != nil {
			return header{}, 0, fmt.Errorf("build index: %w", err)
		}
		lists = append(lists, l)
	}
	lists = append(lists, &memoryLists{start: start, docs: docs, tfs: tfs})

	// Terms in byte order: order[i] is the list of the i-th term.
	v := len(x.seg.lists)
	order, termOff, termData := x.sortTerms(terms)
	postOff := make([]uint64, v+1)
	blockOff := make([]uint64, v+1)
	for l, df := range x.seg.df {
		postOff[l+1] = postOff[l] + uint64(df)
		blockOff[l+1] = blockOff[l] + uint64(blocks(int(df), blockSize))
	}
	nb := blockOff[v]

	h := header{
		Version: formatVersion, BlockSize: blockSize, Docs: uint64(n), Terms: uint64(v), Postings: x.postings,
		TotalLen: x.totalLen, K1: k1, B: bParam,
	}
	lay := newLayout(&h, map[int]uint64{
		secDocLen: 4 * uint64(n), secTermOff: 8 * uint64(v+1), secTermData: uint64(len(termData)),
		secTermList: 4 * uint64(v), secPostOff: 8 * uint64(v+1), secPostDoc: 4 * x.postings,
		secPostTF: 2 * x.postings, secTermMax: 4 * uint64(v), secIDOff: 8 * uint64(n+1),
		secIDData: uint64(len(x.idData)), secIDHash: 4 * uint64(len(idHash)), secTitleOff: 8 * uint64(n+1),
		secTitleData: uint64(len(x.titleData)), secDocOff: 8 * uint64(n+1),
		secBlockOff: 8 * uint64(v+1), secBlockLast: 4 * nb, secBlockMax: 4 * nb,
	})
	path := filepath.Join(dir, indexFile)
	f, err := os.Create(path)
	if err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	defer f.Close()
	for _, s := range []struct {
		sec int
		b   []byte
	}{
		{secDocLen, raw.Bytes(x.docLen)}, {secTermOff, raw.Bytes(termOff)}, {secTermData, termData},
		{secTermList, raw.Bytes(order)}, {secPostOff, raw.Bytes(postOff)}, {secIDOff, raw.Bytes(x.idOff)},
		{secIDData, x.idData}, {secIDHash, raw.Bytes(idHash)}, {secTitleOff, raw.Bytes(x.titleOff)},
		{secTitleData, x.titleData}, {secDocOff, raw.Bytes(x.docOff)}, {secBlockOff, raw.Bytes(blockOff)},
	} {
		if _, err := f.WriteAt(s.b, int64(h.Sections[s.sec].Off)); err != nil {
			return header{}, 0, fmt.Errorf("build index: write %s: %w", path, err)
		}
	}
	norm := norms(x.docLen, k1, bParam, float64(x.totalLen)/float64(max(n, 1)))
	termMax, err := mergeLists(ctx, f, &h, lists, x.seg.df, norm)
	if err != nil {
		return header{}, 0, fmt.Errorf("build index: write %s: %w", path, err)
	}
	if _, err := f.WriteAt(raw.Bytes(termMax), int64(h.Sections[secTermMax].Off)); err != nil {
		return header{}, 0, fmt.Errorf("build index: write %s: %w", path, err)
	}
	if _, err := f.WriteAt(h.encode(), 0); err != nil {
		return header{}, 0, fmt.Errorf("build index: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return header{}, 0, fmt.Errorf("build index: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	return h, int64(lay) + int64(len(docsMagic)) + int64(x.docBytes), nil
}

// closeDocs writes the passages' file to disk and closes it.
func (x *indexer) closeDocs() error {
	if err := x.docW.Flush(); err != nil {
		return err
	}
	if err := x.docFile.Sync(); err != nil {
		return err
	}
	return x.docFile.Close()
}

// sortTerms returns the terms in byte order: order[i] is the list of the
// i-th term, whose text is termData[termOff[i]:termOff[i+1]].
func (x *indexer) sortTerms(terms []string) (order []uint32, termOff []uint64, termData []byte) {
	type entry struct {
		word string
		list uint32
	}
	v := len(x.seg.lists)
	sorted := make([]entry, v)
	for l, t := range x.seg.lists {
		sorted[l] = entry{terms[t], uint32(l)}
	}
	slices.SortFunc(sorted, func(a, b entry) int { return cmp.Compare(a.word, b.word) })
	order = make([]uint32, v)
	termOff = make([]uint64, v+1)
	for i, e := range sorted {
		order[i] = e.list
		termData = append(termData, e.word...)
		termOff[i+1] = uint64(len(termData))
	}
	return order, termOff, termData
}

// newLayout places the sections of the given sizes one after the other,
// each on an 8-byte boundary, after the header, and returns the file size.
func newLayout(h *header, size map[int]uint64) uint64 {
	off := uint64(headerSize)
	for sec := range numSections {
		off = (off + 7) &^ 7
		h.Sections[sec] = section{Off: off, Len: size[sec]}
		off += size[sec]
	}
	return off
}

// blocks returns the number of blocks of a list of df postings: none for
// a list of one block (its last posting and its termMax are the block's).
func blocks(df, size int) int {
	if df <= size {
		return 0
	}
	return (df + size - 1) / size
}

// mergeLists writes the postings of every list, in list order, from the
// segments (in corpus order, so documents stay ascending) to the postDoc
// and postTF sections of f, and the block table of each list longer than
// a block to blockLast and blockMax; it returns the largest impact of each
// list.
func mergeLists(ctx context.Context, f *os.File, h *header, lists []postingLists, df []uint32, norm []float32) ([]float32, error) {
	writer := func(sec int) *bufio.Writer {
		return bufio.NewWriterSize(io.NewOffsetWriter(f, int64(h.Sections[sec].Off)), 1<<20)
	}
	docW, tfW := writer(secPostDoc), writer(secPostTF)
	lastW, maxW := writer(secBlockLast), writer(secBlockMax)
	size := int(h.BlockSize)
	termMax := make([]float32, len(df))
	var num [4]byte
	le := binary.LittleEndian
	for l := range df {
		if l%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var m, bm float32 // the list's largest impact, the block's
		got := 0
		blocked := blocks(int(df[l]), size) > 0
		for _, src := range lists {
			docs, tfs, err := src.next(l)
			if err != nil {
				return nil, err
			}
			docW.Write(raw.Bytes(docs))
			tfW.Write(raw.Bytes(tfs))
			for i, d := range docs {
				im := impact(tfs[i], norm[d])
				m = max(m, im)
				bm = max(bm, im)
				if got+i+1 == int(df[l]) || (got+i+1)%size == 0 {
					if blocked {
						lastW.Write(le.AppendUint32(num[:0], d))
						maxW.Write(le.AppendUint32(num[:0], math.Float32bits(bm)))
					}
					bm = 0
				}
			}
			got += len(docs)
		}
		if got != int(df[l]) {
			return nil, fmt.Errorf("list %d: %d postings in the segments, want %d", l, got, df[l])
		}
		termMax[l] = m
	}
	for _, w := range []*bufio.Writer{docW, tfW, lastW, maxW} {
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
	return termMax, nil
}
