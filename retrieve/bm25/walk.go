package bm25

import (
	"math"
	"math/bits"
	"slices"
)

// walk scores the documents of the lists of the essential terms among
// terms[:most] (chosen again as theta rises, see choose), dropping those
// whose bound stays below cut, and returns the best k as a heap, worst
// first. It stops after limit documents (a skipped window counting as
// one), and sets s.dealt to the last document it dealt with (MaxUint32
// when it dealt with all). With a seed, the heap of a walk of terms[:1]
// that dealt with the documents up to seedLast, it starts from that heap
// and leaves out the documents up to seedLast that hold terms[0]: that
// walk scored them, or dropped them for a lower cut than any from here.
//
// The documents are taken in windows: from the next document d to the
// first end of a block at or after d among the essential lists, so that
// each essential list's postings in the window lie in one block. Each
// term's block bound in the window (for a non-essential list, the largest
// of its blocks there; 0 for a list with no posting there) bounds what it
// adds to a score in the window, and the window is a max-score search of
// its own ("block-max MaxScore"): the essential terms of the smallest
// window bounds, added while their bounds and the non-essential ones' stay
// below cut, are looked up rather than walked there, and a window where
// that takes them all is skipped whole. A term whose list-wide bound is
// set by a few outliers (a short document that repeats it) then costs its
// walk only where its blocks are high. Windows follow the essential lists
// only: cut at every block end of a long non-essential list, they would
// be too short to skip much and cost a bound each.
func (s *searcher) walk(x *Index, k, most int, cut float32, limit int, seed []candidate, seedLast uint32) []candidate {
	n := len(s.terms)
	w := walkState{x: x, k: k, cut: cut, limit: limit, top: s.top[:0], dealt: math.MaxUint32, seeded: seed != nil, seedLast: seedLast}
	if seed != nil {
		w.top = seed
	}
	s.ess = slices.Grow(s.ess[:0], n)[:n]
	ess := s.ess
	for i := range ess {
		ess[i] = i < most
	}
	essential := most
	chosen := float32(math.NaN()) // the cut of the last choice
	lower := func() {
		if w.cut == chosen {
			return
		}
		chosen = w.cut
		if essential = s.choose(most, w.cut); essential < most {
			s.pruned = true
		}
	}
	lower()
	// last is the last document dealt with (none while started is false).
	var last uint32
	started := false
	for essential > 0 && w.limit > 0 {
		d := s.nextDoc(last, started)
		if d == math.MaxUint32 {
			break
		}
		end := s.window(d)
		walked, look, lrest := s.split(w.cut)
		if len(walked) < essential {
			s.pruned = true
		}
		if len(walked) == 0 {
			// Nothing in the window can reach the top k.
			s.skipped++
			w.limit--
			if end == math.MaxUint32 {
				break
			}
			last, started, w.dealt = end, true, end
			continue
		}
		s.scoreWindow(&w, walked, look, lrest, end)
		if w.limit == 0 {
			break // dealt is the last document scored
		}
		w.dealt = end
		if end == math.MaxUint32 {
			break
		}
		last, started = end, true
		// A higher cut may leave fewer lists to walk from the next window
		// on.
		lower()
	}
	if w.limit > 0 {
		w.dealt = math.MaxUint32 // the lists ran out, or nothing can reach cut
	}
	s.top, s.dealt = w.top, w.dealt
	return w.top
}

// walkState is what a walk carries from one window to the next.
type walkState struct {
	x     *Index
	k     int
	cut   float32
	limit int
	top   []candidate // a heap, worst first
	dealt uint32      // the last document dealt with
	// seeded says the walk started from the heap of a walk of terms[:1]
	// that dealt with the documents up to seedLast.
	seeded   bool
	seedLast uint32
}

// nextDoc returns the first document after last among the lists of the
// essential terms, moving those that lag behind last past it (a term
// looked up until the cut made it essential).
func (s *searcher) nextDoc(last uint32, started bool) uint32 {
	d := uint32(math.MaxUint32)
	for i := range s.lists {
		if !s.ess[i] {
			continue
		}
		c := &s.lists[i]
		if started && c.pos < len(c.docs) && c.docs[c.pos] <= last {
			c.pos += gallop(c.docs[c.pos:], last+1)
		}
		if c.pos < len(c.docs) && c.docs[c.pos] < d {
			d = c.docs[c.pos]
		}
	}
	return d
}

// window sets s.wb[i] to the bound of what terms[i] can add to a document
// from d to the window's end, which it returns.
func (s *searcher) window(d uint32) uint32 {
	terms, lists, ess, wb := s.terms, s.lists, s.ess, s.wb
	end := uint32(math.MaxUint32)
	for i := range lists {
		if !ess[i] {
			continue
		}
		c := &lists[i]
		if b := c.block(d); b < len(c.lasts) {
			end = min(end, c.lasts[b])
		}
	}
	for i := range lists {
		c := &lists[i]
		wb[i] = 0
		if !ess[i] {
			// The largest bound of the list's blocks in the window, or
			// the list's when they are many.
			b := c.block(d)
			if b == len(c.lasts) {
				continue
			}
			m := c.maxes[b]
			for j := b + 1; j < len(c.lasts) && c.lasts[j-1] < end; j++ {
				if j-b == maxWindowBlocks {
					m = 1
					break
				}
				m = max(m, c.maxes[j])
			}
			wb[i] = min(terms[i].w*m*boundSlack, terms[i].bound)
			continue
		}
		// A list whose next posting comes after the window adds nothing.
		if c.blk < len(c.lasts) && c.pos < len(c.docs) && c.docs[c.pos] <= end {
			wb[i] = terms[i].w * c.maxes[c.blk] * boundSlack
		}
	}
	return end
}

// firstInWindow returns the first document of the walked lists, and
// reads the norms of their documents up to end first, in one pass whose
// loads do not wait on each other: in a large index each is a cache miss,
// which one document at a time would pay one after the other (at 21M
// passages this halves the median query).
func (s *searcher) firstInWindow(x *Index, walked []int, end uint32) uint32 {
	d := uint32(math.MaxUint32)
	var sink uint16
	for _, i := range walked {
		c := &s.lists[i]
		if c.pos < len(c.docs) && c.docs[c.pos] < d {
			d = c.docs[c.pos]
		}
		if len(c.docs) > x.n/sparseList {
			// Dense: the norms share cache lines, read in order.
			continue
		}
		for _, doc := range c.docs[c.pos:] {
			if doc > end {
				break
			}
			sink |= x.norm.short[doc]
		}
	}
	s.sink = sink
	return d
}

// scoreWindow scores the documents of the walked lists up to end, in
// order, looking up the terms of look (lrest[j]: what look[j:] can still
// add) while a document can reach w.cut, and keeps the best w.k in w.top.
// The next document is found while the current one is scored.
func (s *searcher) scoreWindow(w *walkState, walked, look []int, lrest []float32, end uint32) {
	terms, lists, contrib := s.terms, s.lists, s.contrib
	n := len(terms)
	x, k, shift, norm := w.x, w.k, w.x.blockShift, &w.x.norm
	top, cut, limit, dealt := w.top, w.cut, w.limit, w.dealt
	d := s.firstInWindow(x, walked, end)
	var nd float32
	if d <= end && d != math.MaxUint32 {
		nd = norm.of(d)
	}
	// Whether the window walks terms[0]'s list, when a seed's walk dealt
	// with some of its documents.
	walked0 := w.seeded && slices.Contains(walked, 0)
	for ; d <= end && d != math.MaxUint32 && limit > 0; limit-- {
		var partial float32
		after := uint32(math.MaxUint32)
		for _, i := range walked {
			c := &lists[i]
			contrib[i] = 0
			if c.pos < len(c.docs) && c.docs[c.pos] == d {
				tf := float32(c.tfs[c.pos])
				contrib[i] = terms[i].w * tf / (tf + nd)
				c.pos++
			}
			if c.pos < len(c.docs) && c.docs[c.pos] < after {
				after = c.docs[c.pos]
			}
			partial += contrib[i]
		}
		var nextNorm float32
		if after <= end && after != math.MaxUint32 {
			nextNorm = norm.of(after)
		}
		cur, curNorm := d, nd
		d, nd = after, nextNorm
		dealt = cur
		if walked0 && contrib[0] != 0 && cur <= w.seedLast {
			continue // the seed's walk dealt with it
		}
		kept := true
		for j, i := range look {
			if partial+lrest[j] < cut {
				kept = false
				break
			}
			c := &lists[i]
			contrib[i] = 0
			c.seek(cur, shift)
			if c.pos < len(c.docs) && c.docs[c.pos] == cur {
				tf := float32(c.tfs[c.pos])
				contrib[i] = terms[i].w * tf / (tf + curNorm)
				partial += contrib[i]
			}
		}
		if !kept {
			s.pruned = true
			continue
		}
		// The score adds the contributions in the terms' order, however
		// they were found, so that it is the same in every search.
		var score float32
		for i := range n {
			score += contrib[i]
		}
		c := candidate{score: score, doc: cur}
		// A document that only ties the k-th is worse if it comes
		// later (the seed's may come later).
		if len(top) == k && !worse(top[0], c) {
			continue
		}
		if w.seeded && cur <= w.seedLast && contrib[0] != 0 {
			continue // the seed's walk dealt with it
		}
		if slices.Contains(s.exclude, cur) {
			continue
		}
		if len(top) < k {
			top = append(top, c)
			siftUp(top, len(top)-1)
		} else {
			top[0] = c
			siftDown(top, 0)
		}
		if len(top) == k && !x.exhaustive {
			// A higher cut drops more documents at once, and may
			// leave fewer lists to walk from the next window on.
			cut = max(cut, top[0].score*(1-1e-6))
		}
	}
	w.top, w.cut, w.limit, w.dealt = top, cut, limit, dealt
}

// maxChoose is the most terms among which choose looks for the best
// essential ones (it tries every subset); beyond, it takes max-score's.
const maxChoose = 8

// choose sets s.ess for cut: the essential terms among terms[:most] (the
// others are never essential), and returns their number. A document that
// holds none of the essential terms scores at most the sum of the others'
// bounds, so any terms whose bounds add up to less than cut may be left
// out: choose leaves out those that have the most postings left to walk.
// Max-score's rule, leaving out the terms of the smallest bounds, walks a
// common term's list when a rarer term's bound is a little smaller, which
// in a large corpus costs tens of thousands of documents. Beyond maxChoose
// terms it keeps that rule.
func (s *searcher) choose(most int, cut float32) int {
	terms, lists, ess := s.terms, s.lists, s.ess
	// Max-score's rule: the first prefix terms.
	prefix := most
	for prefix > 0 && s.rests[prefix-1] < cut {
		prefix--
	}
	if most > maxChoose {
		for i := range most {
			ess[i] = i < prefix
		}
		return prefix
	}
	var forced float32
	for _, t := range terms[most:] {
		forced += t.bound
	}
	size := 1 << most
	sums := slices.Grow(s.sums[:0], size)[:size]
	lefts := slices.Grow(s.lefts[:0], size)[:size]
	s.sums, s.lefts = sums, lefts
	sums[0], lefts[0] = forced, 0
	best, bestLeft := 0, -1
	if forced < cut {
		bestLeft = 0
	}
	for set := 1; set < size; set++ {
		i, prev := bits.TrailingZeros(uint(set)), set&(set-1)
		sums[set] = sums[prev] + terms[i].bound
		lefts[set] = lefts[prev] + len(lists[i].docs) - lists[i].pos
		if sums[set] < cut && (lefts[set] > bestLeft || lefts[set] == bestLeft && bits.OnesCount(uint(set)) > bits.OnesCount(uint(best))) {
			best, bestLeft = set, lefts[set]
		}
	}
	e := 0
	for i := range most {
		ess[i] = best&(1<<i) == 0
		if ess[i] {
			e++
		}
		if ess[i] != (i < prefix) && forced < cut {
			s.unlike++
		}
	}
	return e
}

// split divides the terms for a window whose bounds are in s.wb: walked
// are the essential terms (s.ess) whose lists the window
// walks, look the others, looked up for each document walked, by
// decreasing bound, and lrest[j] bounds what look[j:] add together. The
// terms looked up are the non-essential ones and the essential ones of the
// smallest window bounds while the bounds of all those looked up stay
// below cut: a document that none of the walked lists holds stays below
// it.
func (s *searcher) split(cut float32) (walked, look []int, lrest []float32) {
	wb, ess := s.wb, s.ess
	n := len(wb)
	// The essential terms by increasing window bound.
	order := s.order[:0]
	for i := range n {
		if !ess[i] {
			continue
		}
		j := len(order)
		order = append(order, i)
		for ; j > 0 && wb[order[j-1]] > wb[i]; j-- {
			order[j] = order[j-1]
		}
		order[j] = i
	}
	s.order = order
	var sum float32
	for i := range n {
		if !ess[i] {
			sum += wb[i]
		}
	}
	m := 0
	for m < len(order) && sum+wb[order[m]] < cut {
		sum += wb[order[m]]
		m++
	}
	walked = order[m:]
	// The others by decreasing bound (a document is dropped the sooner),
	// in the terms' order among equal bounds.
	look = s.look[:0]
	add := func(i int) {
		j := len(look)
		look = append(look, i)
		for ; j > 0 && (wb[look[j-1]] < wb[i] || wb[look[j-1]] == wb[i] && look[j-1] > i); j-- {
			look[j] = look[j-1]
		}
		look[j] = i
	}
	for i := range n {
		if !ess[i] || slices.Contains(order[:m], i) {
			add(i)
		}
	}
	s.look = look
	lrest = slices.Grow(s.lrest[:0], len(look)+1)[:len(look)+1]
	lrest[len(look)] = 0
	for j := len(look) - 1; j >= 0; j-- {
		lrest[j] = lrest[j+1] + wb[look[j]]
	}
	s.lrest = lrest
	return walked, look, lrest
}
