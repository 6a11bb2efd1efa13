package rollout

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
)

// FuzzBuiltinRoles feeds the built-in roles arbitrary questions and
// evidence and checks what must hold whatever the text: no panic, a judge
// verdict whose raw output parses back to it, extractor ids that are valid,
// distinct and at most max, and an extractive reader (its answer is "",
// "yes", "no", an option of the question, or text of the evidence).
func FuzzBuiltinRoles(f *testing.F) {
	f.Add(bridgeQuestion, strings.Join(filmBlock, "\x1f"), strings.Join(directorBlock, "\x1f"), 6)
	f.Add("Who was born first, Thirta Grupoustaton or Gamik Fothestini?", strings.Join(directorBlock, "\x1f"), strings.Join(strangerBlock, "\x1f"), 2)
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
		ctx := context.Background()
		j, err := LexicalJudge{}.Judge(ctx, question, c)
		if err != nil {
			t.Fatal(err)
		}
		v, err := data.ParseVerdict([]byte(j.Raw))
		if err != nil {
			t.Fatalf("raw verdict %s does not parse: %v", j.Raw, err)
		}
		if v.Sufficient != j.Verdict.Sufficient || len(v.GapItems) != len(j.Verdict.GapItems) {
			t.Fatalf("raw verdict %s differs from %+v", j.Raw, j.Verdict)
		}
		if j.Verdict.Sufficient && (len(j.Verdict.GapItems) > 0 || c.Len() == 0) {
			t.Fatalf("sufficient with %d gaps on %d sentences", len(j.Verdict.GapItems), c.Len())
		}

		sentences := numbered(all...)
		x, err := LexicalExtractor{}.Extract(ctx, question, j.Verdict.GapItems, sentences, max)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.IDs) > max {
			t.Fatalf("%d ids for max %d", len(x.IDs), max)
		}
		for i, id := range x.IDs {
			if id < 1 || id > len(sentences) || slices.Contains(x.IDs[:i], id) {
				t.Fatalf("bad id %d in %v (%d sentences)", id, x.IDs, len(sentences))
			}
		}

		r, err := LexicalReader{}.Answer(ctx, question, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Raw != "Answer: "+r.Answer {
			t.Fatalf("raw answer %q for %q", r.Raw, r.Answer)
		}
		switch a := r.Answer; {
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
