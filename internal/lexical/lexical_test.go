package lexical

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

func TestWords(t *testing.T) {
	lx := getLexer()
	defer putLexer(lx)
	text := "Don't stop: the U.S. Army's 1,000 men (3.14) — Jean-Luc’s Café."
	var got []string
	for _, w := range lx.words(text, nil) {
		got = append(got, fmt.Sprintf("%s/%s/%v", text[w.start:w.end], w.stem, w.upper))
	}
	want := []string{
		"Don't/don't/true", "stop/stop/false", "the//false", "U.S/u./true", "Army's/armi/true",
		"1,000/1,000/false", "men/men/false", "3.14/3.14/false", "Jean/jean/true", "Luc’s/luc/true", "Café/café/true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
}

func TestCapitalised(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"In which city was the director of The Electric Frontier born?", []string{"The Electric Frontier"}},
		{"The Electric Frontier is a film directed by Thirta Grupoustaton.", []string{"The Electric Frontier", "Thirta Grupoustaton"}},
		{"He studied at the University of Zandeport in 1990.", []string{"University of Zandeport"}},
		{"Signals of the Silent Kingdom is a film.", []string{"Signals of the Silent Kingdom"}},
		{"Which film came out first, The Quiet Song or Return to Drenibridge?", []string{"The Quiet Song", "Return to Drenibridge"}},
		{"Apollo 11 landed; Neil Armstrong, an American, walked.", []string{"Apollo 11", "Neil Armstrong", "American"}},
		{"Are Gundan Men and Gritinina Truwick of the same nationality?", []string{"Gundan Men", "Gritinina Truwick"}},
		{"It was founded in May 1950 by A. B. Smith.", []string{"May 1950", "A", "B", "Smith"}},
		{"the lower case of nothing", nil},
	}
	lx := getLexer()
	defer putLexer(lx)
	for _, tt := range tests {
		words := lx.words(tt.text, nil)
		var got []string
		for _, sp := range capitalised(tt.text, words) {
			got = append(got, spanText(tt.text, words, sp))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("capitalised(%q) (-want +got):\n%s", tt.text, diff)
		}
	}
}

func TestParseQuestion(t *testing.T) {
	type parsed struct {
		Kind      questionKind
		Answer    answerType
		Entities  []string
		Required  []string
		Focus     []string
		Options   [2]string
		Direction int
		Numeric   bool
		Same      bool
	}
	tests := []struct {
		question string
		want     parsed
	}{
		{"In which city was the director of The Electric Frontier born?", parsed{
			Kind: kindWh, Answer: typePlace, Entities: []string{"The Electric Frontier"},
			Required: []string{"director", "born"}, Focus: []string{"city"},
		}},
		{"What is the nationality of the author of A Bridge for Popundine?", parsed{
			Kind: kindWh, Answer: typeDemonym, Entities: []string{"A Bridge for Popundine"},
			Required: []string{"author"}, Focus: []string{"nationality"},
		}},
		{"When was the founder of Raiwusteton Music born?", parsed{
			Kind: kindWh, Answer: typeDate, Entities: []string{"Raiwusteton Music"}, Required: []string{"founder", "born"},
		}},
		{"In what year was the university where Sta Zeton studied founded?", parsed{
			Kind: kindWh, Answer: typeYear, Entities: []string{"Sta Zeton"},
			Required: []string{"university", "studied", "founded"}, Focus: []string{"year"},
		}},
		{"How many people live in Return to Doford?", parsed{
			Kind: kindWh, Answer: typeNumber, Entities: []string{"Return to Doford"}, Required: []string{"live"}, Focus: []string{"people"},
		}},
		{"Who directed Iron Tide?", parsed{
			Kind: kindWh, Answer: typePerson, Entities: []string{"Iron Tide"}, Required: []string{"directed"},
		}},
		{"Which was founded earlier, Sauport Films or Fuloson Music?", parsed{
			Kind: kindChoice, Entities: []string{"Sauport Films", "Fuloson Music"}, Required: []string{"founded"},
			Options: [2]string{"Sauport Films", "Fuloson Music"}, Direction: -1,
		}},
		{"Which singer is American, Mark King or Nick Hexum?", parsed{
			Kind: kindChoice, Answer: typePerson, Entities: []string{"American", "Mark King", "Nick Hexum"},
			Focus: []string{"singer"}, Options: [2]string{"Mark King", "Nick Hexum"},
		}},
		{"Is Paris or Rome larger?", parsed{
			Kind: kindChoice, Entities: []string{"Paris", "Rome"}, Options: [2]string{"Paris", "Rome"}, Direction: 1, Numeric: true,
		}},
		{"Are Gundan Men and Gritinina Truwick of the same nationality?", parsed{
			Kind: kindYesNo, Entities: []string{"Gundan Men", "Gritinina Truwick"}, Focus: []string{"nationality"}, Same: true,
		}},
		{"Were both bands formed in 1990?", parsed{Kind: kindYesNo, Required: []string{"bands", "formed", "1990"}}},
	}
	lx := getLexer()
	defer putLexer(lx)
	for _, tt := range tests {
		q := lx.parseQuestion(tt.question)
		got := parsed{Kind: q.kind, Answer: q.answer, Options: q.options, Direction: q.direction, Numeric: q.numeric, Same: q.same}
		for _, s := range q.entities {
			got.Entities = append(got.Entities, spanText(q.text, q.words, s))
		}
		for _, i := range q.required {
			got.Required = append(got.Required, lower(q.text, q.words[i]))
		}
		for _, i := range q.focus {
			got.Focus = append(got.Focus, lower(q.text, q.words[i]))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseQuestion(%q) (-want +got):\n%s", tt.question, diff)
		}
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name     string
		question string
		c        data.Context
		want     data.Verdict
	}{
		{
			name:     "empty evidence names what the question needs",
			question: testkit.BridgeQuestion,
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryBridgeEntity, Target: "The Electric Frontier", Description: "Find the passage about The Electric Frontier."},
				{Category: data.CategoryAttribute, Target: "The Electric Frontier", Slot: "city director born", Description: "Find what the evidence lacks about The Electric Frontier: city, director, born."},
			}},
		},
		{
			name:     "first hop found: the bridge entity is next",
			question: testkit.BridgeQuestion,
			c:        testkit.Blocks(testkit.FilmBlock),
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryBridgeEntity, Target: "Thirta Grupoustaton", Slot: "city born", Description: "Find what the evidence lacks about Thirta Grupoustaton: city, born."},
			}},
		},
		{
			name:     "both hops with an answer in sight",
			question: testkit.BridgeQuestion,
			c:        testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock),
			want:     data.Verdict{Sufficient: true, GapItems: []data.GapItem{}},
		},
		{
			name:     "words of an unrelated block do not count",
			question: testkit.BridgeQuestion,
			c:        testkit.Blocks(testkit.FilmBlock, testkit.StrangerBlock),
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryBridgeEntity, Target: "Thirta Grupoustaton", Slot: "city born", Description: "Find what the evidence lacks about Thirta Grupoustaton: city, born."},
			}},
		},
		{
			name:     "no answer of the asked type yet",
			question: testkit.BridgeQuestion,
			c:        testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock[:2]),
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryAttribute, Target: "The Electric Frontier", Slot: "city", Description: "Find what the evidence lacks about The Electric Frontier: city."},
			}},
		},
		{
			name:     "comparison with both sides covered",
			question: "Which was founded earlier, Sauport Films or Fuloson Music?",
			c: testkit.Blocks(
				[]string{"Sauport Films", "Sauport Films is a film studio founded in 1923."},
				[]string{"Fuloson Music", "Fuloson Music is a record label founded in 1950."},
			),
			want: data.Verdict{Sufficient: true, GapItems: []data.GapItem{}},
		},
		{
			name:     "comparison with one side missing",
			question: "Which was founded earlier, Sauport Films or Fuloson Music?",
			c:        testkit.Blocks([]string{"Sauport Films", "Sauport Films is a film studio founded in 1923."}),
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryBridgeEntity, Target: "Fuloson Music", Description: "Find the passage about Fuloson Music."},
			}},
		},
		{
			name:     "the link word may be missing when the next hop answers",
			question: "What is the nationality of the author of Lonely Witnesses?",
			c: testkit.Blocks(
				[]string{"Lonely Witnesses", "Lonely Witnesses is a novel by Thearia He, first published in 1953."},
				[]string{"Thearia He", "Thearia He (born 2 May 1950) is a Bredesanian novelist."},
			),
			want: data.Verdict{Sufficient: true, GapItems: []data.GapItem{}},
		},
		{
			name:     "question without names",
			question: "what is the tallest mountain?",
			c:        testkit.Blocks([]string{"Hills", "Hills are low."}),
			want: data.Verdict{GapItems: []data.GapItem{
				{Category: data.CategoryAttribute, Target: "Answer", Slot: "tallest mountain", Description: "Find what the evidence lacks about Answer: tallest, mountain."},
			}},
		},
		{
			name:     "question without names, covered",
			question: "what is the tallest mountain?",
			c:        testkit.Blocks([]string{"Hills", "Hills are lower than mountains."}),
			want:     data.Verdict{Sufficient: true, GapItems: []data.GapItem{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Verdict(tt.question, tt.c.Evidence())); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// numbered numbers sentences from 1, as the loop does.
func numbered(sentences ...data.Evidence) []Sentence {
	var out []Sentence
	for i, e := range sentences {
		out = append(out, Sentence{ID: i + 1, Title: e.Title, Text: e.Text})
	}
	return out
}

func TestRank(t *testing.T) {
	film := data.Evidence{DocID: "f", Title: "The Electric Frontier", Text: "The Electric Frontier is a 1952 horror film directed by Thirta Grupoustaton."}
	filmCast := data.Evidence{DocID: "f", Title: "The Electric Frontier", Index: 1, Text: "It stars Ana Bo."}
	dirIntro := data.Evidence{DocID: "d", Title: "Thirta Grupoustaton", Text: "Thirta Grupoustaton (born 28 May 1903) is a Tovamesian film director."}
	dirBorn := data.Evidence{DocID: "d", Title: "Thirta Grupoustaton", Index: 1, Text: "She was born in Standafield."}
	other := data.Evidence{DocID: "o", Title: "Gamik Fothestini", Text: "Gamik Fothestini worked in a bakery."}
	tests := []struct {
		name      string
		question  string
		gaps      []data.GapItem
		sentences []Sentence
		max       int
		want      []int
	}{
		{
			name:      "ranks by match, drops what does not match",
			question:  testkit.BridgeQuestion,
			sentences: numbered(other, film, filmCast, dirIntro, dirBorn),
			max:       6,
			want:      []int{2, 4, 5},
		},
		{
			name:      "the next hop's sentences rank even without a match",
			question:  "What is the nationality of the author of Lonely Witnesses?",
			sentences: numbered(other, data.Evidence{DocID: "l", Title: "Lonely Witnesses", Text: "Lonely Witnesses is a novel by Thearia He."}, data.Evidence{DocID: "t", Title: "Thearia He", Text: "Thearia He (born 1950) is a Bredesanian novelist."}, filmCast),
			max:       6,
			want:      []int{2, 3},
		},
		{
			name:      "at most max",
			question:  testkit.BridgeQuestion,
			sentences: numbered(other, film, filmCast, dirIntro, dirBorn),
			max:       2,
			want:      []int{2, 4},
		},
		{
			name:      "gap items add query words",
			question:  "Who is it?",
			gaps:      []data.GapItem{{Target: "Gamik Fothestini", Slot: "bakery"}},
			sentences: numbered(film, other, dirBorn),
			max:       6,
			want:      []int{2},
		},
		{
			name:      "description when target and slot are empty",
			question:  "Who is it?",
			gaps:      []data.GapItem{{Description: "bakery"}},
			sentences: numbered(film, other),
			max:       6,
			want:      []int{2},
		},
		{
			name:      "equal scores in id order",
			question:  "bakery",
			sentences: numbered(other, other, other),
			max:       2,
			want:      []int{1, 2},
		},
		{
			name:      "nothing matches",
			question:  "Where is the moon?",
			sentences: numbered(other),
			max:       6,
			want:      []int{},
		},
		{
			name:     "no sentences",
			question: testkit.BridgeQuestion,
			max:      6,
			want:     []int{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Rank(tt.question, tt.gaps, tt.sentences, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name     string
		question string
		c        data.Context
		want     string
	}{
		{"place on the next hop", testkit.BridgeQuestion, testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock, testkit.StrangerBlock), "Standafield"},
		{"no answer in sight", testkit.BridgeQuestion, testkit.Blocks(testkit.FilmBlock), "Thirta Grupoustaton"},
		{"empty evidence", testkit.BridgeQuestion, data.Context{}, ""},
		{"person after by", "Who directed The Electric Frontier?", testkit.Blocks(testkit.FilmBlock), "Thirta Grupoustaton"},
		{"full date", "When was the director of The Electric Frontier born?", testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock), "28 May 1903"},
		{"year", "In what year was The Electric Frontier released?", testkit.Blocks(testkit.FilmBlock), "1952"},
		{"number", "How many people work at Acme?", testkit.Blocks([]string{"Acme", "Acme was founded in 1950.", "It employs about 1,801 people."}), "1,801"},
		{"nationality", "What is the nationality of the director of The Electric Frontier?", testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock), "Tovamesian"},
		{
			"choice by earlier date", "Who was born first, Thirta Grupoustaton or Gamik Fothestini?",
			testkit.Blocks(testkit.DirectorBlock, testkit.StrangerBlock), "Thirta Grupoustaton",
		},
		{
			"choice by later date", "Who was born later, Thirta Grupoustaton or Gamik Fothestini?",
			testkit.Blocks(testkit.DirectorBlock, testkit.StrangerBlock), "Gamik Fothestini",
		},
		{
			"choice by larger number", "Which employs more people, Acme or Bolt?",
			testkit.Blocks([]string{"Acme", "Acme employs 300 people."}, []string{"Bolt", "Bolt employs 1,200 people."}), "Bolt",
		},
		{
			"choice without values: the more mentioned", "Which is a film, Iron Tide or Gold Bell?",
			testkit.Blocks([]string{"Gold Bell", "Gold Bell is a film.", "Gold Bell was shot in Rome."}, []string{"Iron Tide", "Iron Tide is a song."}), "Gold Bell",
		},
		{"choice with nothing known: the first", "Which came first, Iron Tide or Gold Bell?", data.Context{}, "Iron Tide"},
		{
			"same nationality: no", "Are Thirta Grupoustaton and Gamik Fothestini of the same nationality?",
			testkit.Blocks(testkit.DirectorBlock, testkit.StrangerBlock), "no",
		},
		{
			"same nationality: yes", "Are Thirta Grupoustaton and Ana Bo of the same nationality?",
			testkit.Blocks(testkit.DirectorBlock, []string{"Ana Bo", "Ana Bo (born 1 May 1950) is a Tovamesian actress."}), "yes",
		},
		{"yes/no covered", "Was The Electric Frontier directed by Thirta Grupoustaton?", testkit.Blocks(testkit.FilmBlock), "yes"},
		{"yes/no not covered", "Was The Electric Frontier filmed in Rome?", testkit.Blocks(testkit.FilmBlock), "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Answer(tt.question, tt.c.Evidence()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConcurrent runs the entry points from many goroutines (for the race
// detector) and checks they answer as they do alone.
func TestConcurrent(t *testing.T) {
	c := testkit.Blocks(testkit.FilmBlock, testkit.DirectorBlock, testkit.StrangerBlock)
	questions := []string{testkit.BridgeQuestion, "Who was born first, Thirta Grupoustaton or Gamik Fothestini?", "Who directed The Electric Frontier?"}
	sentences := numbered(c.Evidence()...)
	type outputs struct {
		verdict  data.Verdict
		features []float64
		ids      []int
		similar  []int
		answer   string
	}
	answer := func(q string) outputs {
		v := Verdict(q, c.Evidence())
		return outputs{v, Features(q, c.Evidence()), Rank(q, v.GapItems, sentences, 3), Similar(q, sentences, 3), Answer(q, c.Evidence())}
	}
	want := make([]outputs, len(questions))
	for i, q := range questions {
		want[i] = answer(q)
	}
	var wg sync.WaitGroup
	got := make([][]outputs, 8)
	for g := range got {
		wg.Go(func() {
			for range 20 {
				for _, q := range questions {
					got[g] = append(got[g], answer(q))
				}
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i, o := range got[g] {
			if diff := cmp.Diff(want[i%len(questions)], o, cmp.AllowUnexported(outputs{})); diff != "" {
				t.Fatalf("goroutine %d call %d differs (-alone +concurrent):\n%s", g, i, diff)
			}
		}
	}
}
