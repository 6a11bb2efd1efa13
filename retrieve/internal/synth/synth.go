// Package synth generates seeded corpora of English-like text for the
// retrievers' scale benchmarks, so that millions of passages can be
// indexed without downloading anything.
//
// Words are drawn from a mixture of two Zipf distributions, as running
// English text is: nine tokens in ten come from a dictionary of about a
// million words whose most frequent ranks are real function words (about
// 7% of all tokens are "the"), and one in ten from an unbounded tail of
// rare words (names, numbers, typos), so the vocabulary keeps growing with
// the corpus, as Heaps' law has it, rather than stopping at a fixed size.
// A word is a function of its rank (syllables spelling the rank), so
// nothing is stored per word. The default passage is the shape of the DPR
// Wikipedia split (21 million passages of 100 words, with a short title).
package synth

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/distill-rag/distill/data"
)

// Options shape a corpus; the zero value is the DPR shape.
type Options struct {
	// Words is the number of words of each passage's text; 0 means 100.
	Words int
	// TitleWords is the largest number of words of a title (each title has
	// 1 to TitleWords, uniformly); 0 means 4.
	TitleWords int
}

// Corpus generates passages in order; it is a retrieve.Source. Two
// Corpora with the same seed and options give the same passages.
type Corpus struct {
	w     *Words
	opts  Options
	n, i  int
	buf   []byte
	title []byte
}

// NewCorpus returns a corpus of n passages.
func NewCorpus(seed uint64, n int, opts Options) *Corpus {
	if opts.Words <= 0 {
		opts.Words = 100
	}
	if opts.TitleWords <= 0 {
		opts.TitleWords = 4
	}
	return &Corpus{w: NewWords(seed), opts: opts, n: n}
}

// Next returns the next passage, or io.EOF after the last. Passage i has
// id "p<i>" (from 0).
func (c *Corpus) Next() (data.Passage, error) {
	if c.i >= c.n {
		return data.Passage{}, io.EOF
	}
	c.title = c.w.Append(c.title[:0], 1+c.w.rng.IntN(c.opts.TitleWords))
	c.buf = append(c.w.Append(c.buf[:0], c.opts.Words), '.')
	p := data.Passage{ID: fmt.Sprintf("p%d", c.i), Title: string(c.title), Text: string(c.buf)}
	c.i++
	return p, nil
}

// Words draws words.
type Words struct {
	rng  *rand.Rand
	head *alias
	tail *rand.Zipf
}

const (
	// dictionary is the number of words of the head distribution.
	dictionary = 1 << 20
	// tailShare is the share of tokens drawn from the tail.
	tailShare = 0.1
)

// NewWords returns a seeded source of words.
func NewWords(seed uint64) *Words {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Words{rng: rng, head: headTable(), tail: rand.NewZipf(rng, 1.3, 1, 1<<40)}
}

// Rank draws the rank of the next word (0 is the most frequent).
func (w *Words) Rank() uint64 {
	if w.rng.Float64() < tailShare {
		return dictionary + w.tail.Uint64()
	}
	return uint64(w.head.draw(w.rng.Uint64()))
}

// alias draws from a discrete distribution in constant time (Walker's
// alias method): an index i uniformly at random, then i itself with
// probability keep[i], else other[i]. Drawing from the head this way costs
// a table lookup where a Zipf draw costs an exponential and a logarithm.
type alias struct {
	keep  []uint32 // probability of keeping i, times 2^32
	other []uint32
}

// headTable is the dictionary's distribution: rank k has weight
// (k+1)^-1.05.
var headTable = sync.OnceValue(func() *alias {
	w := make([]float64, dictionary)
	for k := range w {
		w[k] = math.Pow(float64(k+1), -1.05)
	}
	return newAlias(w)
})

func newAlias(w []float64) *alias {
	n := len(w)
	var sum float64
	for _, x := range w {
		sum += x
	}
	// Scaled so that the mean is 1; indexes below 1 borrow from those above.
	p := make([]float64, n)
	var small, large []int
	for i, x := range w {
		p[i] = x * float64(n) / sum
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	a := &alias{keep: make([]uint32, n), other: make([]uint32, n)}
	for i := range a.other {
		a.other[i] = uint32(i)
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.keep[s] = uint32(p[s] * (1 << 32))
		a.other[s] = uint32(l)
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What is left is 1 up to rounding: always kept.
	for _, i := range append(small, large...) {
		a.keep[i] = math.MaxUint32
	}
	return a
}

// draw maps 64 random bits to an index: the high 32 choose it, the low 32
// decide whether to keep it.
func (a *alias) draw(r uint64) uint32 {
	i := uint32((r >> 32) * uint64(len(a.keep)) >> 32)
	if uint32(r) < a.keep[i] {
		return i
	}
	return a.other[i]
}

// Append appends n words drawn at random, separated by spaces.
func (w *Words) Append(b []byte, n int) []byte {
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = AppendWord(b, w.Rank())
	}
	return b
}

// Query returns a query of 4 to 8 words.
func (w *Words) Query() string { return string(w.Append(nil, 4+w.rng.IntN(5))) }

// frequent are the most frequent words of English Wikipedia's text, most
// frequent first: the first ranks.
var frequent = []string{
	"the", "of", "and", "in", "to", "a", "was", "is", "for", "on", "as", "by", "with", "he",
	"at", "from", "his", "an", "it", "that", "which", "also", "be", "are", "this", "first",
	"one", "she", "her", "new", "were", "has", "after", "had", "who", "its", "their", "not",
	"but", "two", "or", "they", "been", "have", "all", "school", "during", "most", "city",
}

// syllables spell the other words: a rank is written in base
// len(syllables), with at least two digits.
var syllables = func() []string {
	var out []string
	for _, c := range "bdfgklmnprstvz" {
		for _, v := range "aeiou" {
			out = append(out, string(c)+string(v))
		}
	}
	return out
}()

// AppendWord appends the word of rank r. Distinct ranks give distinct
// words.
func AppendWord(b []byte, r uint64) []byte {
	if r < uint64(len(frequent)) {
		return append(b, frequent[r]...)
	}
	base := uint64(len(syllables))
	// Bijective numeration from base (two digits) upwards, digits most
	// significant first.
	n := r - uint64(len(frequent)) + base + 1
	var digits [16]uint8
	k := 0
	for n > 0 {
		n--
		digits[k] = uint8(n % base)
		n /= base
		k++
	}
	for k > 0 {
		k--
		b = append(b, syllables[digits[k]]...)
	}
	return b
}
