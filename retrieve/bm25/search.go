package bm25

import (
	"math"
	"slices"

	"github.com/distill-rag/distill/retrieve"
)

// searcher is the per-goroutine scratch of a search: a score accumulator with
// one slot per document, reset after each query through the list of slots it
// touched, so a query costs the length of the postings it reads, not the
// corpus size.
type searcher struct {
	an         Analyzer
	scores     []float32
	touched    []uint32
	candidates []uint32
	terms      []queryTerm
	rests      []float32
	bits       []uint64 // candidate set during probe; all zero between searches
	pruned     bool     // whether the last search skipped part of its postings
	exclude    []uint32
	top        []candidate
	// tokTerm caches token -> term number (-1: stop word or unknown term), so
	// that frequent query words are stemmed once per searcher.
	tokTerm map[string]int32
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
	if stem := Normalize(tok); stem != "" {
		t = int32(x.term(stem))
	}
	s.tokTerm[string(tok)] = t
	return t
}

// search returns the top q.K candidates, best first. The result aliases the
// searcher's scratch and is valid until its next use.
//
// Terms are read in decreasing order of the most they can add to a score
// (rare terms first). Once the k-th best score so far beats what all the
// remaining terms together could add, no unseen document can reach the top
// k: the remaining (frequent, long) posting lists are then only probed for
// the documents that still can, instead of being read whole. This is the
// "max-score" strategy; results are identical to scoring every posting.
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
	// rests[i] bounds what terms[i:] can add together.
	rests := s.rests[:0]
	rests = append(rests, make([]float32, len(terms)+1)...)
	for i := len(terms) - 1; i >= 0; i-- {
		rests[i] = rests[i+1] + terms[i].bound
	}
	s.rests = rests

	scores, norm := s.scores, x.norm
	touched := s.touched[:0]
	var theta float32 // the k-th best score when the loop below stops early
	i := 0
	for ; i < len(terms); i++ {
		qt := terms[i]
		lo, hi := x.postOff[qt.term], x.postOff[qt.term+1]
		// Finding the k-th score costs a pass over the documents touched so
		// far: worth it only before a list longer than that.
		if !x.exhaustive && len(touched) >= k && hi-lo > uint64(len(touched)) {
			if theta = s.kth(touched, k); theta > rests[i] {
				break
			}
		}
		docs := x.postDoc[lo:hi]
		tfs := x.postTF[lo:hi]
		tfs = tfs[:len(docs)]
		w := qt.w
		for j, d := range docs {
			tf := float32(tfs[j])
			old := scores[d]
			if old == 0 {
				touched = append(touched, d)
			}
			scores[d] = old + w*tf/(tf+norm[d])
		}
	}

	pool := touched
	s.pruned = i < len(terms)
	if s.pruned {
		// Only documents that can still reach the k-th score matter now.
		cands := s.candidates[:0]
		for _, d := range touched {
			if scores[d]+rests[i] >= theta {
				cands = append(cands, d)
			}
		}
		cands = s.probe(x, terms[i:], rests[i+1:], theta, cands)
		s.candidates = cands
		pool = cands
	}
	top := s.topK(pool, k)
	for _, d := range touched {
		scores[d] = 0
	}
	s.touched = touched[:0]
	return top, nil
}

// probe adds the contributions of terms to the candidate documents only,
// and returns the candidates that can still reach theta. A short candidate
// list is looked up in each posting list by galloping search; a long one is
// marked in a bitset and each list is scanned, which costs one bit test per
// posting instead of a score update. rests[j] bounds what the terms after
// terms[j] can add: after each term, candidates that cannot reach theta
// any more are dropped.
func (s *searcher) probe(x *Index, terms []queryTerm, rests []float32, theta float32, cands []uint32) []uint32 {
	scores, norm := s.scores, x.norm
	sorted := false
	marked := false
	for ti, qt := range terms {
		if ti > 0 {
			// Drop the candidates the previous term left out of reach.
			kept := cands[:0]
			for _, d := range cands {
				if scores[d]+rests[ti-1] >= theta {
					kept = append(kept, d)
				} else if marked {
					s.bits[d>>6] &^= 1 << (d & 63)
				}
			}
			cands = kept
		}
		lo, hi := x.postOff[qt.term], x.postOff[qt.term+1]
		docs := x.postDoc[lo:hi]
		tfs := x.postTF[lo:hi]
		tfs = tfs[:len(docs)]
		if len(cands)*16 < len(docs) {
			if !sorted {
				slices.Sort(cands)
				sorted = true
			}
			pos := 0
			for _, d := range cands {
				pos += gallop(docs[pos:], d)
				if pos == len(docs) {
					break
				}
				if docs[pos] == d {
					tf := float32(tfs[pos])
					scores[d] += qt.w * tf / (tf + norm[d])
				}
			}
			continue
		}
		if !marked {
			if len(s.bits) == 0 {
				s.bits = make([]uint64, (x.n+63)/64)
			}
			for _, d := range cands {
				s.bits[d>>6] |= 1 << (d & 63)
			}
			marked = true
		}
		bits := s.bits
		for j, d := range docs {
			if bits[d>>6]&(1<<(d&63)) != 0 {
				tf := float32(tfs[j])
				scores[d] += qt.w * tf / (tf + norm[d])
			}
		}
	}
	if marked {
		// Dropped candidates were unmarked as they went.
		for _, d := range cands {
			s.bits[d>>6] = 0
		}
	}
	return cands
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

// kth returns the k-th best score among docs, leaving out excluded ones
// (or 0 when fewer than k qualify).
func (s *searcher) kth(docs []uint32, k int) float32 {
	top := s.topK(docs, k)
	if len(top) < k {
		return 0
	}
	return top[len(top)-1].score
}

// topK returns the best k of docs, best first, leaving out excluded ones.
func (s *searcher) topK(docs []uint32, k int) []candidate {
	scores := s.scores
	top := s.top[:0]
	for _, d := range docs {
		c := candidate{score: scores[d], doc: d}
		if len(top) == k && (c.score < top[0].score || (c.score == top[0].score && c.doc > top[0].doc)) {
			continue
		}
		if slices.Contains(s.exclude, d) {
			continue
		}
		if len(top) < k {
			top = append(top, c)
			siftUp(top, len(top)-1)
			continue
		}
		top[0] = c
		siftDown(top, 0)
	}
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
	return top
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
