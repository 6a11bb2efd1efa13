package data

import (
	"fmt"
	"strings"
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
	q := Question{ID: "q", Text: "Where was the director of Film born?", Answers: []string{"Standafield"}, GoldTitles: []string{"Film", "Director"}}
	ev := func(title string, index int32, text string) Evidence {
		return Evidence{DocID: title, Title: title, Index: index, Text: text}
	}
	four := Question{Text: "Who is the grandfather of the wife of X?", Answers: []string{"Zed"}, GoldTitles: []string{"A", "B", "C", "D"}}
	yesNo := Question{Text: "Are Film and Other both American?", Answers: []string{"yes"}, GoldTitles: []string{"Film", "Other"},
		SupportingFacts: []SupportingFact{{Title: "Film", Sentence: 1}, {Title: "Other", Sentence: 0}}}
	comparison := Question{Text: "Which film came out first, Film or Other?", Answers: []string{"Film"}, Type: "comparison",
		GoldTitles: []string{"Film", "Other"}}
	tests := []struct {
		name     string
		q        Question
		evidence []Evidence
		want     Truth
	}{
		{"empty", q, nil, Truth{GoldTitles: 2, MissingTitles: []string{"Film", "Director"}, AnswerExpected: true, Strength: StrongNegative}},
		{"one title, no answer", q, []Evidence{ev("Film", 0, "Directed by Ann.")},
			Truth{GoldTitles: 2, TitlesFound: 1, MissingTitles: []string{"Director"}, AnswerExpected: true}},
		{"one title with the answer (50% < 70%)", q, []Evidence{ev("Film", 0, "Shot in Standafield.")},
			Truth{GoldTitles: 2, TitlesFound: 1, MissingTitles: []string{"Director"}, AnswerFound: true, AnswerExpected: true, Evidenced: true}},
		{"all titles and the answer", q, []Evidence{ev("Film", 0, "Directed by Ann."), ev("Director", 0, "Ann was born in Standafield.")},
			Truth{GoldTitles: 2, TitlesFound: 2, AnswerFound: true, AnswerExpected: true, Evidenced: true, Complete: true, Strength: StrongPositive}},
		{"all titles, no answer", q, []Evidence{ev("Film", 0, "x."), ev("Director", 0, "y.")},
			Truth{GoldTitles: 2, TitlesFound: 2, AnswerExpected: true}},
		{"answer elsewhere, no title", q, []Evidence{ev("Other", 0, "Standafield is a city.")},
			Truth{GoldTitles: 2, MissingTitles: []string{"Film", "Director"}, AnswerFound: true, AnswerExpected: true, Evidenced: true}},
		{"no gold titles", Question{Answers: []string{"x"}}, []Evidence{ev("A", 0, "x")},
			Truth{AnswerFound: true, AnswerExpected: true, Evidenced: true}},
		// Three of four titles (75%) with the answer: complete, as the
		// filter's strong positive, so that teacher and filter agree.
		{"three of four titles and the answer", four, []Evidence{ev("A", 0, "a"), ev("B", 0, "b"), ev("C", 0, "Zed.")},
			Truth{GoldTitles: 4, TitlesFound: 3, MissingTitles: []string{"D"}, AnswerFound: true, AnswerExpected: true,
				Evidenced: true, Complete: true, Strength: StrongPositive}},
		{"two of four titles and the answer", four, []Evidence{ev("A", 0, "a"), ev("C", 0, "Zed.")},
			Truth{GoldTitles: 4, TitlesFound: 2, MissingTitles: []string{"B", "D"}, AnswerFound: true, AnswerExpected: true, Evidenced: true}},
		// Yes/no: the supporting sentences, not the word "yes".
		{"yes/no with every supporting sentence", yesNo, []Evidence{ev("Film", 1, "Film is American."), ev("Other", 0, "Other is American.")},
			Truth{GoldTitles: 2, TitlesFound: 2, GoldFacts: 2, FactsFound: 2, Evidenced: true, Complete: true, Strength: StrongPositive}},
		{"yes/no with the titles but another sentence", yesNo, []Evidence{ev("Film", 0, "Film is a film. Yes."), ev("Other", 0, "Other is American.")},
			Truth{GoldTitles: 2, TitlesFound: 2, GoldFacts: 2, FactsFound: 1, MissingFacts: []SupportingFact{{Title: "Film", Sentence: 1}}, AnswerFound: true}},
		// Comparison without supporting sentences: both gold titles.
		{"comparison, one side", comparison, []Evidence{ev("Film", 0, "Film came out in 1990.")},
			Truth{GoldTitles: 2, TitlesFound: 1, MissingTitles: []string{"Other"}, AnswerFound: true}},
		{"comparison, both sides", comparison, []Evidence{ev("Film", 0, "1990."), ev("Other", 0, "1995.")},
			Truth{GoldTitles: 2, TitlesFound: 2, Evidenced: true, Complete: true, Strength: StrongPositive}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := JudgeTruth(tc.q, tc.evidence)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Complete != (got.Strength == StrongPositive) {
				t.Errorf("complete %v but strength %v: a strong positive must be exactly a complete state", got.Complete, got.Strength)
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
			evidence = append(evidence, ev(title, 0, "z"))
		}
	}
	if got := JudgeTruth(many, evidence).Strength; got != StrongPositive {
		t.Errorf("7/10 titles with the answer: got %v, want %v", got, StrongPositive)
	}
	if got := JudgeTruth(many, []Evidence{ev("A", 0, "nothing")}).Strength; got != StrongNegative {
		t.Errorf("1/10 titles without the answer: got %v, want %v", got, StrongNegative)
	}
}

func TestAnswerExpected(t *testing.T) {
	tests := []struct {
		name string
		q    Question
		want bool
	}{
		{"entity answer", Question{Text: "Who directed Film?", Answers: []string{"Ann Lee"}}, true},
		{"yes", Question{Text: "Is Film American?", Answers: []string{"Yes"}}, false},
		{"no among aliases", Question{Text: "Is Film American?", Answers: []string{"No.", "nope"}}, false},
		{"comparison type", Question{Text: "Which is older?", Answers: []string{"Alpha"}, Type: "comparison"}, false},
		{"2wiki bridge comparison", Question{Text: "Which film has the director born first?", Answers: []string{"Beta"}, Type: "bridge_comparison"}, false},
		{"answer named in the question", Question{Text: "Which came out first, Alpha or Beta?", Answers: []string{"Beta"}}, false},
		{"answer inside a word of the question", Question{Text: "Who wrote Betamax?", Answers: []string{"Beta"}}, true},
	}
	for _, tt := range tests {
		if got := AnswerExpected(tt.q); got != tt.want {
			t.Errorf("%s: AnswerExpected = %v, want %v", tt.name, got, tt.want)
		}
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

// BenchmarkContainsAnswer looks for two answers in an evidence context of
// about 2 KB, as label's and bench's retrieval truth do for every state.
func BenchmarkContainsAnswer(b *testing.B) {
	var sb strings.Builder
	for i := range 24 {
		fmt.Fprintf(&sb, "The %d-th sentence of the Eiffel Tower's article, built in 1889 by Gustave Eiffel's company.\n", i)
	}
	text := sb.String()
	answers := []string{"Champ de Mars", "the Champ-de-Mars"}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if ContainsAnswer(text, answers) {
			b.Fatal("found")
		}
	}
}

// TestReferenceStrength holds the authors' retrieval truth on crafted
// contexts (docs/reference.md): raw, case-sensitive substrings of the gold
// titles and of the first answer only.
func TestReferenceStrength(t *testing.T) {
	ctx := "[Paris]\nParis is the capital of France.\n[Eiffel Tower]\nIt opened in 1889."
	tests := []struct {
		name    string
		titles  []string
		answers []string
		want    Strength
	}{
		{"every title and the answer", []string{"Paris", "Eiffel Tower"}, []string{"1889"}, StrongPositive},
		{"a title inside a longer word counts", []string{"Pari", "Eiffel"}, []string{"1889"}, StrongPositive},
		{"case matters", []string{"paris", "Eiffel Tower"}, []string{"1889"}, Neither},
		{"only the first answer is looked for", []string{"Paris", "Eiffel Tower"}, []string{"eighteen eighty-nine", "1889"}, Neither},
		{"2 of 3 titles is below 70%", []string{"Paris", "Eiffel Tower", "Louvre"}, []string{"1889"}, Neither},
		{"no title and no answer", []string{"Louvre", "Rome"}, []string{"1793"}, StrongNegative},
		{"no title but the answer", []string{"Louvre"}, []string{"France"}, Neither},
		{"no gold titles, no answer", nil, []string{"1793"}, StrongNegative},
		{"an empty first answer is not found", []string{"Paris", "Eiffel Tower"}, []string{"", "1889"}, Neither},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReferenceStrength(tt.titles, tt.answers, ctx); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
