package synth

import (
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCorpus(t *testing.T) {
	read := func(seed uint64) []string {
		c := NewCorpus(seed, 50, Options{})
		var out []string
		for i := 0; ; i++ {
			p, err := c.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "p" + strconv.Itoa(i); p.ID != want {
				t.Errorf("passage %d: id %q, want %q", i, p.ID, want)
			}
			if n := len(strings.Fields(p.Text)); n != 100 {
				t.Errorf("passage %d: %d words, want 100", i, n)
			}
			if n := len(strings.Fields(p.Title)); n < 1 || n > 4 {
				t.Errorf("passage %d: title of %d words, want 1 to 4", i, n)
			}
			out = append(out, p.Title+"|"+p.Text)
		}
		return out
	}
	a, b := read(1), read(1)
	if len(a) != 50 {
		t.Fatalf("got %d passages, want 50", len(a))
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the same seed gave other passages:\n%s", diff)
	}
	if c := read(2); c[0] == a[0] {
		t.Error("another seed gave the same first passage")
	}
}

func TestWordsAreDistinct(t *testing.T) {
	seen := map[string]uint64{}
	for _, r := range []uint64{0, 1, 48, 49, 50, 118, 119, 120, 5000, dictionary - 1, dictionary, 1 << 39} {
		for k := r; k < r+2000; k++ {
			w := string(AppendWord(nil, k))
			if prev, ok := seen[w]; ok && prev != k {
				t.Fatalf("ranks %d and %d are both %q", prev, k, w)
			}
			seen[w] = k
		}
	}
}

// TestFrequencies checks the shape of the word distribution: English's
// share of "the", and a vocabulary that keeps growing.
func TestFrequencies(t *testing.T) {
	w := NewWords(3)
	seen := map[uint64]bool{}
	the := 0
	const n = 400_000
	for range n {
		r := w.Rank()
		if r == 0 {
			the++
		}
		seen[r] = true
	}
	if share := float64(the) / n; share < 0.06 || share > 0.1 {
		t.Errorf("share of %q: got %.3f, want 0.06 to 0.10", frequent[0], share)
	}
	if distinct := len(seen); distinct < n/10 || distinct > n/2 {
		t.Errorf("%d distinct words in %d tokens, want between a tenth and a half", distinct, n)
	}
}

func TestAlias(t *testing.T) {
	weights := []float64{5, 1, 0, 3, 1}
	a := newAlias(weights)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, len(weights))
	const n = 200_000
	for range n {
		counts[a.draw(rng.Uint64())]++
	}
	for i, c := range counts {
		want := weights[i] / 10 * n
		if math.Abs(float64(c)-want) > 5*math.Sqrt(want+1) {
			t.Errorf("outcome %d: drawn %d times in %d, want about %.0f", i, c, n, want)
		}
	}
}
