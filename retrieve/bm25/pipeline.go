package bm25

import (
	"context"
	"io"
	"sync"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
)

// A build runs as a pipeline. One goroutine reads the source in batches;
// Workers goroutines analyse the batches into postings, each through its
// own cache of analysed tokens and one shared dictionary of terms; the
// goroutine that called Build takes the batches back in corpus order,
// stores the passages and adds their postings to the current segment
// (segment.go). Batches in flight are bounded, so memory does not grow
// with a fast reader or a slow consumer.

// batchSize is the number of passages per batch.
const batchSize = 512

// job is one batch of passages on its way through the pipeline.
type job struct {
	ps []data.Passage
	// err ended the reading, after ps.
	err error
	// done is closed once a worker has filled in the fields below.
	done chan struct{}
	// lens is the analysed length of each passage; the postings of passage
	// i are [ends[i-1], ends[i]) of terms and tfs (ends[-1] being 0).
	lens  []uint32
	ends  []uint32
	terms []int32 // dictionary numbers
	tfs   []uint16
}

// pipeline reads src and analyses it on workers goroutines. The returned
// channel gives the jobs in corpus order; it is closed after the last, after
// one with an error, or once ctx is done. wait returns when every
// goroutine has ended; call it after cancelling ctx or draining the channel.
func pipeline(ctx context.Context, src retrieve.Source, dict *dictionary, stemmer analysis.Stemmer, workers int) (jobs <-chan *job, wait func()) {
	ordered := make(chan *job, 4*workers)
	work := make(chan *job, 4*workers)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(work)
		defer close(ordered)
		for {
			j := &job{ps: make([]data.Passage, 0, batchSize), done: make(chan struct{})}
			for len(j.ps) < batchSize {
				p, err := src.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					j.err = err
					break
				}
				j.ps = append(j.ps, p)
			}
			if len(j.ps) == 0 && j.err == nil {
				return
			}
			// The consumer takes jobs from ordered and waits for each to be
			// done, so a job must reach a worker once it is in ordered.
			select {
			case ordered <- j:
			case <-ctx.Done():
				return
			}
			work <- j
			if j.err != nil || len(j.ps) < batchSize {
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			a := newAnalyser(dict, stemmer)
			for j := range work {
				a.analyse(j)
				close(j.done)
			}
		})
	}
	return ordered, wg.Wait
}

// dictionary numbers the terms of a build in the order workers first meet
// them; it is shared by the workers.
type dictionary struct {
	mu    sync.Mutex
	num   map[string]int32
	terms []string
}

func newDictionary() *dictionary {
	return &dictionary{num: make(map[string]int32, 1<<16)}
}

// number returns the number of term, adding it if new.
func (d *dictionary) number(term string) int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.num[term]
	if !ok {
		t = int32(len(d.terms))
		d.num[term] = t
		d.terms = append(d.terms, term)
	}
	return t
}

// snapshot returns the terms numbered so far.
func (d *dictionary) snapshot() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.terms
}

// analyser is one worker's state.
type analyser struct {
	an   analysis.Analyzer
	dict *dictionary
	// tokens maps an analysed token (before stop words and stemming) to its
	// dictionary number, or -1 for a stop word, so that each distinct token
	// form is stemmed once per worker.
	tokens *tokenTable
	// Per-passage scratch, indexed by dictionary number: seen[t] == doc
	// when term t already occurred in the current passage.
	seen     []uint32
	freq     []uint32
	doc      uint32
	docTerms []int32
}

func newAnalyser(dict *dictionary, stemmer analysis.Stemmer) *analyser {
	return &analyser{an: analysis.Analyzer{Stemmer: stemmer}, dict: dict, tokens: newTokenTable()}
}

func (a *analyser) term(tok []byte) int32 {
	if t, ok := a.tokens.get(tok); ok {
		return t
	}
	t := int32(-1)
	if stem := a.an.Stemmer.Normalize(tok); stem != "" {
		t = a.dict.number(stem)
		if need := int(t) + 1; need > len(a.seen) {
			grow := max(need, 2*len(a.seen))
			a.seen = append(a.seen, make([]uint32, grow-len(a.seen))...)
			a.freq = append(a.freq, make([]uint32, grow-len(a.freq))...)
		}
	}
	a.tokens.put(tok, t)
	return t
}

// analyse fills in the lengths and postings of j's passages.
func (a *analyser) analyse(j *job) {
	n := len(j.ps)
	j.lens = make([]uint32, 0, n)
	j.ends = make([]uint32, 0, n)
	j.terms = make([]int32, 0, 64*n)
	j.tfs = make([]uint16, 0, 64*n)
	for _, p := range j.ps {
		a.doc++
		if a.doc == 0 {
			// The passage counter wrapped: forget what was seen.
			clear(a.seen)
			a.doc = 1
		}
		a.docTerms = a.docTerms[:0]
		var length uint32
		visit := func(tok []byte) {
			t := a.term(tok)
			if t < 0 {
				return
			}
			length++
			if a.seen[t] != a.doc {
				a.seen[t] = a.doc
				a.freq[t] = 0
				a.docTerms = append(a.docTerms, t)
			}
			a.freq[t]++
		}
		a.an.Each(p.Title, visit)
		a.an.Each(p.Text, visit)
		for _, t := range a.docTerms {
			j.terms = append(j.terms, t)
			j.tfs = append(j.tfs, uint16(min(a.freq[t], 0xffff)))
		}
		j.lens = append(j.lens, length)
		j.ends = append(j.ends, uint32(len(j.terms)))
	}
}
