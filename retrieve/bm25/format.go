package bm25

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/distill-rag/distill/retrieve/internal/idtable"
	"github.com/distill-rag/distill/retrieve/internal/record"
)

// The index is a directory holding meta.json (a human-readable
// description), index.bin and docs.bin. index.bin is one little-endian file
// laid out so that it can be mapped into memory and used without parsing:
//
//	header (headerSize bytes): magic, version, counts, k1, b, section table
//	docLen   [N]uint32    analysed length of each document (title + text)
//	termOff  [V+1]uint64  offsets of each term in termData; terms sorted bytewise
//	termData []byte       the terms, concatenated
//	postOff  [V+1]uint64  offsets of each posting list in postDoc/postTF
//	postDoc  [P]uint32    document numbers, ascending within a list
//	postTF   [P]uint16    term frequencies (saturating at 65535)
//	termMax  [V]float32   largest impact tf/(tf+norm) of each list, for pruning
//	idOff    [N+1]uint64  offsets of each doc id in idData
//	idData   []byte       the doc ids, concatenated in document order
//	idHash   [H]uint32    open-addressing table (package idtable) from id to document
//	                      number + 1 (0: empty slot), H a power of two >= 2N
//	titleOff [N+1]uint64  offsets of each title in titleData
//	titleData []byte      the titles, concatenated in document order
//	docOff   [N+1]uint64  offsets of each stored document in docs.bin's body
//	termList [V]uint32    the posting list of each term, in the terms' order
//	blockOff [V+1]uint64  offsets of each list's blocks in blockLast and blockMax
//	blockLast [K]uint32   the last document of each block
//	blockMax [K]float32   the largest impact of each block
//
// Posting lists are numbered in the order their terms first occur in the
// corpus, which lets a build write them out segment by segment (see
// segment.go). Version 1 had no termList: the i-th term's list was the
// i-th; this build still reads it.
//
// From version 3 on, the postings of a list longer than one block are cut
// into blocks of BlockSize (the header's, a power of two; the last block
// may be shorter), and each block has its last document and its largest
// impact, so that a search can skip whole blocks whose best possible
// contribution cannot reach the top k (see search.go). A list of one block
// has none: its last posting and termMax say the same. Versions 1 and 2
// had no blocks; this build reads them and searches them without block
// skipping, with the same results.
//
// Every section starts on an 8-byte boundary. docs.bin is docsMagic
// followed by the stored documents (see encodeDoc); searches touch it only
// for the passages whose text they return.
const (
	magic         = "DSTLBM25"
	docsMagic     = "DSTLDOCS"
	formatVersion = 3
	// blockSize is the number of postings per block that Build writes:
	// 8 bytes a block, about 1% of the postings' 6 bytes each.
	blockSize  = 128
	headerSize = 512
	indexFile  = "index.bin"
	docsFile   = "docs.bin"
)

const (
	secDocLen = iota
	secTermOff
	secTermData
	secPostOff
	secPostDoc
	secPostTF
	secTermMax
	secIDOff
	secIDData
	secIDHash
	secTitleOff
	secTitleData
	secDocOff
	secTermList // version 2 on
	secBlockOff // version 3 on
	secBlockLast
	secBlockMax
	numSections
)

// The section table must fit in the header: this fails to compile if not.
const _ = uint(headerSize - 64 - 16*numSections)

// header is the fixed part at the start of index.bin.
type header struct {
	Version   uint32
	BlockSize uint32 // version 3 on; 0 before
	Docs      uint64
	Terms     uint64
	Postings  uint64
	TotalLen  uint64
	K1, B     float64
	Sections  [numSections]section
}

type section struct{ Off, Len uint64 }

func (h *header) encode() []byte {
	b := make([]byte, headerSize)
	copy(b, magic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], h.Version)
	le.PutUint32(b[12:], h.BlockSize)
	le.PutUint64(b[16:], h.Docs)
	le.PutUint64(b[24:], h.Terms)
	le.PutUint64(b[32:], h.Postings)
	le.PutUint64(b[40:], h.TotalLen)
	le.PutUint64(b[48:], math.Float64bits(h.K1))
	le.PutUint64(b[56:], math.Float64bits(h.B))
	for i, s := range h.Sections {
		le.PutUint64(b[64+16*i:], s.Off)
		le.PutUint64(b[72+16*i:], s.Len)
	}
	return b
}

var errCorrupt = record.ErrCorrupt

func decodeHeader(b []byte) (header, error) {
	var h header
	if len(b) < headerSize || string(b[:8]) != magic {
		return h, fmt.Errorf("not a distill BM25 index: %w", errCorrupt)
	}
	le := binary.LittleEndian
	h.Version = le.Uint32(b[8:])
	if h.Version < 1 || h.Version > formatVersion {
		return h, fmt.Errorf("index format version %d, this build reads versions 1 to %d: rebuild it with distill index", h.Version, formatVersion)
	}
	h.BlockSize = le.Uint32(b[12:])
	if h.Version < 3 && h.BlockSize != 0 || h.Version >= 3 && (h.BlockSize < 2 || h.BlockSize > 1<<16 || h.BlockSize&(h.BlockSize-1) != 0) {
		return h, fmt.Errorf("block size %d: %w", h.BlockSize, errCorrupt)
	}
	h.Docs = le.Uint64(b[16:])
	h.Terms = le.Uint64(b[24:])
	h.Postings = le.Uint64(b[32:])
	h.TotalLen = le.Uint64(b[40:])
	h.K1 = math.Float64frombits(le.Uint64(b[48:]))
	h.B = math.Float64frombits(le.Uint64(b[56:]))
	for i := range h.Sections {
		h.Sections[i] = section{le.Uint64(b[64+16*i:]), le.Uint64(b[72+16*i:])}
		s := h.Sections[i]
		if s.Off%8 != 0 || s.Off > uint64(len(b)) || s.Len > uint64(len(b))-s.Off {
			return h, fmt.Errorf("section %d out of bounds: %w", i, errCorrupt)
		}
	}
	want := [numSections]uint64{
		secDocLen: 4 * h.Docs, secTermOff: 8 * (h.Terms + 1), secPostOff: 8 * (h.Terms + 1),
		secPostDoc: 4 * h.Postings, secPostTF: 2 * h.Postings, secTermMax: 4 * h.Terms,
		secIDOff: 8 * (h.Docs + 1), secIDHash: 4 * uint64(idtable.Size(int(min(h.Docs, 1<<40)))), secTitleOff: 8 * (h.Docs + 1),
		secDocOff: 8 * (h.Docs + 1), secTermList: 4 * h.Terms, secBlockOff: 8 * (h.Terms + 1),
		// The number of blocks is checked against blockOff on opening.
		secBlockLast: h.Sections[secBlockLast].Len, secBlockMax: h.Sections[secBlockLast].Len,
	}
	if h.Version < 2 {
		want[secTermList] = 0
	}
	if h.Version < 3 {
		want[secBlockOff], want[secBlockLast], want[secBlockMax] = 0, 0, 0
	}
	// Sections whose size can be zero are the ones a version lacks.
	sized := func(i int) bool { return i == secTermList || i >= secBlockOff }
	for i, w := range want {
		if (w != 0 || sized(i)) && h.Sections[i].Len != w {
			return h, fmt.Errorf("section %d has %d bytes, want %d: %w", i, h.Sections[i].Len, w, errCorrupt)
		}
	}
	if h.Sections[secBlockLast].Len%4 != 0 {
		return h, fmt.Errorf("block table of %d bytes: %w", h.Sections[secBlockLast].Len, errCorrupt)
	}
	return h, nil
}

// Stored documents are record bodies: the text, then the sentences (see
// package record).
func encodeDoc(b []byte, text string, sentences []string) []byte {
	return record.AppendBody(b, text, sentences)
}
