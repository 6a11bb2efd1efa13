package lexical

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
)

// BM25 parameters of the extractor: the textbook defaults, as sentences are
// much shorter than the documents the index was tuned for.
const (
	extractK1 = 1.2
	extractB  = 0.75
)

// Sentence is a sentence to rank, with the id the caller numbers it by.
type Sentence struct {
	ID    int
	Title string
	Text  string
}

// Rank is the ranking of the lexical extractor: the ids of the at most max
// sentences that best match the question and the gap items, best first.
//
// The query is the distinct content words of the question and, for each
// gap item, of its target and slot (its description when both are empty).
// Each sentence is scored as a BM25 document (k1 1.2, b 0.75, document
// frequencies and average length taken over the given sentences), a word
// related to a query word (see Verdict) counting half. A sentence that
// matches gains half the weight of the query words in its title, so that
// sentences of a relevant document that do not repeat its name ("He was
// born in ...") still rank. A document whose title is named by a matching
// sentence of another document (the next hop of a multi-hop question)
// lends its matching sentences half the best such sentence's score. Only
// sentences that score above zero are chosen, best first, ties in id
// order. The result is never nil. Rank is safe for concurrent use.
func Rank(question string, gaps []data.GapItem, sentences []Sentence, max int) []int {
	lx := getLexer()
	defer putLexer(lx)
	if max < 1 || len(sentences) == 0 {
		return []int{}
	}
	index, weight := queryTerms(lx, question, gaps)
	nq := len(weight)
	if nq == 0 {
		return []int{}
	}

	n := len(sentences)
	tf := make([]float64, n*nq)
	inTitle := make([][]bool, n)
	length := make([]float64, n)
	df := make([]float64, nq)
	titles := make(map[string][]bool)
	total := 0.0
	// match maps a sentence stem to the query word it matches: exactly
	// (k), or a related stem (-k-2, counted half), or none (-1).
	match := make(map[string]int, 256)
	for i, s := range sentences {
		row := tf[i*nq : (i+1)*nq]
		for _, w := range lx.textWords(s.Text) {
			if w.stem == "" {
				continue
			}
			length[i]++
			k, ok := match[w.stem]
			if !ok {
				k = matchQuery(w.stem, index)
				match[w.stem] = k
			}
			switch {
			case k >= 0:
				row[k]++
			case k < -1:
				row[-k-2] += 0.5
			}
		}
		total += length[i]
		t, ok := titles[s.Title]
		if !ok {
			t = make([]bool, nq)
			for _, w := range lx.textWords(s.Title) {
				if k, ok := index[w.stem]; ok && w.stem != "" {
					t[k] = true
				}
			}
			titles[s.Title] = t
		}
		inTitle[i] = t
		for k := range nq {
			if row[k] > 0 || t[k] {
				df[k]++
			}
		}
	}
	avg := math.Max(total/float64(n), 1)
	for k := range nq {
		weight[k] *= math.Log(1 + (float64(n)-df[k]+0.5)/(df[k]+0.5))
	}

	score := make([]float64, n)
	for i := range sentences {
		row := tf[i*nq : (i+1)*nq]
		norm := extractK1 * (1 - extractB + extractB*length[i]/avg)
		title := 0.0
		for k, f := range row {
			if f > 0 {
				score[i] += weight[k] * f * (extractK1 + 1) / (f + norm)
			}
			if inTitle[i][k] {
				title += weight[k] * 0.5
			}
		}
		if score[i] > 0 {
			score[i] += title
		}
	}
	return best(sentences, score, hopBoost(sentences, score, titles), max)
}

// queryTerms indexes the content stems of the question and of the gap
// items (target and slot, else the description), each of weight 1.
func queryTerms(lx *lexer, question string, gaps []data.GapItem) (map[string]int, []float64) {
	index := make(map[string]int)
	var weight []float64
	addQuery := func(text string) {
		for _, w := range lx.textWords(text) {
			if w.stem == "" || w.function {
				continue
			}
			if _, ok := index[w.stem]; !ok {
				index[w.stem] = len(weight)
				weight = append(weight, 1)
			}
		}
	}
	addQuery(question)
	for _, g := range gaps {
		part := strings.TrimSpace(g.Target + " " + g.Slot)
		if part == "" {
			part = g.Description
		}
		addQuery(part)
	}
	return index, weight
}

// hopBoost: a document whose title a matching sentence of another
// document names is the next hop: each of its sentences gains half the
// best such sentence's score.
func hopBoost(sentences []Sentence, score []float64, titles map[string][]bool) map[string]float64 {
	boost := make(map[string]float64, len(titles))
	for title := range titles {
		if title == "" {
			continue
		}
		for i, s := range sentences {
			if score[i] > 0 && s.Title != title && score[i]/2 > boost[title] && names(s.Text, title) {
				boost[title] = score[i] / 2
			}
		}
	}
	return boost
}

// best returns the ids of the at most max sentences of the highest
// positive scores (with their documents' boosts), ties by id.
func best(sentences []Sentence, score []float64, boost map[string]float64, max int) []int {
	type scored struct {
		id    int
		score float64
	}
	ranked := make([]scored, 0, len(sentences))
	for i, s := range sentences {
		if total := score[i] + boost[s.Title]; total > 0 {
			ranked = append(ranked, scored{s.ID, total})
		}
	}
	slices.SortFunc(ranked, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	ids := make([]int, 0, min(max, len(ranked)))
	for _, r := range ranked[:min(max, len(ranked))] {
		ids = append(ids, r.id)
	}
	return ids
}

// Similar is the ranking of the extractive-compression baseline (in the
// manner of extractive RECOMP): the ids of the at most max sentences most
// similar to the question alone, by the share of the question's content
// words they hold, ties in the given order. Unlike Rank it ignores gap
// items and the documents' titles and links. The result is never nil. It
// is safe for concurrent use.
func Similar(question string, sentences []Sentence, max int) []int {
	lx := getLexer()
	defer putLexer(lx)
	q := make(map[string]bool)
	for _, w := range lx.textWords(question) {
		if w.stem != "" && !w.function {
			q[w.stem] = true
		}
	}
	type scored struct {
		id    int
		score float64
	}
	var all []scored
	for _, s := range sentences {
		seen := make(map[string]bool)
		for _, w := range lx.textWords(s.Text) {
			if q[w.stem] {
				seen[w.stem] = true
			}
		}
		if len(seen) > 0 {
			all = append(all, scored{s.ID, float64(len(seen)) / float64(len(q))})
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	ids := []int{}
	for _, s := range all[:min(len(all), max)] {
		ids = append(ids, s.id)
	}
	return ids
}

// matchQuery returns the query word a stem matches: its index k when equal,
// -k-2 when related (see related), -1 when none.
func matchQuery(stem string, index map[string]int) int {
	if k, ok := index[stem]; ok {
		return k
	}
	if len(stem) < 5 {
		return -1
	}
	best := -1
	for q, k := range index {
		if related(stem, q) && (best == -1 || k < -best-2) {
			best = -k - 2
		}
	}
	return best
}
