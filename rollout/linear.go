package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/distill-rag/distill/data"
)

// LinearFeaturesVersion names the features of JudgeFeatures; a model
// trained on other features is refused. Bump it when they change.
const LinearFeaturesVersion = "lexical-features v1"

// LinearFeatureNames names the values JudgeFeatures returns, in order.
var LinearFeatureNames = []string{
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

// JudgeFeatures returns the features of (question, evidence) that the
// built-in trained judge reads: cheap lexical facts about how the evidence
// covers the question, named by LinearFeatureNames. They are computed from
// the question and the evidence sentences only, so they are the same for a
// recorded state (data.Label's Evidence) as for the live context.
func JudgeFeatures(question string, evidence []data.Evidence) []float64 {
	lx := getLexer()
	defer putLexer(lx)
	q := lx.parseQuestion(question)
	sents, all := lx.analyseSentences(evidence)
	f := make([]float64, len(LinearFeatureNames))
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

// LinearModel is a logistic regression over standardised JudgeFeatures:
// the built-in judge that trains on this CPU (finetune/builtin writes it).
type LinearModel struct {
	Version  string   `json:"version"`
	Features []string `json:"features"`
	// Mean and Std standardise each feature; Weights and Bias score it.
	Mean    []float64 `json:"mean"`
	Std     []float64 `json:"std"`
	Weights []float64 `json:"weights"`
	Bias    float64   `json:"bias"`
	// Threshold is the probability from which the judge says sufficient.
	Threshold float64 `json:"threshold"`
	// Provenance: the template hash of the labels' prompts and the hash of
	// the data it was trained on, and its metrics on that data.
	TemplateHash string             `json:"template_hash,omitempty"`
	DataHash     string             `json:"data_hash,omitempty"`
	Metrics      map[string]float64 `json:"metrics,omitempty"`
}

// ErrLinearModel is the cause of errors about a model file that cannot be
// used.
var ErrLinearModel = errors.New("bad linear judge model")

// Check reports whether the model is complete and of these features.
func (m LinearModel) Check() error {
	n := len(LinearFeatureNames)
	switch {
	case m.Version != LinearFeaturesVersion:
		return fmt.Errorf("%w: features %q, this build computes %q", ErrLinearModel, m.Version, LinearFeaturesVersion)
	case !slices.Equal(m.Features, LinearFeatureNames):
		return fmt.Errorf("%w: its features are %v, want %v", ErrLinearModel, m.Features, LinearFeatureNames)
	case len(m.Mean) != n || len(m.Std) != n || len(m.Weights) != n:
		return fmt.Errorf("%w: %d means, %d deviations, %d weights for %d features", ErrLinearModel, len(m.Mean), len(m.Std), len(m.Weights), n)
	case m.Threshold <= 0 || m.Threshold >= 1:
		return fmt.Errorf("%w: threshold %v not in (0, 1)", ErrLinearModel, m.Threshold)
	}
	for i, v := range slices.Concat(m.Mean, m.Std, m.Weights, []float64{m.Bias}) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: value %d is %v", ErrLinearModel, i, v)
		}
	}
	return nil
}

// Probability returns the model's probability that features x describe
// sufficient evidence.
func (m LinearModel) Probability(x []float64) float64 {
	z := m.Bias
	for i, v := range x {
		sd := m.Std[i]
		if sd == 0 {
			sd = 1
		}
		z += m.Weights[i] * (v - m.Mean[i]) / sd
	}
	return 1 / (1 + math.Exp(-z))
}

// LoadLinearModel reads a model file and checks it.
func LoadLinearModel(path string) (LinearModel, error) {
	var m LinearModel
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w: %w", path, ErrLinearModel, err)
	}
	if err := m.Check(); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// LinearJudge is the built-in trained judge: a LinearModel decides
// sufficiency, and when it says insufficient the gap items are the lexical
// judge's (none when the lexical judge itself is satisfied: the next query
// is then the bare question). It is a baseline, as its name says, and safe
// for concurrent use.
type LinearJudge struct {
	m    LinearModel
	name string
	hash string
}

// LinearJudgePrefix starts the model name a LinearJudge records.
const LinearJudgePrefix = "builtin-linear-judge (trained baseline) "

// NewLinearJudge returns the judge of a checked model; source (a path)
// names it in the recorded model name.
func NewLinearJudge(m LinearModel, source string) (*LinearJudge, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	w, _ := json.Marshal(m)
	return &LinearJudge{m: m, name: LinearJudgePrefix + filepath.Base(source), hash: data.TemplateHash(LinearFeaturesVersion, string(w))}, nil
}

// TemplateHash returns the judge prompt template of the labels the model
// was trained on ("" when unknown): a trained judge should be used where
// the judge's prompt is that template.
func (j *LinearJudge) TemplateHash() string { return j.m.TemplateHash }

// Judge implements Judge.
func (j *LinearJudge) Judge(ctx context.Context, question string, c data.Context) (JudgeResult, error) {
	p := j.m.Probability(JudgeFeatures(question, c.Evidence()))
	v := data.Verdict{Sufficient: p >= j.m.Threshold, GapItems: []data.GapItem{}}
	if !v.Sufficient {
		lex, err := LexicalJudge{}.Judge(ctx, question, c)
		if err != nil {
			return JudgeResult{}, err
		}
		if !lex.Verdict.Sufficient {
			v.GapItems = lex.Verdict.GapItems
		}
	}
	raw, err := json.Marshal(struct {
		data.Verdict
		Probability float64 `json:"probability"`
	}{v, p})
	if err != nil {
		return JudgeResult{}, err
	}
	return JudgeResult{Verdict: v, Call: data.Call{Raw: string(raw), Model: j.name, TemplateHash: j.hash}}, nil
}
