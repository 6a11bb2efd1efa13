package eval

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestQuestionIDs: ids are numbered in the order they first come, a repeat
// gets its number back, and the numbers give the ids back and order as
// their strings do, through the table's growth.
func TestQuestionIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := newQuestionIDs()
	want := map[string]int32{}
	var order []string
	for range 20000 {
		id := fmt.Sprintf("q-%d", rng.IntN(8000))
		if rng.IntN(50) == 0 {
			id = "" // an empty id is an id like another
		}
		q, added, err := s.number(id)
		if err != nil {
			t.Fatal(err)
		}
		w, seen := want[id]
		if !seen {
			w = int32(len(order))
			want[id] = w
			order = append(order, id)
		}
		if q != w || added == seen {
			t.Fatalf("%q: number %d (added %v), want %d (added %v)", id, q, added, w, !seen)
		}
	}
	if s.len() != len(order) {
		t.Fatalf("len %d, want %d", s.len(), len(order))
	}
	if got := slices.Collect(s.all()); !slices.Equal(got, order) {
		t.Fatalf("all() differs from the ids in order")
	}
	for range 1000 {
		a, b := int32(rng.IntN(len(order))), int32(rng.IntN(len(order)))
		if got, want := s.compare(a, b), strings.Compare(order[a], order[b]); got != want {
			t.Fatalf("compare(%q, %q) = %d, want %d", order[a], order[b], got, want)
		}
	}
}
