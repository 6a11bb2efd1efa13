package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/distill-rag/distill/data"
)

// answerType is the kind of answer a question asks for, as far as its words
// tell.
type answerType int

const (
	typeOther answerType = iota
	typePlace
	typePerson
	typeDate
	typeYear
	typeNumber
	typeDemonym
)

// questionKind is the form of a question.
type questionKind int

const (
	kindWh     questionKind = iota // which/what/who/... and anything else
	kindYesNo                      // opens with an auxiliary: "Are ...", "Did ..."
	kindChoice                     // offers two options: "..., A or B?"
)

// question is what the analysis reads from a question's words.
type question struct {
	text  string
	words []word
	// entities are the question's capitalised runs (names and titles),
	// entityStems their stems.
	entities    []span
	entityStems [][]string
	// required are the content words the evidence must cover (word
	// indexes, one per stem): not function words, frame words, entity words
	// or focus words.
	required []int
	// focus are the words naming the answer's type ("city" in "In which
	// city ..."), or the compared attribute ("nationality" in "... the same
	// nationality?").
	focus []int
	// stems are the distinct stems of entities, required and focus words.
	stems  []string
	kind   questionKind
	answer answerType
	// options are the two options of a choice question.
	options [2]string
	// direction is -1 when a choice question asks for the earlier (or
	// smaller) option, +1 for the later (or larger), 0 when it does not
	// say; numeric says the comparison is of numbers rather than dates.
	direction int
	numeric   bool
	// same is set for "... the same X?" questions.
	same bool
}

// auxiliaries open yes/no questions.
var auxiliaries = set("is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can", "could", "will", "would", "should")

// parseQuestion analyses a question. The result is shared (the lexer keeps
// the last one): callers must not modify it.
func (lx *lexer) parseQuestion(text string) *question {
	if lx.last != nil && lx.last.text == text {
		return lx.last
	}
	q := lx.parse(text)
	lx.last = q
	return q
}

func (lx *lexer) parse(text string) *question {
	q := &question{text: text, words: lx.textWords(text)}
	n := len(q.words)
	lows := make([]string, n)
	for i, w := range q.words {
		lows[i] = lower(text, w)
	}
	q.entities = capitalised(text, q.words)
	inEntity := make([]bool, n)
	for _, s := range q.entities {
		var stems []string
		for i := s.from; i < s.to; i++ {
			inEntity[i] = true
			if st := q.words[i].stem; st != "" && !contains(stems, st) {
				stems = append(stems, st)
			}
		}
		q.entityStems = append(q.entityStems, stems)
	}
	isFocus := make([]bool, n)
	addFocus := func(i int) {
		if i < n && !inEntity[i] && !q.words[i].function && q.words[i].stem != "" && !isFocus[i] {
			isFocus[i] = true
			q.focus = append(q.focus, i)
		}
	}

	// The answer's type, from the first question word and the noun after it.
	q.answer = answerOf(text, q.words, lows, addFocus)
	for i, lw := range lows {
		if lw == "same" {
			q.same = true
			addFocus(i + 1)
		}
	}

	if n > 0 {
		if _, ok := auxiliaries[lows[0]]; ok {
			q.kind = kindYesNo
		}
	}
	if a, b, ok := q.choice(lows, inEntity); ok {
		q.kind, q.options = kindChoice, [2]string{a, b}
	}
	q.direction, q.numeric = direction(lows)

	for i, w := range q.words {
		if w.stem == "" || w.function || inEntity[i] || isFocus[i] {
			continue
		}
		if _, frame := frameWords[lows[i]]; frame {
			continue
		}
		if !containsStem(q.words, q.required, w.stem) {
			q.required = append(q.required, i)
		}
	}
	for _, stems := range q.entityStems {
		for _, st := range stems {
			if !contains(q.stems, st) {
				q.stems = append(q.stems, st)
			}
		}
	}
	for _, idx := range [][]int{q.required, q.focus} {
		for _, i := range idx {
			if st := q.words[i].stem; !contains(q.stems, st) {
				q.stems = append(q.stems, st)
			}
		}
	}
	return q
}

// choice finds the two options of a choice question. In "..., A or B?"
// they are the text between the last comma (or colon) and "or", and the
// rest of the question; otherwise they are the names that end just before
// "or" and start just after it ("Is A or B older?").
func (q *question) choice(lows []string, inEntity []bool) (a, b string, ok bool) {
	or := -1
	for i, lw := range lows {
		if lw == "or" && i > 0 && i < len(lows)-1 {
			or = i
		}
	}
	if or < 0 {
		return "", "", false
	}
	text := q.text
	if c := strings.LastIndexAny(text[:q.words[or].start], ",:"); c >= 0 {
		a = strings.TrimSpace(text[c+1 : q.words[or].start])
		b = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(text[q.words[or].end:]), "?.!"))
	} else if inEntity[or-1] && inEntity[or+1] {
		for _, s := range q.entities {
			if s.to == or {
				a = spanText(text, q.words, s)
			}
			if s.from == or+1 {
				b = spanText(text, q.words, s)
			}
		}
	}
	if a == "" || b == "" {
		return "", "", false
	}
	return a, b, true
}

// typeOf maps the noun after "which" or "what" to the answer type.
func typeOf(noun string) answerType {
	switch noun {
	case "city", "town", "country", "state", "nation", "place", "county", "region", "province",
		"village", "capital", "location", "island", "continent", "river", "area", "district",
		"borough", "municipality", "headquarters", "birthplace", "hometown":
		return typePlace
	case "person", "man", "woman", "director", "author", "actor", "actress", "singer", "writer",
		"founder", "player", "musician", "composer", "producer", "artist", "politician", "poet",
		"novelist", "president", "leader", "member", "character", "son", "daughter", "wife",
		"husband", "father", "mother", "brother", "sister", "coach", "manager", "creator", "people":
		return typePerson
	case "year":
		return typeYear
	case "date", "day", "month", "decade", "century":
		return typeDate
	case "population", "age", "height", "length", "size", "amount", "capacity", "count":
		return typeNumber
	case "nationality", "citizenship", "ethnicity", "language", "origin":
		return typeDemonym
	}
	return typeOther
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func containsStem(words []word, idx []int, stem string) bool {
	for _, i := range idx {
		if words[i].stem == stem {
			return true
		}
	}
	return false
}

// sentence is an evidence sentence with its words and its title's stems.
type sentence struct {
	data.Evidence
	words []word
	title []string
}

// analyseSentences splits the evidence sentences into words and collects
// every stem of the evidence, titles included (the judge sees them).
func (lx *lexer) analyseSentences(ev []data.Evidence) ([]sentence, termSet) {
	out := make([]sentence, len(ev))
	all := make(termSet, 16*len(ev))
	titles := make(map[string][]string)
	for i, e := range ev {
		out[i] = sentence{Evidence: e, words: lx.textWords(e.Text)}
		all.addWords(out[i].words)
		t, ok := titles[e.Title]
		if !ok {
			for _, w := range lx.textWords(e.Title) {
				if w.stem != "" {
					t = append(t, w.stem)
					all[w.stem] = struct{}{}
				}
			}
			titles[e.Title] = t
		}
		out[i].title = t
	}
	return out, all
}

// Hops of a sentence on the question's chain (see chain).
const (
	offChain = 0
	firstHop = 1 // a block about one of the question's names
	nextHop  = 2 // a block whose title a first-hop block names
)

// chain places each evidence sentence on the question's chain of documents:
// firstHop for the sentences of a block about one of the question's names
// (its title holds all the name's stems, or one of its sentences does),
// nextHop for those of a block whose title a first-hop sentence names (see
// names), and
// offChain for the rest. A question without names has every sentence on its
// first hop.
func chain(q *question, sents []sentence) []int {
	hop := make([]int, len(sents))
	if len(q.entities) == 0 {
		for i := range hop {
			hop[i] = firstHop
		}
		return hop
	}
	first := make(map[string]bool)
	for _, s := range sents {
		if first[s.Title] {
			continue
		}
		for _, stems := range q.entityStems {
			if len(stems) > 0 && (subset(stems, s.title) || subsetWords(stems, s.words)) {
				first[s.Title] = true
				break
			}
		}
	}
	next := make(map[string]bool)
	for _, s := range sents {
		if !first[s.Title] {
			continue
		}
		for _, o := range sents {
			if !first[o.Title] && !next[o.Title] && names(s.Text, o.Title) {
				next[o.Title] = true
			}
		}
	}
	for i, s := range sents {
		switch {
		case first[s.Title]:
			hop[i] = firstHop
		case next[s.Title]:
			hop[i] = nextHop
		}
	}
	return hop
}

// names reports whether text names title as a whole name: an occurrence not
// inside a longer word, not preceded by a capitalised word or a connector
// ("The Orchard of Jirtadale" does not name "Jirtadale"), and not followed
// by a capitalised word.
func names(text, title string) bool {
	if title == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(text[from:], title)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(title)
		from = i + 1
		if i > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:i])
			if isWordRune(r) {
				continue
			}
			if r == ' ' && partOfName(lastWord(text[:i-1])) {
				continue
			}
		}
		if end < len(text) {
			r, size := utf8.DecodeRuneInString(text[end:])
			if isWordRune(r) {
				continue
			}
			if r == ' ' {
				if next, _ := utf8.DecodeRuneInString(text[end+size:]); unicode.IsUpper(next) {
					continue
				}
			}
		}
		return true
	}
}

// lastWord returns the word that ends text, if text ends with a word.
func lastWord(text string) string {
	i := len(text)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		if !isWordRune(r) {
			break
		}
		i -= size
	}
	return text[i:]
}

// partOfName reports whether a word before a name makes it part of a longer
// one: a capitalised word or a connector other than an article ("the
// University of Zandeport" names "University of Zandeport").
func partOfName(w string) bool {
	if w == "" {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
		return true
	}
	switch w {
	case "the", "a", "an":
		return false
	}
	_, ok := connectors[w]
	return ok
}

// answerOf is the type of a question's answer, from its first question
// word and the noun after it (which it adds to the focus words).
func answerOf(text string, words []word, lows []string, addFocus func(int)) answerType {
	n := len(words)
	var t answerType
	for i, lw := range lows {
		switch lw {
		case "when":
			t = typeDate
		case "where":
			t = typePlace
		case "who", "whom":
			t = typePerson
		case "how":
			if i+1 < n {
				switch lows[i+1] {
				case "many", "much":
					t = typeNumber
					addFocus(i + 2)
				case "old", "long", "tall", "far", "big", "large", "high":
					t = typeNumber
				}
			}
		case "which", "what", "whose":
			// The noun right after the question word, or after "is the"
			// ("What is the nationality ..."); not a verb ("Which was
			// founded ...").
			j := i + 1
			if j < n {
				if _, aux := auxiliaries[lows[j]]; aux {
					j++
					if j < n && !isArticle(text, words[j]) {
						j = n
					}
				}
			}
			if j < n && isArticle(text, words[j]) {
				j++
			}
			if j < n && !words[j].upper && !words[j].function {
				addFocus(j)
				t = typeOf(lows[j])
			} else if lw == "whose" {
				t = typePerson
			}
		default:
			continue
		}
		break
	}
	return t
}

// direction says whether a question asks for the later or larger (1) or
// the earlier or smaller (-1) of its options, and whether it compares
// numbers.
func direction(lows []string) (dir int, numeric bool) {
	for _, lw := range lows {
		switch lw {
		case "first", "earlier", "earliest", "older", "oldest", "before", "sooner":
			dir = -1
		case "last", "later", "latest", "younger", "youngest", "newer", "newest", "recent", "after":
			dir = 1
		case "more", "larger", "largest", "bigger", "biggest", "longer", "longest", "taller", "tallest", "higher", "highest", "greater", "greatest", "most":
			dir, numeric = 1, true
		case "fewer", "smaller", "smallest", "shorter", "shortest", "less", "least", "lower", "lowest":
			dir, numeric = -1, true
		default:
			continue
		}
		break
	}
	return dir, numeric
}
