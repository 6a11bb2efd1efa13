package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/lexical"
	"github.com/distill-rag/distill/internal/testkit"
)

// builtinCases are inputs for the built-in roles: the analysis decides
// (package lexical tests it), the roles wrap its decision.
var builtinCases = []struct {
	question string
	c        data.Context
}{
	{"In which city was the director of The Electric Frontier born?", data.Context{}},
	{"In which city was the director of The Electric Frontier born?", testkit.Blocks(testkit.FilmBlock)},
	{"In which city was the director of The Electric Frontier born?", testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock)},
	{"Who directed The Electric Frontier?", testkit.Blocks(testkit.FilmBlock)},
	{"Was The Electric Frontier filmed in Rome?", testkit.Blocks(testkit.FilmBlock)},
	{"bakery", testkit.Blocks([]string{"Bakery", "A bakery bakes."})},
}

func TestLexicalExtractor(t *testing.T) {
	for _, tt := range builtinCases {
		for _, max := range []int{0, 1, 6} {
			sentences := numberAll(tt.c.Evidence())
			gaps := []data.GapItem{{Target: "Thirta Grupoustaton", Slot: "born"}}
			res, err := LexicalExtractor{}.Extract(context.Background(), tt.question, gaps, sentences, max)
			if err != nil {
				t.Fatal(err)
			}
			want := lexical.Rank(tt.question, gaps, lexicalSentences(sentences), max)
			if diff := cmp.Diff(want, res.IDs); diff != "" {
				t.Errorf("%q, max %d: ids differ from lexical.Rank (-want +got):\n%s", tt.question, max, diff)
			}
			var b strings.Builder
			for i, id := range want {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprint(&b, id)
			}
			if want := `{"evidence_global_ids":[` + b.String() + `]}`; res.Raw != want {
				t.Errorf("got raw output %s, want %s", res.Raw, want)
			}
			if res.Model != LexicalExtractorName || res.TemplateHash == "" || res.ParseError != "" {
				t.Errorf("got model %q, hash %q, parse error %q", res.Model, res.TemplateHash, res.ParseError)
			}
		}
	}
}

func TestLexicalReader(t *testing.T) {
	for _, tt := range builtinCases {
		res, err := LexicalReader{}.Answer(context.Background(), tt.question, tt.c)
		if err != nil {
			t.Fatal(err)
		}
		if want := lexical.Answer(tt.question, tt.c.Evidence()); res.Answer != want {
			t.Errorf("%q: got %q, want lexical.Answer's %q", tt.question, res.Answer, want)
		}
		if want := "Answer: " + res.Answer; res.Raw != want {
			t.Errorf("got raw output %q, want %q", res.Raw, want)
		}
		if res.Model != LexicalReaderName || res.TemplateHash == "" || res.ParseError != "" {
			t.Errorf("got model %q, hash %q, parse error %q", res.Model, res.TemplateHash, res.ParseError)
		}
	}
}

// numberAll numbers sentences from 1, as the loop does.
func numberAll(ev []data.Evidence) []Numbered {
	out := make([]Numbered, len(ev))
	for i, e := range ev {
		out[i] = Numbered{ID: i + 1, Evidence: e, Line: NumberedLine(i+1, e)}
	}
	return out
}
