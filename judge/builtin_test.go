package judge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/lexical"
	"github.com/distill-rag/distill/internal/testkit"
)

// builtinCases are inputs for the built-in judges: the analysis decides
// (package lexical tests it), the judges wrap its decision.
var builtinCases = []struct {
	question string
	c        data.Context
}{
	{testkit.BridgeQuestion, data.Context{}},
	{testkit.BridgeQuestion, testkit.Blocks(testkit.FilmBlock)},
	{testkit.BridgeQuestion, testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock)},
	{"Which was founded earlier, Sauport Films or Fuloson Music?", testkit.Blocks([]string{"Sauport Films", "Sauport Films is a film studio founded in 1923."})},
	{"what is the tallest mountain?", testkit.Blocks([]string{"Hills", "Hills are lower than mountains."})},
}

func TestLexical(t *testing.T) {
	for _, tt := range builtinCases {
		res, err := Lexical{}.Judge(context.Background(), tt.question, tt.c)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(lexical.Verdict(tt.question, tt.c.Evidence()), res.Verdict); diff != "" {
			t.Errorf("%q: verdict differs from lexical.Verdict (-want +got):\n%s", tt.question, diff)
		}
		checkRawVerdict(t, res)
		if res.Model != LexicalName || res.TemplateHash == "" || res.ParseError != "" {
			t.Errorf("got model %q, hash %q, parse error %q", res.Model, res.TemplateHash, res.ParseError)
		}
	}
}

// checkRawVerdict checks that a judge's raw output parses back to its
// verdict.
func checkRawVerdict(t *testing.T, res Result) {
	t.Helper()
	parsed, err := ParseVerdict([]byte(res.Raw))
	if err != nil {
		t.Fatalf("raw output %s does not parse: %v", res.Raw, err)
	}
	if diff := cmp.Diff(res.Verdict, parsed, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("raw output parses to another verdict (-result +parsed):\n%s", diff)
	}
}

func TestFixedPolicies(t *testing.T) {
	tests := []struct {
		judge Judge
		name  string
		want  data.Verdict
	}{
		{Never{}, NeverName, data.Verdict{GapItems: []data.GapItem{}}},
		{Always{}, AlwaysName, data.Verdict{Sufficient: true, GapItems: []data.GapItem{}}},
	}
	for _, tt := range tests {
		res, err := tt.judge.Judge(context.Background(), "q?", testkit.Blocks(testkit.FilmBlock))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, res.Verdict); diff != "" {
			t.Errorf("%s: verdict (-want +got):\n%s", tt.name, diff)
		}
		checkRawVerdict(t, res)
		if res.Model != tt.name || res.TemplateHash == "" {
			t.Errorf("got model %q, hash %q; want %q and a hash", res.Model, res.TemplateHash, tt.name)
		}
	}
}

func TestTruth(t *testing.T) {
	q := data.Question{ID: "q1", Text: testkit.BridgeQuestion, Answers: []string{"Standafield"},
		GoldTitles: []string{testkit.FilmBlock[0], testkit.DirectorBlock[0]}}
	for _, tt := range []struct {
		c    data.Context
		want bool
	}{
		{data.Context{}, false},
		{testkit.Blocks(testkit.FilmBlock), false},
		{testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock), true},
		{testkit.Blocks(testkit.DirectorBlock, testkit.StrangerBlock), false},
	} {
		if got := data.JudgeTruth(q, tt.c.Evidence()).Complete; got != tt.want {
			t.Fatalf("case of %d blocks: retrieval truth says %v, the case %v", len(tt.c.Evidence()), got, tt.want)
		}
		res, err := Truth{}.JudgeQuestion(context.Background(), q, tt.c)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(data.Verdict{Sufficient: tt.want, GapItems: []data.GapItem{}}, res.Verdict); diff != "" {
			t.Errorf("verdict (-want +got):\n%s", diff)
		}
		checkRawVerdict(t, res)
		if res.Model != TruthName || res.TemplateHash == "" {
			t.Errorf("got model %q, hash %q", res.Model, res.TemplateHash)
		}
	}
	if _, err := (Truth{}).Judge(context.Background(), q.Text, data.Context{}); !errors.Is(err, ErrNeedsQuestion) {
		t.Errorf("Judge with the text alone: %v, want ErrNeedsQuestion", err)
	}
}

// FuzzLexical checks, whatever the text, that the lexical judge's raw
// output parses back to a verdict of the same shape.
func FuzzLexical(f *testing.F) {
	f.Add(testkit.BridgeQuestion, strings.Join(testkit.FilmBlock, "\x1f"), strings.Join(testkit.DirectorBlock, "\x1f"))
	f.Add("Are A and B of the same nationality?", "A\x1fA is a \"Bredesanian\" <b>.", "B\x1fB (born 1 May 1950) is a Bredesanian.")
	f.Add("How many, or which: 1,000 or 3.14?", "\x1f", "Ünïcödé\x1fÉtienne d'Arc's 12 U.S. Café\n…")
	f.Fuzz(func(t *testing.T, question, block1, block2 string) {
		var c data.Context
		for bi, block := range []string{block1, block2} {
			parts := strings.Split(block, "\x1f")
			var ev []data.Evidence
			for i, s := range parts[1:] {
				ev = append(ev, data.Evidence{DocID: string(rune('a' + bi)), Title: parts[0], Index: int32(i), Text: s})
			}
			c.Append(ev)
		}
		res, err := Lexical{}.Judge(context.Background(), question, c)
		if err != nil {
			t.Fatal(err)
		}
		// Text is compared by the unit tests: JSON shows invalid UTF-8 as
		// U+FFFD, so only the shape of the verdict must come back here.
		v, err := ParseVerdict([]byte(res.Raw))
		if err != nil {
			t.Fatalf("raw verdict %s does not parse: %v", res.Raw, err)
		}
		if v.Sufficient != res.Verdict.Sufficient || len(v.GapItems) != len(res.Verdict.GapItems) {
			t.Fatalf("raw verdict %s differs from %+v", res.Raw, res.Verdict)
		}
	})
}
