package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
)

// top makes a ranked list from "id:score" items.
func top(items ...string) ranked {
	var r ranked
	for _, it := range items {
		id, score, _ := strings.Cut(it, ":")
		v, _ := strconv.ParseFloat(score, 64)
		r.ids, r.scores = append(r.ids, id), append(r.scores, v)
	}
	return r
}

func TestOverlap(t *testing.T) {
	tests := []struct {
		name      string
		a, b      []ranked
		raw, ties float64
	}{
		{"same", []ranked{top("a:2", "b:1")}, []ranked{top("b:2", "a:1")}, 1, 1},
		{"half", []ranked{top("a:2", "b:1")}, []ranked{top("a:2", "c:0.8")}, 0.5, 0.5},
		{"shorter list counts against", []ranked{top("a:2")}, []ranked{top("a:2", "c:1")}, 0.5, 0.5},
		{"both empty agree", []ranked{top(), top("a:1")}, []ranked{top(), top("b:1")}, 0.5, 0.5},
		{"lengths differ", []ranked{top("a:1")}, []ranked{top("a:1"), top("b:1")}, 0, 0},
		// The last place is a tie in both (b's scores are half a's): a
		// and c differ only there.
		{"tie at the last place", []ranked{top("x:3", "b:1", "a:1")}, []ranked{top("x:1.5", "b:0.5", "c:0.499999")}, 2.0 / 3, 1},
		{"a tie of one place", []ranked{top("x:3", "a:1")}, []ranked{top("x:1.5", "c:0.5")}, 0.5, 1},
		// c scores below a on a's scale: not a tie, a miss.
		{"no tie", []ranked{top("x:3", "b:1", "a:1")}, []ranked{top("x:1.5", "b:0.5", "c:0.4")}, 2.0 / 3, 2.0 / 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ties := overlap(tt.a, tt.b)
			if math.Abs(raw-tt.raw) > 1e-12 || math.Abs(ties-tt.ties) > 1e-12 {
				t.Errorf("got %v, %v, want %v, %v", raw, ties, tt.raw, tt.ties)
			}
		})
	}
}

func TestReadResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.tsv")
	if err := os.WriteFile(path, []byte("q0\ta b\t2.5 1\nq1\t\t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[0].ids, []string{"a", "b"}) || !slices.Equal(got[0].scores, []float64{2.5, 1}) || len(got[1].ids) != 0 {
		t.Errorf("got %+v", got)
	}
	if err := os.WriteFile(path, []byte("q0\ta b\t2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(path); err == nil || !strings.Contains(err.Error(), "2 ids, 1 scores") {
		t.Errorf("got %v, want an error about 2 ids and 1 score", err)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{1_000_000: "1M", 5_000_000: "5M", 300_000: "300k", 1234: "1234"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFilesRoundTrip writes a corpus and its queries as the engines read
// them, and reads the queries back as the distill child does.
func TestFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ps := []data.Passage{{ID: "p1", Title: "A", Text: "one"}, {ID: "p2", Title: "B", Text: "two"}}
	n, q, err := writeFiles(dir, data.NewPassageSlice(ps), []string{"what\tis\n one?", "two"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || q != 2 {
		t.Fatalf("got %d passages, %d queries, want 2, 2", n, q)
	}
	b, err := os.ReadFile(filepath.Join(dir, corpusFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "{\"id\":\"p1\",\"title\":\"A\",\"text\":\"one\"}\n{\"id\":\"p2\",\"title\":\"B\",\"text\":\"two\"}\n"; got != want {
		t.Errorf("corpus: got %q, want %q", got, want)
	}
	qs, err := readQueries(filepath.Join(dir, queriesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].ID != "q0" || qs[0].Text != "what is one?" {
		t.Errorf("queries: got %+v, want q0 \"what is one?\" and q1", qs)
	}
}

func TestReadQueriesRejectsLineWithoutTab(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.tsv")
	if err := os.WriteFile(path, []byte("q0\tok\nbroken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readQueries(path)
	if err == nil || !strings.Contains(err.Error(), "line 2 has no tab") {
		t.Errorf("got %v, want an error naming line 2", err)
	}
}

// TestTables prints failed engines with their error and a dense row's
// search column.
func TestTables(t *testing.T) {
	o, ot, r := 0.985, 0.995, 0.98
	rows := []Row{
		{Engine: "distill-lucene", Corpus: "hotpotqa", Passages: 994, Queries: 100, QPSSingle: 100, QPSBatch: 200, Overlap10: &o, Overlap10Ties: &ot,
			Settings: map[string]any{"k1": 0.9}},
		{Engine: "pisa", Corpus: "hotpotqa", Passages: 994, Queries: 100, Error: "build: exit status 1: no | module"},
		{Engine: "distill", Corpus: "vectors-1000x384", Precision: "int8", NProbe: 8, Recall10: &r, Settings: map[string]any{"nlist": 64}},
	}
	got := tables(rows)
	for _, want := range []string{
		"| hotpotqa | 994 | 100 | distill-lucene | 0.0 | 0 | 0 / 0 | 100 | 200 | 0.000 / 0.000 | 0.9850 / 0.9950 |",
		"| pisa | failed: build: exit status 1: no / module |",
		"| vectors-1000x384 | distill | int8 | IVF, 64 lists | 8 | 0.9800 |",
		"- distill-lucene: k1 0.9",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
}
