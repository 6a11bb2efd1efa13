package analysis

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnalyzer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"The cat and the hat", []string{"cat", "hat"}},
		{"Running runs quickly", []string{"run", "run", "quick"}},
		{"John's book", []string{"john", "book"}},
		// Curly apostrophes stay as they are, as in Lucene.
		{"O’Neil’s car", []string{"o’neil", "car"}},
		{"Qal‘eh", []string{"qal‘eh"}},
		// Word-break rules of Unicode that StandardTokenizer follows.
		{"a:b 1:2 x.1 5'9 5’9 x;b 1;2", []string{"a:b", "1", "2", "x", "1", "5'9", "5’9", "x", "b", "1;2"}},
		{"__init__ _ x_", []string{"__init__", "x_"}},
		{"x² Ⅻ", []string{"x", "ⅻ"}},
		// Format and combining characters stay inside a token, never start one.
		{"ab\u200ecd ab\u200dcd \u0650hussein", []string{"ab\u200ecd", "ab\u200dcd", "hussein"}},
		// Emoji and other pictographs are tokens, a ZWJ sequence one token.
		{"♭ ©x 👩\u200d🚀!", []string{"♭", "©", "x", "👩\u200d🚀"}},
		{"don't stop", []string{"don't", "stop"}},
		{"pi is 3.14, not 3,14 or 1,000", []string{"pi", "3.14", "3,14", "1,000"}},
		{"end.Start", []string{"end.start"}},
		{"end. Start", []string{"end", "start"}},
		{"well-known foo_bar", []string{"well", "known", "foo_bar"}},
		// Accents are kept, as Lucene's EnglishAnalyzer keeps them.
		{"Café naïve ÉCOLE", []string{"café", "naïv", "école"}},
		{"東京 tower", []string{"東", "京", "tower"}},
		{"(parenthesis) [bracket] \"quote\"", []string{"parenthesi", "bracket", "quot"}},
		{"ALL CAPS Words", []string{"all", "cap", "word"}},
		{"it's", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var a Analyzer
			got := a.Terms(tc.in)
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Terms(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestLongTokenIsCut(t *testing.T) {
	var a Analyzer
	var lens []int
	a.Each(strings.Repeat("x", 600), func(tok []byte) { lens = append(lens, len(tok)) })
	if diff := cmp.Diff([]int{255, 255, 90}, lens); diff != "" {
		t.Errorf("token lengths (-want +got):\n%s", diff)
	}
}
