package lexical

import (
	"math"
	"slices"

	"github.com/distill-rag/distill/data"
)

// FeaturesVersion names the features Features computes; a model trained
// on other features must be refused. Bump it when they change.
const FeaturesVersion = "lexical-features v1"

// featureNames names the values Features returns, in order.
var featureNames = []string{
	"empty",              // no evidence yet
	"names_covered",      // share of the question's names whose stems are all in the evidence
	"words_on_chain",     // share of the question's content words in sentences on its chain
	"words_missing",      // log(1 + content words missing from the chain)
	"answer_first_hop",   // a typed answer span shown on the first hop
	"answer_next_hop",    // ... on the next hop
	"lexical_sufficient", // the lexical judge's verdict
	"log_sentences",      // log(1 + sentences)
	"log_titles",         // log(1 + distinct titles)
	"chain_share",        // share of the sentences on the question's chain
	"typed_question",     // a wh-question with a known answer type
	"log_names",          // log(1 + names in the question)
}

// FeatureNames returns the names of the values Features returns, in order.
func FeatureNames() []string { return slices.Clone(featureNames) }

// Features returns the features of (question, evidence) that the built-in
// trained judge reads: cheap lexical facts about how the evidence covers
// the question, named by FeatureNames. They are computed from the question
// and the evidence sentences only, so they are the same for a recorded
// state (data.Label's Evidence) as for the live context. It is safe for
// concurrent use.
func Features(question string, evidence []data.Evidence) []float64 {
	lx := getLexer()
	defer putLexer(lx)
	q := lx.parseQuestion(question)
	sents, all := lx.analyseSentences(evidence)
	f := make([]float64, len(featureNames))
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	f[0] = b(len(sents) == 0)
	covered := 0
	for _, stems := range q.entityStems {
		if coversAll(all, stems) {
			covered++
		}
	}
	f[1] = share(covered, len(q.entityStems))
	hop := chain(q, sents)
	onChain := make(termSet)
	chained := 0
	titles := make(map[string]bool)
	for i, s := range sents {
		titles[s.Title] = true
		if hop[i] != offChain {
			chained++
			onChain.addWords(s.words)
			for _, st := range s.title {
				onChain[st] = struct{}{}
			}
		}
	}
	found := 0
	for _, i := range q.required {
		if onChain.has(q.words[i].stem) {
			found++
		}
	}
	f[2] = share(found, len(q.required))
	f[3] = math.Log1p(float64(len(q.required) - found))
	if len(sents) > 0 {
		shown := answerShown(q, sents, hop)
		f[4], f[5] = b(shown == firstHop), b(shown == nextHop)
	}
	f[6] = b(judge(q, sents, all).Sufficient)
	f[7] = math.Log1p(float64(len(sents)))
	f[8] = math.Log1p(float64(len(titles)))
	f[9] = share(chained, len(sents))
	f[10] = b(q.kind == kindWh && q.answer != typeOther)
	f[11] = math.Log1p(float64(len(q.entities)))
	return f
}

// share is n/of, 1 when of is 0 (nothing to cover is covered).
func share(n, of int) float64 {
	if of == 0 {
		return 1
	}
	return float64(n) / float64(of)
}
