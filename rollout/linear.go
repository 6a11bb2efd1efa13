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
	"github.com/distill-rag/distill/internal/lexical"
)

// LinearFeaturesVersion names the features of JudgeFeatures; a model
// trained on other features is refused.
const LinearFeaturesVersion = lexical.FeaturesVersion

// LinearFeatureNames names the values JudgeFeatures returns, in order.
var LinearFeatureNames = lexical.FeatureNames()

// JudgeFeatures returns the features of (question, evidence) that the
// built-in trained judge reads (lexical.Features).
func JudgeFeatures(question string, evidence []data.Evidence) []float64 {
	return lexical.Features(question, evidence)
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
