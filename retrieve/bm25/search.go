package bm25

import (
	"math"
	"slices"

	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
)

// searcher is the per-goroutine scratch of a search. A search walks the
// posting lists of the query's terms together, in document order, and
// scores one document at a time: it needs no accumulator over the corpus,
// and reads each list front to back, so its cost follows the postings it
// reads, with no random access into corpus-sized arrays but the length
// norm of the documents it scores.
type searcher struct {
	an      analysis.Analyzer
	terms   []queryTerm
	rests   []float32
	wb      []float32 // each term's bound in the current window
	order   []int
	look    []int
	lrest   []float32
	ess     []bool    // whether each term is essential (see walk)
	sums    []float32 // scratch of choose
	lefts   []int
	sink    uint16 // keeps the norms' early loads (see walk)
	lists   []cursor
	contrib []float32
	pruned  bool   // whether the last search skipped part of its postings
	skipped int    // windows of documents the last search skipped whole
	dealt   uint32 // the last document the last walk dealt with (see walk)
	// unlike counts the choices of essential terms (see choose) of the
	// last search that max-score's rule would have made otherwise.
	unlike  int
	exclude []uint32
	top     []candidate
	// tokTerm caches token -> term number (-1: stop word or unknown term), so
	// that frequent query words are stemmed once per searcher.
	tokTerm map[string]int32
}

// cursor is a place in a posting list, and in its blocks.
type cursor struct {
	docs []uint32
	tfs  []uint16
	pos  int
	// lasts[b] is the last document of block b of the list (its postings
	// from b*blockSize on), maxes[b] its largest impact; blk is the first
	// block that may hold documents from the last one asked of block on.
	lasts []uint32
	maxes []float32
	blk   int
	sink  uint32 // keeps the early loads of seek
}

// seek moves the cursor to the first posting at or after d, found through
// the block that holds it: in a long list, a lookup far ahead then reads a
// few block ends and one block rather than galloping over the postings.
// shift is the log of the block size; d must not decrease from one call
// to the next.
func (c *cursor) seek(d uint32, shift uint) {
	b := c.block(d)
	if b == len(c.lasts) {
		c.pos = len(c.docs)
		return
	}
	lo, hi := b<<shift, len(c.docs)
	if b+1 < len(c.lasts) {
		hi = (b + 1) << shift
	}
	if c.pos >= lo {
		// Already in the block: the next postings are the likeliest.
		c.pos += gallop(c.docs[c.pos:hi], d)
		return
	}
	// A block not read yet: its lines are loaded together first (the
	// loads do not wait on each other), then searched, rather than paying
	// a cache miss at each step of the search in a large index.
	docs := c.docs[lo:hi]
	var sink uint32
	for j := 0; j < len(docs); j += 16 {
		sink |= docs[j]
	}
	c.sink = sink
	c.pos = lo + gallop(docs, d)
}

// block returns the first block of the list that ends at or after d
// (len(c.lasts) if none): the block of the postings from d to its last.
// d must not decrease from one call to the next.
func (c *cursor) block(d uint32) int {
	c.blk += gallop(c.lasts[c.blk:], d)
	return c.blk
}

type queryTerm struct {
	term  int32
	count int32
	w     float32 // count * idf * (k1+1)
	bound float32 // no posting of the term adds more than this to a score
}

type candidate struct {
	score float32
	doc   uint32
}

// worse orders candidates: a lower score is worse, and among equal scores a
// later document is worse (hits tie-break in corpus order).
func worse(a, b candidate) bool {
	return a.score < b.score || (a.score == b.score && a.doc > b.doc)
}

const maxTokenCache = 1 << 16

// seedDocs is the most documents the first pass of a search looks at.
const seedDocs = 4096

// maxWindowBlocks is the most blocks of a non-essential list whose bounds
// a window reads; past that, it takes the list's.
const maxWindowBlocks = 8

// A list of fewer than one document in sparseList has the norms of its
// documents read ahead (see walk): those of a denser one share cache
// lines (32 norms a line) and are read in order.
const sparseList = 32

// boundSlack covers float32 rounding between a term's bound and the
// contributions actually added, so pruning never drops a true top-k hit.
const boundSlack = 1 + 1e-4

func (s *searcher) termOf(x *Index, tok []byte) int32 {
	if t, ok := s.tokTerm[string(tok)]; ok {
		return t
	}
	if s.tokTerm == nil || len(s.tokTerm) >= maxTokenCache {
		s.tokTerm = make(map[string]int32, 256)
	}
	t := int32(-1)
	if stem := x.meta.Stemmer.Normalize(tok); stem != "" {
		t = int32(x.term(stem))
	}
	s.tokTerm[string(tok)] = t
	return t
}

// search returns the top q.K candidates, best first. The result aliases the
// searcher's scratch and is valid until its next use.
//
// This is the "max-score" strategy, document at a time. Terms are ordered
// by the most they can add to a score, decreasing (rare terms first); a
// document's score is the sum of its terms' contributions in that order,
// whichever way it is found, so results are identical to scoring every
// posting. Once k documents are kept, the k-th score theta bounds what
// matters: terms whose bounds together stay below theta are not essential
// (a document that has none of the others cannot reach the top k); of
// those sets of terms, the one with the most postings is left out (see
// choose). Only the lists of the essential terms are walked; each document
// they yield is looked up in the others through their blocks, in
// decreasing order of bound, and dropped as soon as what it has plus what
// the remaining terms could add stays below theta. The blocks' bounds
// (see walk) skip stretches of the essential lists whole.
func (s *searcher) search(x *Index, q retrieve.Query) ([]candidate, error) {
	if err := s.parse(x, q.Text); err != nil {
		return nil, err
	}
	s.exclude = s.exclude[:0]
	for _, id := range q.Exclude {
		if d := x.lookup(id); d >= 0 {
			s.exclude = append(s.exclude, uint32(d))
		}
	}
	k := q.K
	terms := s.terms
	n := len(terms)
	// rests[i] bounds what terms[i:] can add together.
	rests := s.rests[:0]
	rests = append(rests, make([]float32, n+1)...)
	for i := n - 1; i >= 0; i-- {
		rests[i] = rests[i+1] + terms[i].bound
	}
	s.rests = rests
	lists := s.lists[:0]
	for _, qt := range terms {
		lo, hi := x.postOff[qt.term], x.postOff[qt.term+1]
		docs := x.postDoc[lo:hi]
		c := cursor{docs: docs, tfs: x.postTF[lo:hi][:len(docs)]}
		if x.blockOff != nil && x.blockOff[qt.term+1] > x.blockOff[qt.term] {
			lo, hi := x.blockOff[qt.term], x.blockOff[qt.term+1]
			c.lasts, c.maxes = x.blockLast[lo:hi], x.blockMax[lo:hi]
		} else if len(docs) > 0 {
			// One block: the list's last document and largest impact.
			c.lasts, c.maxes = docs[len(docs)-1:], x.termMax[qt.term:qt.term+1]
		}
		lists = append(lists, c)
	}
	s.lists = lists
	s.contrib = slices.Grow(s.contrib[:0], n)[:n]
	s.wb = slices.Grow(s.wb[:0], n)[:n]
	s.pruned, s.skipped, s.unlike = false, 0, 0

	// cut is theta less a margin for rounding: a document is dropped only
	// when even its bound stays below cut.
	cut := float32(math.Inf(-1))
	var seed []candidate
	var seedLast uint32
	if !x.exhaustive && n > 1 {
		// A first pass over the first documents of the first term alone
		// (the one of the largest bound, most often the rarest) finds k
		// real scores: a floor that lets the second pass skip from the
		// start what cannot beat them. Any k real scores are one, so the
		// pass stops after seedDocs documents: when the first term is a
		// common one, walking its whole list twice cost more than the
		// floor saved. The second pass starts from the first's best and
		// does not score again the documents of the first term that the
		// first dealt with.
		seed = s.walk(x, k, 1, cut, seedDocs, nil, 0)
		seedLast = s.dealt
		if len(seed) == k {
			cut = seed[0].score * (1 - 1e-6)
		}
		for i := range s.lists {
			s.lists[i].pos, s.lists[i].blk = 0, 0
		}
	}
	top := s.walk(x, k, n, cut, math.MaxInt, seed, seedLast)
	slices.SortFunc(top, func(a, b candidate) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	s.top = top
	return top, nil
}

// parse analyses the query into distinct index terms with their weights and
// bounds, ordered by decreasing bound.
func (s *searcher) parse(x *Index, text string) error {
	s.terms = s.terms[:0]
	s.an.Each(text, func(tok []byte) {
		t := s.termOf(x, tok)
		if t < 0 {
			return
		}
		for i := range s.terms {
			if s.terms[i].term == t {
				s.terms[i].count++
				return
			}
		}
		s.terms = append(s.terms, queryTerm{term: t, count: 1})
	})
	for i := range s.terms {
		qt := &s.terms[i]
		if err := x.checkPostings(qt.term); err != nil {
			return err
		}
		df := float64(x.postOff[qt.term+1] - x.postOff[qt.term])
		idf := math.Log(1 + (float64(x.n)-df+0.5)/(df+0.5))
		qt.w = float32(float64(qt.count) * idf * (x.k1 + 1))
		qt.bound = qt.w * x.termMax[qt.term] * boundSlack
	}
	slices.SortStableFunc(s.terms, func(a, b queryTerm) int {
		switch {
		case a.bound > b.bound:
			return -1
		case a.bound < b.bound:
			return 1
		}
		return 0
	})
	return nil
}

// gallop returns the index of the first element of docs that is >= d
// (len(docs) if none), probing 1, 2, 4, ... ahead before a binary search,
// so that a sequence of ascending probes costs the log of the gaps.
func gallop(docs []uint32, d uint32) int {
	if len(docs) == 0 || docs[0] >= d {
		return 0
	}
	lo, step := 0, 1
	for lo+step < len(docs) && docs[lo+step] < d {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(docs))
	// docs[lo] < d; answer in (lo, hi].
	for lo+1 < hi {
		m := int(uint(lo+hi) >> 1)
		if docs[m] < d {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

func siftUp(h []candidate, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown(h []candidate, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// lengthNorms gives the norm k1 * (1 - b + b*dl/avgdl) of each document
// from its length, kept in two bytes a document (half the memory of the
// norms themselves, so that more of them stay in cache), through a table
// of the norm of every length below 65535; longer documents are looked
// up in the index's four-byte lengths.
type lengthNorms struct {
	short         []uint16
	long          []uint32
	table         []float32
	k1, b, avgLen float64
}

func newLengthNorms(docLen []uint32, k1, b, avgLen float64) lengthNorms {
	n := lengthNorms{short: make([]uint16, len(docLen)), long: docLen, k1: k1, b: b, avgLen: avgLen}
	n.table = make([]float32, math.MaxUint16)
	for l := range n.table {
		n.table[l] = n.norm(uint32(l))
	}
	for d, l := range docLen {
		n.short[d] = uint16(min(l, math.MaxUint16))
	}
	return n
}

// norm is the norm of length l, as norms computes it.
func (n *lengthNorms) norm(l uint32) float32 {
	return float32(n.k1 * (1 - n.b + n.b*float64(l)/n.avgLen))
}

func (n *lengthNorms) of(d uint32) float32 {
	if l := n.short[d]; l != math.MaxUint16 {
		return n.table[l]
	}
	return n.norm(n.long[d])
}
