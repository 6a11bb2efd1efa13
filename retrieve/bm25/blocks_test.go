package bm25

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// checkBlocks recomputes the block table of every list of x from its
// postings and compares.
func checkBlocks(t *testing.T, x *Index) {
	t.Helper()
	size := 1 << x.blockShift
	if size != blockSize {
		t.Fatalf("block size %d, want %d", size, blockSize)
	}
	for l := range x.v {
		docs := x.postDoc[x.postOff[l]:x.postOff[l+1]]
		tfs := x.postTF[x.postOff[l]:x.postOff[l+1]]
		var lasts []uint32
		var maxes []float32
		if len(docs) > size {
			for lo := 0; lo < len(docs); lo += size {
				hi := min(lo+size, len(docs))
				var m float32
				for i := lo; i < hi; i++ {
					m = max(m, impact(tfs[i], x.norm.of(docs[i])))
				}
				lasts = append(lasts, docs[hi-1])
				maxes = append(maxes, m)
			}
		}
		lo, hi := x.blockOff[l], x.blockOff[l+1]
		if diff := cmp.Diff(lasts, x.blockLast[lo:hi], cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("list %d of %d postings: block ends differ (-want +got):\n%s", l, len(docs), diff)
		}
		if diff := cmp.Diff(maxes, x.blockMax[lo:hi], cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("list %d of %d postings: block bounds differ (-want +got):\n%s", l, len(docs), diff)
		}
	}
}

// blockCorpus has words whose lists end exactly at, or just past, block
// boundaries: "sizeN" occurs in N passages, spread over the corpus, with
// frequencies and passage lengths that vary.
func blockCorpus(n int, sizes []int) []data.Passage {
	ps := make([]data.Passage, n)
	for i := range ps {
		var b strings.Builder
		for range i % 11 {
			b.WriteString("filler ")
		}
		for _, s := range sizes {
			// Passage i has the word if floor(i*s/n) steps up at i.
			if i*s/n != (i+1)*s/n {
				for range 1 + (i/7)%4 {
					fmt.Fprintf(&b, "size%d ", s)
				}
			}
		}
		ps[i] = data.Passage{ID: fmt.Sprintf("p%05d", i), Title: "t", Text: b.String()}
	}
	return ps
}

// TestBlockTable checks the block table against the postings: lists of
// one block have none, longer ones a block per blockSize postings, the
// last one shorter, each with its last document and largest impact.
func TestBlockTable(t *testing.T) {
	sizes := []int{1, blockSize - 1, blockSize, blockSize + 1, 2 * blockSize, 2*blockSize + 1, 1000}
	for _, opts := range []BuildOptions{{}, {LuceneNorms: true}, {K1: 1.2, B: 0.75, segmentPostings: 500}} {
		t.Run(fmt.Sprintf("k1=%g,b=%g,lucene=%v", opts.K1, opts.B, opts.LuceneNorms), func(t *testing.T) {
			x := buildAndOpen(t, blockCorpus(1000, sizes), opts)
			for _, s := range sizes {
				l := x.term(fmt.Sprintf("size%d", s))
				if l < 0 {
					t.Fatalf("size%d is not a term", s)
				}
				if df := x.postOff[l+1] - x.postOff[l]; df != uint64(s) {
					t.Fatalf("size%d: %d postings, want %d", s, df, s)
				}
				want := 0
				if s > blockSize {
					want = (s + blockSize - 1) / blockSize
				}
				if got := x.blockOff[l+1] - x.blockOff[l]; got != uint64(want) {
					t.Errorf("size%d: got %d blocks, want %d", s, got, want)
				}
			}
			checkBlocks(t, x)
			g := newGenerator(3, 3000)
			checkBlocks(t, buildAndOpen(t, g.corpus(3000), opts))
		})
	}
}

// skipCorpus is a corpus where block-max pruning must skip: "alpha" is in
// every other passage and "beta" in every third, once, in passages of ten
// words or so, but every 997th passage is short and repeats both, so that
// it scores best, and each list's bound is that of those few passages:
// only their blocks can hold the top k.
func skipCorpus(n int) []data.Passage {
	ps := make([]data.Passage, n)
	for i := range ps {
		var b strings.Builder
		if i%997 == 0 {
			b.WriteString("alpha alpha alpha beta beta gamma")
		} else {
			for range 8 + i%5 {
				b.WriteString("filler ")
			}
			if i%2 == 0 {
				b.WriteString("alpha ")
			}
			if i%3 == 0 {
				b.WriteString("beta ")
			}
		}
		ps[i] = data.Passage{ID: fmt.Sprintf("p%05d", i), Title: "t", Text: b.String()}
	}
	return ps
}

// TestBlockSkipping checks that searches skip whole windows of blocks
// where the lists' bounds alone would walk them, and that they return
// exactly what scoring every posting does, with exclusions of hits inside
// and outside the skipped blocks.
func TestBlockSkipping(t *testing.T) {
	x, full := buildPruned(t, skipCorpus(20_000))
	skipped := 0
	for _, text := range []string{"alpha beta", "alpha", "beta alpha gamma", "alpha beta filler"} {
		for _, k := range []int{1, 10, 50} {
			for _, exclude := range [][]string{nil, {"p00000", "p00997"}, {"p00002", "p19938", "p12345"}} {
				q := retrieve.Query{Text: text, K: k, Exclude: exclude}
				sameHits(t, full, x, q, "block-max against exhaustive")
				s := x.scratch.Get().(*searcher)
				if _, err := s.search(x, q); err != nil {
					t.Fatal(err)
				}
				skipped += s.skipped
				x.scratch.Put(s)
			}
		}
	}
	s := x.scratch.Get().(*searcher)
	defer x.scratch.Put(s)
	if _, err := s.search(x, retrieve.Query{Text: "alpha beta", K: 10}); err != nil {
		t.Fatal(err)
	}
	// alpha has 10,000 postings in 79 blocks, beta 6,667 in 53; 21 of
	// them hold the passages that score best.
	if s.skipped < 20 {
		t.Errorf("\"alpha beta\" skipped %d windows, want 20 or more: the blocks are not used", s.skipped)
	}
	t.Logf("%d windows skipped in all, %d by \"alpha beta\"", skipped, s.skipped)
}

// TestDamagedBlocks damages the block table of a real index in the ways a
// bad disk or a bad writer could, and checks that opening or searching
// fails with ErrCorrupt, never panics, and that an undamaged table passes.
func TestDamagedBlocks(t *testing.T) {
	g := newGenerator(23, 3000)
	ps := g.corpus(3000)
	index, docs := buildFiles(t, ps)
	h, err := decodeHeader(index)
	if err != nil {
		t.Fatal(err)
	}
	blockOff := raw.Load[uint64](index[h.Sections[secBlockOff].Off:][:h.Sections[secBlockOff].Len])
	// l is a list of several blocks, and l+1 one of a single block.
	l := -1
	for i := 0; i+1 < len(blockOff)-1; i++ {
		if blockOff[i+1]-blockOff[i] >= 3 && blockOff[i+2] == blockOff[i+1] {
			l = i
			break
		}
	}
	if l < 0 {
		t.Fatal("no list of three blocks or more followed by a short one: the corpus is too small")
	}
	le := binary.LittleEndian
	at := func(sec int, i int) uint64 { return h.Sections[sec].Off + uint64(i) }
	put32 := func(b []byte, off uint64, v uint32) { le.PutUint32(b[off:], v) }
	put64 := func(b []byte, off uint64, v uint64) { le.PutUint64(b[off:], v) }
	first := int(blockOff[l]) // the first block of list l
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		// onOpen: the damage is found by Open; else by the first search
		// that uses list l.
		onOpen bool
	}{
		{"intact", func(b []byte) []byte { return b }, false},
		{"block size zero", func(b []byte) []byte { put32(b, 12, 0); return b }, true},
		{"block size not a power of two", func(b []byte) []byte { put32(b, 12, 96); return b }, true},
		{"block size too large", func(b []byte) []byte { put32(b, 12, 1<<20); return b }, true},
		{"block size in version 2", func(b []byte) []byte { put32(b, 8, 2); return b }, true},
		{"version from the future", func(b []byte) []byte { put32(b, 8, formatVersion+1); return b }, true},
		{"offsets descending", func(b []byte) []byte {
			put64(b, at(secBlockOff, 8*(l+1)), blockOff[l]-1)
			return b
		}, true},
		{"offsets past the table", func(b []byte) []byte {
			put64(b, at(secBlockOff, 8*(len(blockOff)-1)), blockOff[len(blockOff)-1]+1)
			return b
		}, true},
		{"tables of different lengths", func(b []byte) []byte {
			put64(b, 64+16*secBlockMax+8, h.Sections[secBlockMax].Len-4)
			return b
		}, true},
		{"table out of the file", func(b []byte) []byte {
			put64(b, 64+16*secBlockLast, uint64(len(b)))
			return b
		}, true},
		{"truncated", func(b []byte) []byte { return b[:h.Sections[secBlockMax].Off+4] }, true},
		{"a block moved to the next list", func(b []byte) []byte {
			put64(b, at(secBlockOff, 8*(l+1)), blockOff[l+1]-1)
			return b
		}, false},
		{"wrong last document", func(b []byte) []byte {
			put32(b, at(secBlockLast, 4*first), le.Uint32(b[at(secBlockLast, 4*first):])+1)
			return b
		}, false},
		{"last document of the list's end", func(b []byte) []byte {
			put32(b, at(secBlockLast, 4*(first+1)), 3000)
			return b
		}, false},
		{"bound not a number", func(b []byte) []byte {
			put32(b, at(secBlockMax, 4*first), math.Float32bits(float32(math.NaN())))
			return b
		}, false},
		{"bound negative", func(b []byte) []byte {
			put32(b, at(secBlockMax, 4*(first+1)), math.Float32bits(-0.5))
			return b
		}, false},
		{"bound above one", func(b []byte) []byte {
			put32(b, at(secBlockMax, 4*first), math.Float32bits(1.5))
			return b
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(slices.Clone(index))
			// Fresh memory keeps the sections aligned.
			aligned := raw.Bytes(make([]uint64, (len(b)+7)/8))[:len(b)]
			copy(aligned, b)
			x, err := newIndex(aligned, docs)
			if tc.onOpen {
				if err == nil {
					t.Fatal("opened a damaged index")
				}
				if !errors.Is(err, errCorrupt) && !strings.Contains(err.Error(), "version") {
					t.Errorf("got %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			err = x.checkPostings(int32(l))
			if tc.name == "intact" {
				if err != nil {
					t.Fatalf("intact list: %v", err)
				}
			} else if !errors.Is(err, errCorrupt) {
				t.Errorf("list %d: got %v, want ErrCorrupt", l, err)
			}
			// Searches never panic, whatever the damage.
			for range 50 {
				x.Search(context.Background(), retrieve.Query{Text: g.query(), K: 10})
			}
		})
	}
}
