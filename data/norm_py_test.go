package data

import (
	"encoding/json"
	"os"
	"testing"
)

// TestNormalizeAnswerMatchesSQuAD checks NormalizeAnswer against the
// outputs of the official SQuAD v1.1 normalisation (Python 3: lower,
// remove string.punctuation, re.sub(r'\b(a|an|the)\b', ' ', ...),
// ' '.join(split())), computed once and kept in testdata: hand-picked hard
// cases (curly quotes around articles, dashes, \x1c-\x1f, "İ", final
// sigma, underscores, combining marks) and random strings over an alphabet
// of such characters.
func TestNormalizeAnswerMatchesSQuAD(t *testing.T) {
	b, err := os.ReadFile("testdata/squad_normalize.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][2]string
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 250 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		if got := NormalizeAnswer(c[0]); got != c[1] {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
