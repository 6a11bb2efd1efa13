package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/idtable"
	"github.com/distill-rag/distill/retrieve/internal/metafile"
	"github.com/distill-rag/distill/retrieve/internal/mmap"
	"github.com/distill-rag/distill/retrieve/internal/raw"
	"github.com/distill-rag/distill/retrieve/internal/record"
)

// Index is a BM25 index opened from disk. It meets the retrieve contract:
// hits with equal scores come in corpus order (the order passages were
// indexed), as Lucene orders them. Scores are textbook BM25,
//
//	sum over query terms t: qtf(t) * idf(t) * tf*(k1+1) / (tf + k1*(1-b+b*dl/avgdl))
//	idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))
//
// with exact document lengths (Lucene ranks the same but drops the constant
// (k1+1) and rounds lengths to one byte). A term repeated in the query counts
// once per occurrence, as it does in a Lucene bag-of-words query.
//
// An Index is safe for concurrent use. Close releases the mapping; searches
// after Close fail with ErrClosed.
type Index struct {
	files *mmap.Set

	n, v     int
	k1, b    float64
	avgLen   float64
	norm     lengthNorms
	termOff  []uint64
	termData []byte
	postOff  []uint64
	postDoc  []uint32
	postTF   []uint16
	termMax  []float32
	termList []uint32 // nil in a version 1 index: term i's list is i
	// The block table (nil before version 3: every list is one block).
	blockShift uint
	blockOff   []uint64
	blockLast  []uint32
	blockMax   []float32
	idOff      []uint64
	idData     []byte
	idHash     []uint32
	titleOff   []uint64
	titleData  []byte
	docOff     []uint64
	docData    []byte
	meta       Meta

	scratch sync.Pool // *searcher
	// checked has a bit per term whose postings have been verified.
	checked []atomic.Uint64
	// exhaustive turns pruning off, for tests that check it changes nothing.
	exhaustive bool
}

// ErrClosed is returned by searches on a closed Index.
var ErrClosed = errors.New("bm25: index is closed")

// Open opens the index that Build wrote in dir. The index file is mapped
// into memory, not read, so opening is fast whatever the corpus size; the
// file is checked for consistency so that a damaged index gives an error,
// never a crash.
func Open(dir string) (*Index, error) {
	files := &mmap.Set{}
	b, err := files.Map(filepath.Join(dir, indexFile), false)
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	docs, err := files.Map(filepath.Join(dir, docsFile), true)
	if err != nil {
		files.Close()
		return nil, fmt.Errorf("open index: %w", err)
	}
	x, err := newIndex(b, docs)
	if err != nil {
		files.Close()
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	}
	x.files = files
	var m Meta
	if metafile.Read(dir, &m) == nil {
		if _, err := analysis.ParseStemmer(string(m.Stemmer)); err != nil {
			files.Close()
			return nil, fmt.Errorf("open index %s: meta.json: %w", dir, err)
		}
		x.meta = m
	}
	return x, nil
}

// newIndex uses the contents of index.bin and docs.bin.
func newIndex(b, docs []byte) (*Index, error) {
	h, err := decodeHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Docs > math.MaxUint32 || h.Terms > math.MaxUint32 {
		return nil, fmt.Errorf("counts out of range: %w", errCorrupt)
	}
	sec := func(i int) []byte { s := h.Sections[i]; return b[s.Off : s.Off+s.Len] }
	x := &Index{
		files: &mmap.Set{}, // Open sets the one holding the mappings
		n:     int(h.Docs), v: int(h.Terms), k1: h.K1, b: h.B, avgLen: avgLen(h),
		termOff:   raw.Load[uint64](sec(secTermOff)),
		termData:  sec(secTermData),
		postOff:   raw.Load[uint64](sec(secPostOff)),
		postDoc:   raw.Load[uint32](sec(secPostDoc)),
		postTF:    raw.Load[uint16](sec(secPostTF)),
		termMax:   raw.Load[float32](sec(secTermMax)),
		idOff:     raw.Load[uint64](sec(secIDOff)),
		idData:    sec(secIDData),
		idHash:    raw.Load[uint32](sec(secIDHash)),
		titleOff:  raw.Load[uint64](sec(secTitleOff)),
		titleData: sec(secTitleData),
		docOff:    raw.Load[uint64](sec(secDocOff)),
		termList:  raw.Load[uint32](sec(secTermList)),
		blockOff:  raw.Load[uint64](sec(secBlockOff)),
		blockLast: raw.Load[uint32](sec(secBlockLast)),
		blockMax:  raw.Load[float32](sec(secBlockMax)),
	}
	if h.BlockSize > 0 {
		x.blockShift = uint(bits.TrailingZeros32(h.BlockSize))
	}
	if len(docs) < len(docsMagic) || string(docs[:len(docsMagic)]) != docsMagic {
		return nil, fmt.Errorf("%s: %w", docsFile, errCorrupt)
	}
	x.docData = docs[len(docsMagic):]
	if err := x.check(); err != nil {
		return nil, err
	}
	x.norm = newLengthNorms(raw.Load[uint32](sec(secDocLen)), x.k1, x.b, x.avgLen)
	x.scratch.New = func() any { return &searcher{} }
	return x, nil
}

// check verifies every offset and document number the searches rely on.
func (x *Index) check() error {
	ascending := func(off []uint64, limit uint64) bool {
		if off[0] != 0 || off[len(off)-1] != limit {
			return false
		}
		for i := 1; i < len(off); i++ {
			if off[i] < off[i-1] {
				return false
			}
		}
		return true
	}
	switch {
	case !ascending(x.termOff, uint64(len(x.termData))):
		return fmt.Errorf("term offsets: %w", errCorrupt)
	case !ascending(x.postOff, uint64(len(x.postDoc))):
		return fmt.Errorf("posting offsets: %w", errCorrupt)
	case !ascending(x.docOff, uint64(len(x.docData))):
		return fmt.Errorf("document offsets: %w", errCorrupt)
	case !ascending(x.idOff, uint64(len(x.idData))):
		return fmt.Errorf("id offsets: %w", errCorrupt)
	case !ascending(x.titleOff, uint64(len(x.titleData))):
		return fmt.Errorf("title offsets: %w", errCorrupt)
	case x.n > 0 && x.avgLen <= 0:
		return fmt.Errorf("average length: %w", errCorrupt)
	case x.blockOff != nil && !ascending(x.blockOff, uint64(len(x.blockLast))):
		return fmt.Errorf("block offsets: %w", errCorrupt)
	}
	for _, d := range x.idHash {
		if int(d) > x.n {
			return fmt.Errorf("id table: %w", errCorrupt)
		}
	}
	for _, l := range x.termList {
		if int(l) >= x.v {
			return fmt.Errorf("term lists: %w", errCorrupt)
		}
	}
	for _, m := range x.termMax {
		if !(m >= 0 && m <= 1) {
			return fmt.Errorf("term bounds: %w", errCorrupt)
		}
	}
	x.checked = make([]atomic.Uint64, (x.v+63)/64)
	return nil
}

// checkPostings verifies the posting list of term t the first time a search
// uses it: document numbers ascending and in range, and its blocks (as
// many as its length calls for, each ending at the document of its last
// posting, bounds in [0, 1]). Checking lazily keeps Open from reading (and
// making resident) every posting of a large index.
func (x *Index) checkPostings(t int32) error {
	word, bit := &x.checked[t>>6], uint64(1)<<(t&63)
	if word.Load()&bit != 0 {
		return nil
	}
	docs := x.postDoc[x.postOff[t]:x.postOff[t+1]]
	prev := -1
	for _, d := range docs {
		if int(d) <= prev || int(d) >= x.n {
			return fmt.Errorf("postings of term %d: %w", t, errCorrupt)
		}
		prev = int(d)
	}
	if x.blockOff != nil {
		lo, hi := x.blockOff[t], x.blockOff[t+1]
		size := 1 << x.blockShift
		if hi-lo != uint64(blocks(len(docs), size)) {
			return fmt.Errorf("blocks of term %d: %d for %d postings: %w", t, hi-lo, len(docs), errCorrupt)
		}
		for i, last := range x.blockLast[lo:hi] {
			if m := x.blockMax[lo+uint64(i)]; last != docs[min((i+1)*size, len(docs))-1] || !(m >= 0 && m <= 1) {
				return fmt.Errorf("block %d of term %d: %w", i, t, errCorrupt)
			}
		}
	}
	word.Or(bit)
	return nil
}

// Close releases the index. It waits for searches in flight and is
// idempotent.
func (x *Index) Close() error { return x.files.Close() }

// Len returns the number of indexed passages.
func (x *Index) Len() int { return x.n }

// Meta returns the description stored with the index (zero if meta.json was
// missing or unreadable; the index itself does not need it).
func (x *Index) Meta() Meta { return x.meta }

// Params returns the BM25 parameters the index scores with.
func (x *Index) Params() (k1, b float64) { return x.k1, x.b }

// term returns the number of the posting list of term s, or -1.
func (x *Index) term(s string) int {
	lo, hi := 0, x.v
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(x.termData[x.termOff[m]:x.termOff[m+1]]) < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < x.v && string(x.termData[x.termOff[lo]:x.termOff[lo+1]]) == s {
		if x.termList != nil {
			return int(x.termList[lo])
		}
		return lo
	}
	return -1
}

// docID returns the id of document d without allocating.
func (x *Index) docID(d uint32) []byte {
	return x.idData[x.idOff[d]:x.idOff[d+1]]
}

// lookup returns the document number of id, or -1.
func (x *Index) lookup(id string) int {
	return idtable.Lookup(x.idHash, id, func(d int) []byte { return x.docID(uint32(d)) })
}

// header returns the id and title of document d, read from index.bin alone.
func (x *Index) header(d uint32) data.Passage {
	return data.Passage{ID: string(x.docID(d)), Title: string(x.titleData[x.titleOff[d]:x.titleOff[d+1]])}
}

// passage decodes stored document d into a fresh Passage.
func (x *Index) passage(d uint32) (data.Passage, error) {
	p := x.header(d)
	r := record.Reader{B: x.docData[x.docOff[d]:x.docOff[d+1]]}
	p.Text, p.Sentences = r.Body()
	if r.Err != nil {
		return p, fmt.Errorf("document %d: %w", d, r.Err)
	}
	return p, nil
}

// Search implements retrieve.Retriever.
func (x *Index) Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	if q.K < 1 {
		return nil, retrieve.ErrBadK
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !x.files.Use() {
		return nil, ErrClosed
	}
	defer x.files.Done()
	s := x.scratch.Get().(*searcher)
	defer x.scratch.Put(s)
	top, err := s.search(x, q)
	if err != nil {
		return nil, err
	}
	hits := make([]retrieve.Hit, len(top))
	for i, c := range top {
		p := x.header(c.doc)
		if !q.TitlesOnly {
			if p, err = x.passage(c.doc); err != nil {
				return nil, err
			}
		}
		hits[i] = retrieve.Hit{Passage: p, Score: float64(c.score)}
	}
	return hits, nil
}
