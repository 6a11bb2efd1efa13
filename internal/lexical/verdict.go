package lexical

import (
	"cmp"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
)

// Verdict is the verdict of the lexical judge: it names the parts of the
// question the evidence does not mention as gap items.
//
// It reads the question as names (runs of capitalised words), the type of
// its answer (from the question word and the noun after "which" or "what":
// "city" in "In which city ..."), and its other content words, leaving out
// function words and frame words ("first", "same", "name", ...). A name is
// covered when the evidence (sentences and titles) holds all its stems; a
// content word when a sentence on the question's chain holds its stem or a
// related one (one a prefix of the other, five bytes at least: "direct"
// covers "director"). The chain is the blocks about the question's names
// and the blocks whose titles they name, so that "born" in the block of an
// unrelated person does not count.
//
// The evidence is sufficient when it is not empty, covers every name and
// every content word, and, for a question that asks for a place, person,
// date, year, number or nationality, a sentence on the chain that matches
// the question (or lies on the next hop) holds a span of that type that is
// not in the question: evidence states a city, not the word "city". One
// content word may be missing when that span lies on the next hop, as the
// word for the link between two hops is often phrased otherwise ("author"
// for "a novel by").
//
// Otherwise the gap items are, in order: a bridge_entity item for each
// uncovered name (target the name); then one item whose slot is the
// answer-type and uncovered content words (all content words when none is
// uncovered) and whose target is the entity the evidence points to next,
// category bridge_entity, or, when there is none, the question's first name
// ("Answer" when it has none), category attribute. The entity pointed to
// is the first name in the chain sentence that best matches the question's
// content words that is not in the question, not a date, not a lone word
// opening the sentence or looking like a nationality, and not yet a title
// of the context (whose document cannot be retrieved again).
//
// A sufficient verdict has an empty, non-nil list of gap items. Verdict is
// safe for concurrent use.
func Verdict(question string, evidence []data.Evidence) data.Verdict {
	lx := getLexer()
	defer putLexer(lx)
	q := lx.parseQuestion(question)
	sents, all := lx.analyseSentences(evidence)
	return judge(q, sents, all)
}

func judge(q *question, sents []sentence, all termSet) data.Verdict {
	gaps := []data.GapItem{}
	for i, s := range q.entities {
		if coversAll(all, q.entityStems[i]) {
			continue
		}
		name := spanText(q.text, q.words, s)
		gaps = append(gaps, data.GapItem{
			Category:    data.CategoryBridgeEntity,
			Target:      name,
			Description: "Find the passage about " + name + ".",
		})
	}
	hop := chain(q, sents)
	onChain := make(termSet)
	for i, s := range sents {
		if hop[i] != offChain {
			onChain.addWords(s.words)
			for _, st := range s.title {
				onChain[st] = struct{}{}
			}
		}
	}
	var missing []string
	for _, i := range q.required {
		if !onChain.has(q.words[i].stem) {
			missing = append(missing, lower(q.text, q.words[i]))
		}
	}
	if len(sents) > 0 && len(gaps) == 0 {
		shown := answerShown(q, sents, hop)
		// The word for the link between two hops ("author" for "a novel
		// by") is often missing: one may be, once the next hop shows an
		// answer.
		if (len(missing) == 0 && shown != offChain) || (len(missing) == 1 && shown == nextHop) {
			return data.Verdict{Sufficient: true, GapItems: []data.GapItem{}}
		}
	}
	if len(gaps) > 0 && len(missing) == 0 && len(q.focus) == 0 {
		return data.Verdict{GapItems: gaps}
	}
	var slot []string
	for _, i := range q.focus {
		slot = append(slot, lower(q.text, q.words[i]))
	}
	slot = append(slot, missing...)
	if len(slot) == 0 {
		// Everything is mentioned but no answer is in sight: ask for the
		// question's words again, about the next entity.
		for _, i := range q.required {
			slot = append(slot, lower(q.text, q.words[i]))
		}
	}
	g := data.GapItem{Category: data.CategoryAttribute, Target: "Answer", Slot: strings.Join(slot, " ")}
	if len(q.entities) > 0 {
		g.Target = spanText(q.text, q.words, q.entities[0])
	}
	if len(gaps) == 0 {
		if next := bridge(q, sents, hop); next != "" {
			g.Category, g.Target = data.CategoryBridgeEntity, next
		}
	}
	g.Description = "Find what the evidence lacks about " + g.Target + ": " + strings.Join(slot, ", ") + "."
	return data.Verdict{GapItems: append(gaps, g)}
}

// answerShown tells where the evidence shows a possible answer to a
// wh-question of a known answer type: in a chain sentence that holds a span
// of that type not in the question and that matches the question's content
// words or lies on the next hop. It returns the hop of the first such
// sentence, nextHop if any is there, and offChain when there is none. Other
// questions need no answer in sight: they get firstHop.
func answerShown(q *question, sents []sentence, hop []int) int {
	if q.kind != kindWh || q.answer == typeOther {
		return firstHop
	}
	shown := offChain
	for i, s := range sents {
		if hop[i] == offChain || (hop[i] == firstHop && matchScore(q, s) == 0) || candidate(q, s, true) == "" {
			continue
		}
		if hop[i] == nextHop {
			return nextHop
		}
		shown = firstHop
	}
	return shown
}

func coversAll(all termSet, stems []string) bool {
	for _, st := range stems {
		if _, ok := all[st]; !ok {
			return false
		}
	}
	return true
}

// bridge returns the name the evidence points to next: in the chain
// sentences that match the question's content words best (then its names),
// the first name that is not in the question, not a date, not a
// nationality-like word and not already a title of the context (whose
// document cannot be retrieved again).
func bridge(q *question, sents []sentence, hop []int) string {
	type scored struct {
		i            int
		score, names float64
	}
	order := make([]scored, 0, len(sents))
	for i, s := range sents {
		if hop[i] == offChain {
			continue
		}
		names := 0.0
		for _, stems := range q.entityStems {
			if subsetWords(stems, s.words) {
				names++
			}
		}
		order = append(order, scored{i, matchScore(q, s), names})
	}
	slices.SortStableFunc(order, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.names, a.names)
	})
	titles := make(map[string]bool, len(sents))
	for _, s := range sents {
		titles[strings.ToLower(s.Title)] = true
	}
	for _, o := range order {
		s := sents[o.i]
		for _, sp := range capitalised(s.Text, s.words) {
			if isMonth(s.Text, s.words[sp.from]) || q.coversSpan(s.words, sp) {
				continue
			}
			// A lone capitalised word is no name when it opens the sentence
			// ("Regarded as ...") or looks like a nationality.
			if sp.to-sp.from == 1 && (sp.from == 0 || demonym(s.Text[s.words[sp.from].start:s.words[sp.from].end])) {
				continue
			}
			if name := spanText(s.Text, s.words, sp); !titles[strings.ToLower(name)] {
				return name
			}
		}
	}
	return ""
}

// coversSpan reports whether every stem of a span of evidence words is a
// stem of a question word (and the span has one).
func (q *question) coversSpan(words []word, sp span) bool {
	found := false
	for i := sp.from; i < sp.to; i++ {
		st := words[i].stem
		if st == "" {
			continue
		}
		found = true
		if !q.hasWordStem(st) {
			return false
		}
	}
	return found
}

// hasWordStem reports whether any word of the question has the stem.
func (q *question) hasWordStem(st string) bool {
	for _, w := range q.words {
		if w.stem == st {
			return true
		}
	}
	return false
}
