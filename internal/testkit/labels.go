package testkit

import (
	"testing"

	"github.com/distill-rag/distill/data"
)

// Labels reads a labels file and checks that every state appears in it
// once.
func Labels(t testing.TB, path string) []data.Label {
	t.Helper()
	ls, err := data.ReadParquet[data.Label](path)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[data.StateKey]bool)
	for _, l := range ls {
		if seen[l.Key()] {
			t.Errorf("state %s round %d appears twice", l.QuestionID, l.Round)
		}
		seen[l.Key()] = true
	}
	return ls
}
