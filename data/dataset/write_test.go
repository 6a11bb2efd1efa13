package dataset

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	qs := []data.Question{{ID: "q1", Text: "Who?", Answers: []string{"Ann"}, GoldTitles: []string{"A"}, Dataset: "x"}}
	ps := []data.Passage{{ID: "p1", Title: "A", Text: "Ann did.", Sentences: []string{"Ann did."}}, {ID: "p2", Title: "B", Text: "Bob."}}
	if err := Write(t.Context(), dir, qs, ps, false); err != nil {
		t.Fatal(err)
	}
	// Written once: the directory is not empty any more.
	if err := Write(t.Context(), dir, qs[:0], ps, false); !errors.Is(err, outdir.ErrNotEmpty) {
		t.Errorf("second write: got %v, want ErrNotEmpty", err)
	}
	gotQ, err := data.ReadParquet[data.Question](filepath.Join(dir, data.QuestionsFile))
	if err != nil {
		t.Fatal(err)
	}
	gotP, err := data.ReadParquet[data.Passage](filepath.Join(dir, data.CorpusFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(qs, gotQ, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ps, gotP, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("passages (-want +got):\n%s", diff)
	}
	src := data.NewPassageSlice(ps)
	for i := range ps {
		p, err := src.Next()
		if err != nil || p.ID != ps[i].ID {
			t.Fatalf("PassageSlice.Next() = %v, %v; want %s", p.ID, err, ps[i].ID)
		}
	}
	if _, err := src.Next(); err != io.EOF {
		t.Errorf("after the last passage: got %v, want io.EOF", err)
	}
}
