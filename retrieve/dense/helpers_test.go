package dense

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// bagEmbedder is a stand-in for an embedding model whose vectors carry
// meaning: one component per word of a fixed vocabulary (the words of a
// corpus, stop words left out), counting the word's occurrences. Known
// prefixes are removed first, as a model trained with them would ignore
// them. A text with no known word embeds to zeros.
type bagEmbedder struct {
	vocab map[string]int
	calls atomic.Int64
}

var stopWords = map[string]bool{
	"the": true, "of": true, "and": true, "a": true, "an": true, "is": true, "was": true,
	"by": true, "its": true, "this": true, "about": true, "in": true, "to": true,
}

func words(s string) []string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, DefaultQueryPrefix), DefaultPassagePrefix)
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

func newBagEmbedder(corpus []data.Passage) *bagEmbedder {
	e := &bagEmbedder{vocab: map[string]int{}}
	for _, p := range corpus {
		for _, w := range words(p.Title + " " + p.Text) {
			if _, ok := e.vocab[w]; !ok {
				e.vocab[w] = len(e.vocab)
			}
		}
	}
	return e
}

func (e *bagEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, llm.Usage, error) {
	if err := ctx.Err(); err != nil {
		return nil, llm.Usage{}, err
	}
	e.calls.Add(1)
	out := make([][]float32, len(inputs))
	for i, in := range inputs {
		v := make([]float32, len(e.vocab))
		for _, w := range words(in) {
			if j, ok := e.vocab[w]; ok {
				v[j]++
			}
		}
		out[i] = v
	}
	return out, llm.Usage{PromptTokens: len(inputs)}, nil
}

// vecEmbedder returns given vectors: the text "v<i>" (after its prefix)
// embeds to vecs[i].
type vecEmbedder struct {
	dim  int
	vecs []float32
}

func (e *vecEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, llm.Usage, error) {
	out := make([][]float32, len(inputs))
	for i, in := range inputs {
		in = strings.TrimPrefix(strings.TrimPrefix(in, DefaultPassagePrefix), DefaultQueryPrefix)
		j, err := strconv.Atoi(strings.TrimPrefix(in, "v"))
		if err != nil || j < 0 || (j+1)*e.dim > len(e.vecs) {
			return nil, llm.Usage{}, fmt.Errorf("vecEmbedder: bad input %q", in)
		}
		out[i] = append([]float32(nil), e.vecs[j*e.dim:(j+1)*e.dim]...)
	}
	return out, llm.Usage{}, nil
}

// vecCorpus is the corpus vecEmbedder embeds: passage i has text "v<i>".
func vecCorpus(n int) []data.Passage {
	ps := make([]data.Passage, n)
	for i := range ps {
		ps[i] = data.Passage{ID: fmt.Sprintf("d%d", i), Title: "", Text: fmt.Sprintf("v%d", i)}
	}
	return ps
}

// clustered returns n unit vectors of dimension dim around `clusters`
// random centres (centres(seed, ...)): see around.
func clustered(seed uint64, n, dim, clusters int, spread float64) []float32 {
	return around(centres(seed, clusters, dim), seed, n, dim, spread)
}

// randomUnit returns m random unit vectors, seeded: directions with no
// relation to any clusters.
func randomUnit(seed uint64, m, dim int) []float32 {
	cs := centres(seed, m, dim)
	out := make([]float32, len(cs))
	for i, x := range cs {
		out[i] = float32(x)
	}
	return out
}

// centres returns random unit vectors, seeded.
func centres(seed uint64, clusters, dim int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	cs := make([]float64, clusters*dim)
	for i := range cs {
		cs[i] = rng.NormFloat64()
	}
	for c := range clusters {
		normalize64(cs[c*dim : (c+1)*dim])
	}
	return cs
}

// around returns n unit vectors, each a centre drawn at random plus
// Gaussian noise of total length about spread, normalised. Rows are made
// in blocks with their own seeds, in parallel, so the result depends only
// on the arguments.
func around(cs []float64, seed uint64, n, dim int, spread float64) []float32 {
	clusters := len(cs) / dim
	out := make([]float32, n*dim)
	const block = 4096
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for lo := 0; lo < n; lo += block {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := rand.New(rand.NewPCG(seed, uint64(lo)+2))
			v := make([]float64, dim)
			noise := spread / math.Sqrt(float64(dim))
			for i := lo; i < min(lo+block, n); i++ {
				c := cs[r.IntN(clusters)*dim:]
				for j := range v {
					v[j] = c[j] + noise*r.NormFloat64()
				}
				normalize64(v)
				for j, x := range v {
					out[i*dim+j] = float32(x)
				}
			}
		})
	}
	wg.Wait()
	return out
}

func normalize64(v []float64) {
	var s float64
	for _, x := range v {
		s += x * x
	}
	s = math.Sqrt(s)
	for i := range v {
		v[i] /= s
	}
}

// newServer starts an llmtest server that is closed with the test.
func newServer(t testing.TB, opts llmtest.Options) *llmtest.Server {
	t.Helper()
	s := llmtest.NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

func newClient(t testing.TB, url, model string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: url, Model: model, Role: "embed"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// textCorpus is n distinct passages with titles, some with sentences.
func textCorpus(n int) []data.Passage {
	ps := make([]data.Passage, n)
	for i := range ps {
		title := fmt.Sprintf("Article %d", i)
		s1 := fmt.Sprintf("Sentence one of passage %d.", i)
		s2 := fmt.Sprintf("It mentions item %d and item %d.", i*7%n, i*13%n)
		p := data.Passage{ID: data.DocID(title, s1+" "+s2), Title: title, Text: s1 + " " + s2}
		if i%2 == 0 {
			p.Sentences = []string{s1, s2}
		}
		ps[i] = p
	}
	return ps
}
