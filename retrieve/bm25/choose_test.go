package bm25

import (
	"math"
	"slices"
	"testing"
)

// TestChoose checks the choice of the essential terms: the terms left out
// have bounds that add up to less than the cut and the most postings left
// to walk among all such sets, and max-score's rule is kept past
// maxChoose terms.
func TestChoose(t *testing.T) {
	for _, tt := range []struct {
		name   string
		bounds []float32
		left   []int // postings left in each list
		most   int
		cut    float32
		want   []bool
	}{
		{
			// A rare term's bound a little below two common ones': max-score
			// would walk a common list and look the rare one up.
			name:   "common terms left out before a rarer one of a smaller bound",
			bounds: []float32{10.3, 8.15, 8.14, 8.13}, left: []int{1076, 48217, 45248, 8964},
			most: 4, cut: 17.48,
			want: []bool{true, false, false, true},
		},
		{
			name:   "the smallest bounds when they are the most postings",
			bounds: []float32{9, 2.4, 1.7, 0.7}, left: []int{3432, 4_800_000, 7_900_000, 13_700_000},
			most: 4, cut: 13,
			want: []bool{true, false, false, false},
		},
		{
			name:   "no cut yet: every term essential",
			bounds: []float32{3, 2, 1}, left: []int{10, 20, 30},
			most: 3, cut: float32(math.Inf(-1)),
			want: []bool{true, true, true},
		},
		{
			name:   "no document can reach the cut: none essential",
			bounds: []float32{3, 2, 1}, left: []int{10, 20, 30},
			most: 3, cut: 6.5,
			want: []bool{false, false, false},
		},
		{
			name:   "the postings left, not the list's length",
			bounds: []float32{5, 4, 4}, left: []int{100, 5, 50},
			most: 3, cut: 4.5,
			want: []bool{true, true, false},
		},
		{
			name:   "terms past most are never essential and their bounds count",
			bounds: []float32{5, 4, 1}, left: []int{100, 500, 50},
			most: 2, cut: 5.5,
			want: []bool{true, false, false},
		},
		{
			name:   "past most, nothing fits: the first most terms stay essential",
			bounds: []float32{5, 4, 1}, left: []int{100, 500, 50},
			most: 1, cut: float32(math.Inf(-1)),
			want: []bool{true, false, false},
		},
		{
			name:   "equal postings: more terms left out",
			bounds: []float32{3, 1, 1}, left: []int{0, 0, 0},
			most: 3, cut: 2.5,
			want: []bool{true, false, false},
		},
		{
			// Past maxChoose terms, max-score's rule: the terms of the
			// smallest bounds, whatever their lists.
			name:   "max-score's rule past maxChoose terms",
			bounds: []float32{9, 8, 7, 6, 5, 4, 3, 2, 1}, left: []int{1, 1, 1, 1, 1, 1, 1, 1, 1000},
			most: 9, cut: 6.5,
			want: []bool{true, true, true, true, true, true, false, false, false},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &searcher{}
			var rest float32
			s.rests = make([]float32, len(tt.bounds)+1)
			for i := len(tt.bounds) - 1; i >= 0; i-- {
				rest += tt.bounds[i]
				s.rests[i] = rest
			}
			for i, b := range tt.bounds {
				s.terms = append(s.terms, queryTerm{bound: b})
				// A list of left+3 postings read up to its fourth.
				s.lists = append(s.lists, cursor{docs: make([]uint32, tt.left[i]+3), pos: 3})
			}
			s.ess = make([]bool, len(tt.bounds))
			for i := range s.ess {
				s.ess[i] = i < tt.most
			}
			e := s.choose(tt.most, tt.cut)
			if !slices.Equal(s.ess, tt.want) {
				t.Fatalf("essential %v, want %v", s.ess, tt.want)
			}
			n := 0
			var out float32
			for i, ess := range s.ess {
				if ess {
					n++
				} else {
					out += tt.bounds[i]
				}
			}
			if e != n {
				t.Errorf("choose returned %d, %d essential", e, n)
			}
			if n < tt.most && !(out < tt.cut) {
				t.Errorf("the terms left out add up to %v, not below the cut %v", out, tt.cut)
			}
		})
	}
}
