package eval

import (
	"testing"

	"github.com/distill-rag/distill/data"
)

// TestTitleMatch holds correct retrieval under both title matches: the
// authors' normalises a TriviaQA question's titles, and no other's.
func TestTitleMatch(t *testing.T) {
	rows := []data.State{{QuestionID: "q", Round: 1, IsFinal: true, Answer: "x",
		Retrieved: []data.RetrievedDoc{{Round: 1, Rank: 1, DocID: "d1", Title: "Beatles, The"}, {Round: 1, Rank: 2, DocID: "d2", Title: "Abbey Road"}}}}
	for _, tt := range []struct {
		dataset string
		match   TitleMatch
		want    bool
	}{
		{"triviaqa", TitleMatchDistill, false},
		{"triviaqa", TitleMatchReference, true},
		{"hotpotqa", TitleMatchReference, false},
	} {
		q := data.Question{ID: "q", Dataset: tt.dataset, Answers: []string{"x"}, GoldTitles: []string{"The Beatles", "abbey road"}}
		r, err := scoreQuestion(q, rows, ScoringReference, tt.match)
		if err != nil {
			t.Fatal(err)
		}
		if r.CorrectRetrieval != tt.want {
			t.Errorf("%s, %s: correct retrieval %v, want %v (recall %v)", tt.dataset, tt.match, r.CorrectRetrieval, tt.want, r.GoldTitleRecall)
		}
	}
	for in, want := range map[string]TitleMatch{"": TitleMatchDistill, "distill": TitleMatchDistill, "reference": TitleMatchReference} {
		if got, err := ParseTitleMatch(in); got != want || err != nil {
			t.Errorf("ParseTitleMatch(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseTitleMatch("normalised"); err == nil {
		t.Error("ParseTitleMatch(normalised): no error")
	}
}
