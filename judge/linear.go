package judge

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

// LinearModelFile is the name of a linear judge's model file in the
// directory of the training job that wrote it.
const LinearModelFile = "builtin-judge.json"

// LinearModel is a logistic regression over standardised lexical features
// of (question, evidence): the built-in judge that trains on this CPU
// (finetune/builtin writes it).
type LinearModel struct {
	// Version and Features name the features the model reads; a model of
	// other features than this build computes is refused.
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

// Check reports whether the model is complete and of this build's
// features.
func (m LinearModel) Check() error {
	names := lexical.FeatureNames()
	n := len(names)
	switch {
	case m.Version != lexical.FeaturesVersion:
		return fmt.Errorf("%w: features %q, this build computes %q", ErrLinearModel, m.Version, lexical.FeaturesVersion)
	case !slices.Equal(m.Features, names):
		return fmt.Errorf("%w: its features are %v, want %v", ErrLinearModel, m.Features, names)
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

// Linear is the built-in trained judge: a LinearModel decides sufficiency,
// and when it says insufficient the gap items are the lexical judge's
// (none when the lexical judge itself is satisfied: the next query is then
// the bare question). It is a baseline, as its name says, and safe for
// concurrent use.
type Linear struct {
	m    LinearModel
	name string
	hash string
}

var _ Judge = (*Linear)(nil)

// LinearPrefix starts the model name a Linear judge records.
const LinearPrefix = "builtin-linear-judge (trained baseline) "

// NewLinear returns the judge of a checked model; source (a path) names it
// in the recorded model name.
func NewLinear(m LinearModel, source string) (*Linear, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	w, _ := json.Marshal(m)
	return &Linear{m: m, name: LinearPrefix + filepath.Base(source), hash: data.TemplateHash(lexical.FeaturesVersion, string(w))}, nil
}

// LoadLinear returns the judge of a model file, or of the training
// directory that holds one (LinearModelFile).
func LoadLinear(path string) (*Linear, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, LinearModelFile)
	}
	m, err := LoadLinearModel(path)
	if err != nil {
		return nil, err
	}
	return NewLinear(m, path)
}

// TrainedTemplateHash returns the judge prompt template of the labels the
// model was trained on ("" when unknown): a trained judge should be used
// where the judge's prompt is that template.
func (j *Linear) TrainedTemplateHash() string { return j.m.TemplateHash }

// Judge implements Judge.
func (j *Linear) Judge(_ context.Context, question string, c data.Context) (Result, error) {
	evidence := c.Evidence()
	p := j.m.Probability(lexical.Features(question, evidence))
	v := data.Verdict{Sufficient: p >= j.m.Threshold, GapItems: []data.GapItem{}}
	if !v.Sufficient {
		if lex := lexical.Verdict(question, evidence); !lex.Sufficient {
			v.GapItems = lex.GapItems
		}
	}
	raw, err := json.Marshal(struct {
		data.Verdict
		Probability float64 `json:"probability"`
	}{v, p})
	if err != nil {
		return Result{}, err
	}
	return Result{Verdict: v, Call: data.Call{Raw: string(raw), Model: j.name, TemplateHash: j.hash}}, nil
}
