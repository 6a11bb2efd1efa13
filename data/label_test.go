package data

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestLabelRoundTrip checks that nested samples and their gap items survive
// a parquet round trip.
func TestLabelRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l.parquet")
	rows := []Label{{QuestionID: "q", Round: 2, Evidence: []Evidence{{DocID: "d", Title: "T", Index: 1, Text: "x"}},
		GoldTitles: []string{"A"}, Samples: []LabelSample{{Sample: 0, GapItems: []GapItem{{Category: "other", Target: "t"}}, Output: "o"}, {Sample: 1, ParseError: "bad"}},
		GapItems: []GapItem{{Category: "other"}}, GapSupport: []int32{2}, Contradictions: []string{"c"}}, {QuestionID: "r"}}
	w, err := CreateParquet[Label](p, KindLabels)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadParquet[Label](p)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rows, got, cmpopts.EquateEmpty()); d != "" {
		t.Error(d)
	}
}
