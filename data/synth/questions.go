package synth

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/distill-rag/distill/data"
)

// The questions of a world: bridge and comparison questions over its facts,
// with their gold answers and supporting sentences.

// fact is one gold sentence: a passage and a sentence index in it.
type fact struct {
	e        *entry
	sentence int
}

// draft is a question before it gets its id.
type draft struct {
	text    string
	answers []string
	typ     string
	facts   [2]fact
}

// maxAttempts bounds the draws for one question; a draw fails when its
// question repeats an earlier one or gives its answer away.
const maxAttempts = 1000

// ask writes n questions: three bridge questions for every two comparison
// questions, of the dataset name (their ids name-000001, ...).
func (g *generator) ask(n int, name string) ([]data.Question, error) {
	seen := make(map[string]bool, n)
	questions := make([]data.Question, 0, n)
	for i := range n {
		bridge := i%5 == 0 || i%5 == 2 || i%5 == 4
		var d draft
		for attempt := 0; ; attempt++ {
			if attempt == maxAttempts {
				return nil, fmt.Errorf("synth: question %d: no new question after %d draws", i+1, maxAttempts)
			}
			ok := false
			if bridge {
				d, ok = g.bridge()
			} else {
				d, ok = g.comparison()
			}
			if ok && !seen[d.text] {
				seen[d.text] = true
				break
			}
		}
		q := data.Question{
			ID:      fmt.Sprintf("%s-%06d", name, i+1),
			Text:    d.text,
			Answers: d.answers,
			Type:    d.typ,
			Dataset: name,
		}
		for _, f := range d.facts {
			q.GoldTitles = append(q.GoldTitles, f.e.passage.Title)
			q.GoldDocIDs = append(q.GoldDocIDs, f.e.passage.ID)
			q.SupportingFacts = append(q.SupportingFacts, data.SupportingFact{Title: f.e.passage.Title, Sentence: int32(f.sentence)})
		}
		questions = append(questions, q)
	}
	return questions, nil
}

// bridge draws a question that goes from a named entity to a linked one.
func (g *generator) bridge() (draft, bool) {
	d := draft{typ: "bridge"}
	switch g.rng.IntN(6) {
	case 0:
		f := pick(g.rng, g.works[film])
		p := f.creator.birthplace
		d.text = fmt.Sprintf("In which city was the director of %s born?", f.title)
		d.answers = []string{p.name, p.name + ", " + p.country.name}
		d.facts = [2]fact{{&f.entry, f.sCreator}, {&f.creator.entry, f.creator.sBirthplace}}
	case 1:
		w := pick(g.rng, g.works[novel])
		a := w.creator
		d.text = fmt.Sprintf("What is the nationality of the author of %s?", w.title)
		d.answers = []string{a.country.demonym, a.country.name}
		d.facts = [2]fact{{&w.entry, w.sCreator}, {&a.entry, a.sIntro}}
	case 2:
		f := pick(g.rng, g.works[film])
		s := f.company
		d.text = fmt.Sprintf("In which city is the company that produced %s headquartered?", f.title)
		d.answers = []string{s.city.name}
		d.facts = [2]fact{{&f.entry, f.sCompany}, {&s.entry, s.sCity}}
	case 3:
		a := pick(g.rng, g.works[album])
		b := a.band
		d.text = fmt.Sprintf("In which city was the band that released %s formed?", a.title)
		d.answers = []string{b.city.name}
		d.facts = [2]fact{{&a.entry, a.sCreator}, {&b.entry, b.sCity}}
	case 4:
		p := pick(g.rng, g.people)
		u := p.university
		if u == nil {
			return d, false
		}
		d.text = fmt.Sprintf("In what year was the university where %s studied founded?", p.name())
		d.answers = []string{strconv.Itoa(u.year)}
		d.facts = [2]fact{{&p.entry, p.sUniversity}, {&u.entry, u.sFounded}}
	default:
		f := pick(g.rng, g.byJob[founder])
		c := f.founded
		if c == nil {
			return d, false
		}
		d.text = fmt.Sprintf("When was the founder of %s born?", c.name)
		d.answers = []string{f.born.String(), f.born.american()}
		d.facts = [2]fact{{&c.entry, c.sFounder}, {&f.entry, f.sIntro}}
	}
	for _, a := range d.answers {
		if containsWords(d.text, a) {
			return d, false // the question would give its answer away
		}
	}
	return d, true
}

// comparison draws a question that compares two entities of a kind.
func (g *generator) comparison() (draft, bool) {
	d := draft{typ: "comparison"}
	switch g.rng.IntN(5) {
	case 0:
		a, b := pick(g.rng, g.people), pick(g.rng, g.people)
		if a == b || a.born == b.born {
			return d, false
		}
		d.text = fmt.Sprintf("Who was born first, %s or %s?", a.name(), b.name())
		d.answers = []string{earlier(a.born.before(b.born), a.name(), b.name())}
		d.facts = [2]fact{{&a.entry, a.sIntro}, {&b.entry, b.sIntro}}
	case 1:
		pool := g.companies
		if g.rng.IntN(3) == 0 {
			pool = g.orgs[university]
		}
		x, y := pick(g.rng, pool), pick(g.rng, pool)
		if x.year == y.year {
			return d, false
		}
		d.text = fmt.Sprintf("Which was founded earlier, %s or %s?", x.name, y.name)
		d.answers = []string{earlier(x.year < y.year, x.name, y.name)}
		d.facts = [2]fact{{&x.entry, x.sFounded}, {&y.entry, y.sFounded}}
	case 2:
		a := pick(g.rng, g.people)
		b := pick(g.rng, g.people)
		if g.rng.IntN(2) == 0 {
			b = pick(g.rng, g.byCountry[a.country.index]) // balance yes and no
		}
		if a == b {
			return d, false
		}
		d.text = fmt.Sprintf("Are %s and %s of the same nationality?", a.name(), b.name())
		d.answers = []string{"no"}
		if a.country == b.country {
			d.answers = []string{"yes"}
		}
		d.facts = [2]fact{{&a.entry, a.sIntro}, {&b.entry, b.sIntro}}
	case 3:
		x, y := pick(g.rng, g.works[film]), pick(g.rng, g.works[film])
		if x.year == y.year {
			return d, false
		}
		d.text = fmt.Sprintf("Which film came out first, %s or %s?", x.title, y.title)
		d.answers = []string{earlier(x.year < y.year, x.title, y.title)}
		d.facts = [2]fact{{&x.entry, x.sCreator}, {&y.entry, y.sCreator}}
	default:
		x, y := pick(g.rng, g.orgs[band]), pick(g.rng, g.orgs[band])
		if x.year == y.year {
			return d, false
		}
		d.text = fmt.Sprintf("Which band was formed first, %s or %s?", x.name, y.name)
		d.answers = []string{earlier(x.year < y.year, x.name, y.name)}
		d.facts = [2]fact{{&x.entry, x.sFounded}, {&y.entry, y.sFounded}}
	}
	return d, true
}

func earlier(firstIsEarlier bool, first, second string) string {
	if firstIsEarlier {
		return first
	}
	return second
}

// containsWords reports whether needle occurs in s as whole words, ignoring
// case: "Kelford" is in "born in Kelford?" but not in "Kelfordton".
func containsWords(s, needle string) bool {
	s, needle = strings.ToLower(s), strings.ToLower(needle)
	for i := 0; ; {
		j := strings.Index(s[i:], needle)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(needle)
		if (start == 0 || !isWordByte(s[start-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isWordByte(c byte) bool {
	return c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}
