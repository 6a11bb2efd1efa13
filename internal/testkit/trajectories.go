package testkit

import (
	"slices"
	"testing"

	"github.com/distill-rag/distill/data"
)

// Parts returns the committed parts in dir (data.ListParts), failing the
// test if they cannot be listed.
func Parts(t testing.TB, dir string) []data.Part {
	t.Helper()
	parts, err := data.ListParts(dir)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

// QuestionIDs returns the ids of qs, in order: the want of
// CheckTrajectories for a run over qs.
func QuestionIDs(qs []data.Question) []string {
	ids := make([]string, len(qs))
	for i, q := range qs {
		ids[i] = q.ID
	}
	return ids
}

// CheckTrajectories checks the rows of a rollout's trajectories: each
// question of want exactly once, in contiguous rows numbered from round 0,
// the last one final, and a failure row only last (after the states a
// failed question completed). It returns the rows by question id.
func CheckTrajectories(t testing.TB, rows []data.State, want []string) map[string][]data.State {
	t.Helper()
	by := map[string][]data.State{}
	var order []string
	for i, r := range rows {
		if i == 0 || rows[i-1].QuestionID != r.QuestionID {
			if _, dup := by[r.QuestionID]; dup {
				t.Errorf("question %s appears twice (again at row %d)", r.QuestionID, i)
			}
			order = append(order, r.QuestionID)
		}
		by[r.QuestionID] = append(by[r.QuestionID], r)
	}
	got := slices.Sorted(slices.Values(order))
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(got, w) {
		t.Errorf("output holds %d questions, want %d (missing %v, extra %v)", len(got), len(w), minus(w, got), minus(got, w))
	}
	for id, states := range by {
		for i, s := range states {
			if i < len(states)-1 && s.Failure != "" {
				t.Errorf("question %s: row %d is a failure row among its states", id, i)
			}
			if int(s.Round) != i || s.IsFinal != (i == len(states)-1) {
				t.Errorf("question %s: row %d has round %d, final %v", id, i, s.Round, s.IsFinal)
			}
		}
	}
	return by
}

// minus returns what of a is not in b: the first five, and "..." when
// there are more.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], "...")
	}
	return out
}
