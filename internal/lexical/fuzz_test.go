package lexical

import (
	"slices"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

// FuzzEntryPoints feeds the analysis arbitrary questions and evidence and
// checks what must hold whatever the text: no panic, a verdict that is
// sufficient only on some evidence and then has no gap items, a feature
// vector of the named length, ranked ids that are valid, distinct and at
// most max, and an extractive answer ("", "yes", "no", an option of the
// question, or text of the evidence).
func FuzzEntryPoints(f *testing.F) {
	f.Add(testkit.BridgeQuestion, strings.Join(testkit.FilmBlock, "\x1f"), strings.Join(testkit.DirectorBlock, "\x1f"), 6)
	f.Add("Who was born first, Thirta Grupoustaton or Gamik Fothestini?", strings.Join(testkit.DirectorBlock, "\x1f"), strings.Join(testkit.StrangerBlock, "\x1f"), 2)
	f.Add("Are A and B of the same nationality?", "A\x1fA is a Bredesanian.", "B\x1fB (born 1 May 1950) is a Bredesanian.", 1)
	f.Add("How many, or which: 1,000 or 3.14?", "\x1f", "Ünïcödé\x1fÉtienne d'Arc's 12 U.S. Café\n…", 0)
	f.Fuzz(func(t *testing.T, question, block1, block2 string, max int) {
		max = max%10 + 1
		if max < 1 {
			max += 10
		}
		var c data.Context
		var all []data.Evidence
		for bi, block := range []string{block1, block2} {
			parts := strings.Split(block, "\x1f")
			var ev []data.Evidence
			for i, s := range parts[1:] {
				ev = append(ev, data.Evidence{DocID: string(rune('a' + bi)), Title: parts[0], Index: int32(i), Text: s})
			}
			all = append(all, ev...)
			c.Append(ev)
		}
		v := Verdict(question, c.Evidence())
		if v.Sufficient && (len(v.GapItems) > 0 || c.Len() == 0) {
			t.Fatalf("sufficient with %d gaps on %d sentences", len(v.GapItems), c.Len())
		}
		if !v.Sufficient && len(v.GapItems) == 0 {
			t.Fatalf("insufficient with no gap item on %d sentences", c.Len())
		}
		if got := len(Features(question, c.Evidence())); got != len(FeatureNames()) {
			t.Fatalf("%d features, %d names", got, len(FeatureNames()))
		}

		sentences := numbered(all...)
		for name, ids := range map[string][]int{"Rank": Rank(question, v.GapItems, sentences, max), "Similar": Similar(question, sentences, max)} {
			if ids == nil || len(ids) > max {
				t.Fatalf("%s: ids %v for max %d", name, ids, max)
			}
			for i, id := range ids {
				if id < 1 || id > len(sentences) || slices.Contains(ids[:i], id) {
					t.Fatalf("%s: bad id %d in %v (%d sentences)", name, id, ids, len(sentences))
				}
			}
		}

		switch a := Answer(question, c.Evidence()); {
		case a == "", a == "yes", a == "no", strings.Contains(question, a):
		default:
			found := false
			for _, e := range all {
				found = found || strings.Contains(e.Text, a)
			}
			if !found {
				t.Fatalf("answer %q is in neither the question nor the evidence", a)
			}
		}
	})
}
