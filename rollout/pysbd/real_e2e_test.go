//go:build e2e

package pysbd

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRealPysbd splits with the real pysbd (make e2e-models sets
// DISTILL_PYSBD_PYTHON to the models' Python, which has it): the cases
// are pysbd's own behaviour that the authors' loop relies on, and the
// blank-line paragraphs split.py cuts first.
func TestRealPysbd(t *testing.T) {
	python := os.Getenv("DISTILL_PYSBD_PYTHON")
	if python == "" {
		t.Skip("DISTILL_PYSBD_PYTHON is not set: make e2e-models sets it to the Python that make models installs pysbd into")
	}
	s, err := Start(t.Context(), python)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Name() != "pysbd "+Version {
		t.Errorf("name %q, want pysbd %s", s.Name(), Version)
	}
	texts := []string{
		"Dr. Smith went to Washington. He met Mr. Jones there! Was it fun? Yes.",
		"The U.S. Army was founded in 1775.\n\nIt is the oldest branch.",
		"  ",
		"No end mark",
	}
	got, err := s.Split(texts)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"Dr. Smith went to Washington.", "He met Mr. Jones there!", "Was it fun?", "Yes."},
		{"The U.S. Army was founded in 1775.", "It is the oldest branch."},
		{},
		{"No end mark"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
	// clean=False: sentences are the text's own characters.
	for i, sentences := range got {
		for _, sentence := range sentences {
			if !strings.Contains(texts[i], sentence) {
				t.Errorf("sentence %q is not in its text", sentence)
			}
		}
	}
}
