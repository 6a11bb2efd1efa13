package lexical

import (
	"strconv"
	"strings"

	"github.com/distill-rag/distill/data"
)

// Answer is the answer of the lexical reader: an extractive answer to the
// question from the evidence only.
//
//   - A choice question ("Which was founded earlier, A or B?") gets one of
//     its two options: when the question asks for the earlier or later
//     (smaller or larger) one, the option whose evidence states the
//     earlier or later date (smaller or larger number), taken from the
//     sentence about the option that best matches the question; otherwise,
//     or when a value is missing, the option the evidence mentions more
//     often, the first on a tie.
//   - A yes/no question gets "yes" or "no". "Are A and B of the same X?" is
//     "yes" when the sentences about A and those about B share a
//     capitalised word other than their names (a nationality-like word such
//     as "Greseresian" when X is "nationality"); any other yes/no question
//     is "yes" when the evidence covers all its names and content words, as
//     Verdict counts them.
//   - Any other question gets a span of an evidence sentence: the sentence
//     that best matches the question's content and answer-type words (names
//     of the question do not count, as the answer of a multi-hop question is
//     rarely in a sentence that names the question's entity), looking first
//     among the sentences on the question's chain of documents (see
//     Verdict), where a sentence that matches no word may still answer.
//     The span is the first one of the type the question asks for that is
//     not in the question: a name after "in", "at", "from" or "near" for a
//     place, a name of two words or more (after "by" first) for a person, a
//     date or a year, a number, a capitalised word such as "Greseresian" for
//     a nationality, any name otherwise. When no sentence has a span of that
//     type, any name, date or number will do. No span at all gives "".
//
// It is safe for concurrent use.
func Answer(question string, evidence []data.Evidence) string {
	lx := getLexer()
	defer putLexer(lx)
	q := lx.parseQuestion(question)
	sents, all := lx.analyseSentences(evidence)
	switch q.kind {
	case kindChoice:
		return choose(lx, q, sents)
	case kindYesNo:
		return yesNo(lx, q, sents, all)
	default:
		return extractSpan(q, sents)
	}
}

// about returns the indexes of the sentences about a name: those of a
// document titled with it (all its stems in the title) and those that
// contain all its stems.
func about(lx *lexer, name string, sents []sentence) []int {
	var stems []string
	for _, w := range lx.textWords(name) {
		if w.stem != "" {
			stems = append(stems, w.stem)
		}
	}
	if len(stems) == 0 {
		return nil
	}
	var out []int
	for i, s := range sents {
		if subset(stems, s.title) || strings.EqualFold(s.Title, name) || subsetWords(stems, s.words) {
			out = append(out, i)
		}
	}
	return out
}

func subset(stems, of []string) bool {
	for _, st := range stems {
		if !contains(of, st) {
			return false
		}
	}
	return true
}

func subsetWords(stems []string, words []word) bool {
	for _, st := range stems {
		found := false
		for _, w := range words {
			if w.stem == st {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// matchScore scores how well a sentence matches the question's content and
// answer-type words: 1 for each word whose stem it holds, 0.5 for a merely
// related stem.
func matchScore(q *question, s sentence) float64 {
	score := 0.0
	for _, idx := range [][]int{q.required, q.focus} {
		for _, i := range idx {
			st := q.words[i].stem
			best := 0.0
			for _, w := range s.words {
				if w.stem == st {
					best = 1
					break
				}
				if w.stem != "" && related(st, w.stem) {
					best = 0.5
				}
			}
			score += best
		}
	}
	return score
}

// choose answers a choice question with one of its options.
func choose(lx *lexer, q *question, sents []sentence) string {
	var count [2]int
	var val [2]float64
	var found [2]bool
	for k, opt := range q.options {
		idx := about(lx, opt, sents)
		count[k] = len(idx)
		best := -1.0
		for _, i := range idx {
			s := sents[i]
			var vs []value
			if q.numeric {
				vs = numbers(s.Text, s.words)
			} else {
				vs = dates(s.Text, s.words)
			}
			if len(vs) == 0 {
				continue
			}
			if score := matchScore(q, s); score > best {
				best, val[k], found[k] = score, vs[0].v, true
			}
		}
	}
	if q.direction != 0 && found[0] && found[1] && val[0] != val[1] {
		if (val[0] < val[1]) == (q.direction < 0) {
			return q.options[0]
		}
		return q.options[1]
	}
	if count[1] > count[0] {
		return q.options[1]
	}
	return q.options[0]
}

// yesNo answers a yes/no question.
func yesNo(lx *lexer, q *question, sents []sentence, all termSet) string {
	if q.same && len(q.entities) >= 2 {
		nationality := len(q.focus) > 0 && typeOf(lower(q.text, q.words[q.focus[len(q.focus)-1]])) == typeDemonym
		a := attributes(lx, q, spanText(q.text, q.words, q.entities[0]), sents, nationality)
		b := attributes(lx, q, spanText(q.text, q.words, q.entities[1]), sents, nationality)
		for w := range a {
			if b[w] {
				return "yes"
			}
		}
		return "no"
	}
	for i := range q.entities {
		if !coversAll(all, q.entityStems[i]) {
			return "no"
		}
	}
	for _, i := range q.required {
		if !all.has(q.words[i].stem) {
			return "no"
		}
	}
	return "yes"
}

// attributes collects the capitalised words of the sentences about a name
// that are not part of a name of the question, nor months, nor
// sentence-opening function words; only nationality-like words when the
// question compares nationalities.
func attributes(lx *lexer, q *question, name string, sents []sentence, nationality bool) map[string]bool {
	out := make(map[string]bool)
	for _, i := range about(lx, name, sents) {
		s := sents[i]
		for j, w := range s.words {
			if !w.upper || (j == 0 && w.function) || w.stem == "" || isMonth(s.Text, w) || q.hasWordStem(w.stem) {
				continue
			}
			if nationality && !demonym(s.Text[w.start:w.end]) {
				continue
			}
			out[w.stem] = true
		}
	}
	return out
}

// extractSpan answers a wh-question with a span of the best sentence,
// looking at the question's chain first (see chain), where a sentence that
// does not match the question at all may still answer it.
func extractSpan(q *question, sents []sentence) string {
	hop := chain(q, sents)
	for _, strict := range []bool{true, false} {
		for _, onlyChain := range []bool{true, false} {
			// On the chain a sentence need not match the question: the
			// answer's sentence on the next hop rarely does.
			best, bestScore := "", 0.0
			if onlyChain {
				bestScore = -1
			}
			for i, s := range sents {
				if onlyChain && hop[i] == offChain {
					continue
				}
				score := matchScore(q, s)
				if score <= bestScore {
					continue
				}
				if c := candidate(q, s, strict); c != "" {
					best, bestScore = c, score
				}
			}
			if best != "" {
				return best
			}
		}
	}
	return ""
}

// candidate returns the first span of a sentence that may answer the
// question and is not part of it: of the question's answer type when
// strict, of any type otherwise.
func candidate(q *question, s sentence, strict bool) string {
	text, words := s.Text, s.words
	names := func(keep func(sp span) bool) string {
		for _, sp := range capitalised(text, words) {
			if isMonth(text, words[sp.from]) {
				continue
			}
			if q.coversSpan(words, sp) || !keep(sp) {
				continue
			}
			return spanText(text, words, sp)
		}
		return ""
	}
	first := func(vs []value) string {
		for _, v := range vs {
			if !strings.Contains(q.text, v.text) {
				return v.text
			}
		}
		return ""
	}
	if !strict {
		if a := names(func(span) bool { return true }); a != "" {
			return a
		}
		if a := first(dates(text, words)); a != "" {
			return a
		}
		return first(numbers(text, words))
	}
	switch q.answer {
	case typePlace:
		return names(func(sp span) bool {
			if sp.from == 0 {
				return false
			}
			switch lower(text, words[sp.from-1]) {
			case "in", "at", "from", "near":
				return true
			}
			return false
		})
	case typePerson:
		if a := names(func(sp span) bool {
			return sp.to-sp.from >= 2 && sp.from > 0 && lower(text, words[sp.from-1]) == "by"
		}); a != "" {
			return a
		}
		return names(func(sp span) bool { return sp.to-sp.from >= 2 })
	case typeDate:
		return first(dates(text, words))
	case typeYear:
		return first(years(text, words))
	case typeNumber:
		return first(numbers(text, words))
	case typeDemonym:
		return names(func(sp span) bool {
			return sp.to-sp.from == 1 && sp.from > 0 && demonym(text[words[sp.from].start:words[sp.from].end])
		})
	}
	return names(func(span) bool { return true })
}

// demonym reports whether a word looks like a nationality ("American",
// "Chinese", "British", "Icelandic", "Israeli", "Dutch").
func demonym(w string) bool {
	for _, suffix := range []string{"an", "ese", "ish", "ic", "i", "ch"} {
		if strings.HasSuffix(w, suffix) {
			return true
		}
	}
	return false
}

// value is a date or a number found in a sentence: its text and a value
// that orders it (dates as yyyymmdd, missing parts zero).
type value struct {
	text string
	v    float64
}

// dates returns the dates of a sentence, full dates first ("1 September
// 1956", "September 1, 1956"), then months with years ("May 1950"), then
// bare years, each group in order.
func dates(text string, words []word) []value {
	var full, partial, bare []value
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w.digit && i+2 < len(words) && day(text, w) > 0 && isMonth(text, words[i+1]) && year(text, words[i+2]) > 0:
			full = append(full, value{text[w.start:words[i+2].end], dateValue(year(text, words[i+2]), months[lower(text, words[i+1])], day(text, w))})
			i += 2
		case isMonth(text, w) && i+2 < len(words) && day(text, words[i+1]) > 0 && year(text, words[i+2]) > 0:
			full = append(full, value{text[w.start:words[i+2].end], dateValue(year(text, words[i+2]), months[lower(text, w)], day(text, words[i+1]))})
			i += 2
		case isMonth(text, w) && i+1 < len(words) && year(text, words[i+1]) > 0:
			partial = append(partial, value{text[w.start:words[i+1].end], dateValue(year(text, words[i+1]), months[lower(text, w)], 0)})
			i++
		case year(text, w) > 0:
			bare = append(bare, value{text[w.start:w.end], dateValue(year(text, w), 0, 0)})
		}
	}
	return append(append(full, partial...), bare...)
}

// years returns the years of a sentence.
func years(text string, words []word) []value {
	var out []value
	for _, w := range words {
		if y := year(text, w); y > 0 {
			out = append(out, value{text[w.start:w.end], float64(y)})
		}
	}
	return out
}

func dateValue(y, m, d int) float64 { return float64(y*10000 + m*100 + d) }

// year returns the year a word states (four digits, 1000 to 2099), or 0.
func year(text string, w word) int {
	s := text[w.start:w.end]
	if len(s) != 4 || !w.digit {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1000 || n > 2099 {
		return 0
	}
	return n
}

// day returns the day of the month a word states (1 or 2 digits), or 0.
func day(text string, w word) int {
	s := text[w.start:w.end]
	if len(s) > 2 || !w.digit {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 31 {
		return 0
	}
	return n
}

// numbers returns the numbers of a sentence that are not years ("1,000",
// "3.5", "12"), then its years.
func numbers(text string, words []word) []value {
	var out, ys []value
	for _, w := range words {
		if !w.digit {
			continue
		}
		s := text[w.start:w.end]
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		if err != nil {
			continue
		}
		if year(text, w) > 0 {
			ys = append(ys, value{s, f})
			continue
		}
		out = append(out, value{s, f})
	}
	return append(out, ys...)
}
