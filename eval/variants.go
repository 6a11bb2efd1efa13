package eval

import (
	"errors"
	"fmt"
	"slices"

	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/rollout"
)

// Setup is what the variants of a benchmark are made of: the roles as
// configured, the untuned judge for no-sft, the summarisers of the
// compression variants, the retriever every variant shares, and the loop's
// options.
type Setup struct {
	// Judge is the configured judge (the trained one, for full); BaseJudge
	// the untuned judge of no-sft (nil: no-sft cannot run).
	Judge, BaseJudge rollout.Judge
	Extractor        rollout.Extractor
	Reader           rollout.Reader
	Retriever        rollout.Retriever
	// Summarizer and FocusedSummarizer write the evidence of summarize and
	// abstractive (model-backed, or the built-in stand-ins).
	Summarizer, FocusedSummarizer rollout.Compressor
	// Loop are the loop's options of full; the variants change what they
	// are about.
	Loop rollout.Options
}

// Variant is one controller and evidence strategy of a benchmark.
type Variant struct {
	Name, Description string
	Roles             rollout.Roles
	Loop              rollout.Options
}

// variantInfo describes a variant. An opt-in one runs only when named:
// the default set is the paper's.
type variantInfo struct {
	name, description string
	optIn             bool
}

// The variants, in the order reports list them.
var variantOrder = []variantInfo{
	{name: "full", description: "the configured judge and extractor, early stop"},
	{name: "no-sft", description: "the untuned base judge in the full loop"},
	{name: "no-judge", description: "no sufficiency decision: every retrieval is spent, queries are the bare question"},
	{name: "oracle", description: "retrieval truth as judge (it sees the gold evidence): it stops once the evidence is complete, else the query is the bare question: stop decisions always right by retrieval truth", optIn: true},
	{name: "no-extractor", description: "raw retrieved documents appended instead of pointed sentences"},
	{name: "single-round", description: "standard RAG: one retrieval with the question, raw documents, then the reader"},
	{name: "summarize", description: "each retrieved document summarised, summaries appended"},
	{name: "extractive", description: "the sentences most similar to the question appended (extractive compression)"},
	{name: "abstractive", description: "one short query-focused summary sentence per document appended"},
}

// VariantNames returns every variant's name, in report order.
func VariantNames() []string {
	out := make([]string, len(variantOrder))
	for i, v := range variantOrder {
		out[i] = v.name
	}
	return out
}

// DefaultVariants returns the names of the variants a benchmark runs when
// none are named (every one but the opt-in ones), in report order.
func DefaultVariants() []string {
	var out []string
	for _, v := range variantOrder {
		if !v.optIn {
			out = append(out, v.name)
		}
	}
	return out
}

// ErrVariant is the cause of errors about a variant that is unknown or
// cannot be built from the setup.
var ErrVariant = errors.New("bad variant")

// Variant builds one variant from the setup.
func (s Setup) Variant(name string) (Variant, error) {
	i := slices.IndexFunc(variantOrder, func(v variantInfo) bool { return v.name == name })
	if i < 0 {
		return Variant{}, fmt.Errorf("%w: unknown variant %q (known: %v)", ErrVariant, name, VariantNames())
	}
	v := Variant{Name: name, Description: variantOrder[i].description, Loop: s.Loop,
		Roles: rollout.Roles{Judge: s.Judge, Extractor: s.Extractor, Reader: s.Reader, Retriever: s.Retriever}}
	raw := func() {
		loop, _ := rawLoop(s.Loop)
		v.Roles.Extractor, v.Loop = rollout.AllSentences{}, loop
	}
	switch name {
	case "no-sft":
		if s.BaseJudge == nil {
			return Variant{}, fmt.Errorf("%w: no-sft needs a base judge (the untuned model) besides the configured one", ErrVariant)
		}
		v.Roles.Judge = s.BaseJudge
	case "no-judge":
		v.Roles.Judge, v.Loop.Policy = judge.Never{}, rollout.Fixed
	case "oracle":
		v.Roles.Judge, v.Loop.Policy = judge.Truth{}, rollout.EarlyStop
	case "no-extractor":
		raw()
	case "single-round":
		raw()
		v.Roles.Judge, v.Loop.MaxRetrievals, v.Loop.Policy = judge.Always{}, 1, rollout.EarlyStop
	case "summarize", "abstractive":
		c := s.Summarizer
		if name == "abstractive" {
			c = s.FocusedSummarizer
		}
		if c == nil {
			return Variant{}, fmt.Errorf("%w: %s needs a summariser", ErrVariant, name)
		}
		v.Roles.Extractor, v.Roles.Compressor = nil, c
	case "extractive":
		v.Roles.Extractor = rollout.SimilarityExtractor{}
	}
	if v.Roles.Judge == nil || (v.Roles.Extractor == nil && v.Roles.Compressor == nil) || v.Roles.Reader == nil || v.Roles.Retriever == nil {
		return Variant{}, fmt.Errorf("%w: %s: a role or the retriever is missing: %w", ErrVariant, name, rollout.ErrMissingRole)
	}
	return v, nil
}

// rawLoop returns loop options that let every shown sentence of the
// round's documents through: MaxEvidence at least TopK x MaxSentences.
func rawLoop(o rollout.Options) (rollout.Options, int) {
	k, n := o.TopK, o.MaxSentences
	if k == 0 {
		k = rollout.DefaultTopK
	}
	if n == 0 {
		n = rollout.DefaultMaxSentences
	}
	o.MaxEvidence = k * n
	return o, o.MaxEvidence
}
