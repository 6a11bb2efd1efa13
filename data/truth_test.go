package data

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNormalizeAnswer(t *testing.T) {
	tests := []struct{ in, want string }{
		{"The Eiffel Tower", "eiffel tower"},
		{"  An   apple, a pear.  ", "apple pear"},
		{"U.S.A.", "usa"},
		{"Théâtre «Français»", "théâtre «français»"},
		{`a+b=c [d] {e} <f> |g| ~h^ "i" $5 @j #k %l &m *n _o \p`, "abc d e f g h i 5 j k l m n o p"},
		{"the", ""},
		{"", ""},
		{"Tom's 3.5-inch disk!", "toms 35inch disk"},
		{"line\nbreak\ttab", "line break tab"},
		{"Anne the Great", "anne great"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := NormalizeAnswer(tc.in); got != tc.want {
				t.Errorf("NormalizeAnswer(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestContainsAnswer(t *testing.T) {
	tests := []struct {
		text    string
		answers []string
		want    bool
	}{
		{"He was born in Paris, France.", []string{"paris"}, true},
		{"He was born in 19050.", []string{"1905"}, false},
		{"It opened in 1905.", []string{"1905"}, true},
		{"The Beatles formed.", []string{"Beatles"}, true},
		{"nothing here", []string{"Paris", "Lyon"}, false},
		{"in Lyon", []string{"Paris", "Lyon"}, true},
		{"anything", []string{"", "the"}, false},
		{"anything", nil, false},
	}
	for _, tc := range tests {
		if got := ContainsAnswer(tc.text, tc.answers); got != tc.want {
			t.Errorf("ContainsAnswer(%q, %q) = %v, want %v", tc.text, tc.answers, got, tc.want)
		}
	}
}

func TestJudgeTruth(t *testing.T) {
	q := Question{ID: "q", Answers: []string{"Standafield"}, GoldTitles: []string{"Film", "Director"}}
	ev := func(title, text string) Evidence { return Evidence{DocID: title, Title: title, Text: text} }
	tests := []struct {
		name     string
		q        Question
		evidence []Evidence
		want     Truth
	}{
		{"empty", q, nil, Truth{GoldTitles: 2, MissingTitles: []string{"Film", "Director"}, Strength: StrongNegative}},
		{"one title, no answer", q, []Evidence{ev("Film", "Directed by Ann.")},
			Truth{GoldTitles: 2, TitlesFound: 1, MissingTitles: []string{"Director"}}},
		{"one title with the answer (50% < 70%)", q, []Evidence{ev("Film", "Shot in Standafield.")},
			Truth{GoldTitles: 2, TitlesFound: 1, MissingTitles: []string{"Director"}, AnswerFound: true}},
		{"all titles and the answer", q, []Evidence{ev("Film", "Directed by Ann."), ev("Director", "Ann was born in Standafield.")},
			Truth{GoldTitles: 2, TitlesFound: 2, AnswerFound: true, Complete: true, Strength: StrongPositive}},
		{"all titles, no answer", q, []Evidence{ev("Film", "x."), ev("Director", "y.")},
			Truth{GoldTitles: 2, TitlesFound: 2}},
		{"answer elsewhere, no title", q, []Evidence{ev("Other", "Standafield is a city.")},
			Truth{GoldTitles: 2, MissingTitles: []string{"Film", "Director"}, AnswerFound: true}},
		{"no gold titles", Question{Answers: []string{"x"}}, []Evidence{ev("A", "x")},
			Truth{AnswerFound: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeTruth(tc.q, tc.evidence)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Seven of ten titles (70%) with the answer is a strong positive; one of
	// ten (10%) without it a strong negative.
	many := Question{Answers: []string{"z"}}
	var evidence []Evidence
	for i := range 10 {
		title := string(rune('A' + i))
		many.GoldTitles = append(many.GoldTitles, title)
		if i < 7 {
			evidence = append(evidence, ev(title, "z"))
		}
	}
	if got := JudgeTruth(many, evidence).Strength; got != StrongPositive {
		t.Errorf("7/10 titles with the answer: got %v, want %v", got, StrongPositive)
	}
	if got := JudgeTruth(many, []Evidence{ev("A", "nothing")}).Strength; got != StrongNegative {
		t.Errorf("1/10 titles without the answer: got %v, want %v", got, StrongNegative)
	}
}

func FuzzNormalizeAnswer(f *testing.F) {
	for _, s := range []string{"The Eiffel Tower", "U.S.A.", "a an the", "«x»", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeAnswer(s)
		if NormalizeAnswer(n) != n {
			t.Errorf("not idempotent: %q -> %q -> %q", s, n, NormalizeAnswer(n))
		}
		if n != "" && !ContainsAnswer(s, []string{s}) {
			t.Errorf("%q does not contain itself", s)
		}
	})
}
