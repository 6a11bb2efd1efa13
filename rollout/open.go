package rollout

import (
	"fmt"
	"slices"
	"strings"

	"github.com/distill-rag/distill/llm"
)

// The kinds of the extractor, reader and summarizer roles: the built-in
// baseline, or a model behind an OpenAI-compatible endpoint.
const (
	KindLexical = "lexical"
	KindBuiltin = "builtin"
	KindLLM     = "llm"
)

// RoleKinds returns the kinds a role may be: lexical or llm for the
// extractor and the reader, builtin (lead and focused sentences) or llm for
// the summarizer.
func RoleKinds(role string) []string {
	if role == "summarizer" {
		return []string{KindBuiltin, KindLLM}
	}
	return []string{KindLexical, KindLLM}
}

// RoleSpec names one model role's implementation: its Kind (RoleKinds)
// and, for KindLLM, the model and the server (empty: the default one).
type RoleSpec struct {
	Kind, Model, BaseURL string
}

// RoleSpecs are the roles of the loop besides the judge (judge.Open opens
// it) and the retriever. An empty Kind is the built-in one. The summarizer
// of the compression ablations asks the reader's model.
type RoleSpecs struct {
	Extractor, Reader RoleSpec
	Summarizer        string // its Kind
	// ReaderInput is what an llm reader shows its model (empty:
	// ReaderInputDistill); the lexical reader reads the evidence alone.
	ReaderInput ReaderInput
}

// Dial returns the Chatter of a role's model; the caller stacks its
// limits, retries, cache and accounting.
type Dial func(role, model, baseURL string) (llm.Chatter, error)

// OpenedRoles are the roles RoleSpecs name, opened.
type OpenedRoles struct {
	Extractor Extractor
	Reader    Reader
	// Summarizer and FocusedSummarizer are the summaries of the
	// compression ablations (bench's summary and focused-summary
	// variants).
	Summarizer, FocusedSummarizer Compressor
}

// RoleSpecError is a role that RoleSpecs.Check refuses: Role names it, Fields
// what of it is wrong (none: its kind; "model", "base_url"), Reason why.
type RoleSpecError struct {
	Role   string
	Fields []string
	Reason string
}

func (e *RoleSpecError) Error() string { return e.Role + ": " + e.Reason }

// Check reports the first role that names an unknown kind, a model role
// without a model, or a model or server for a built-in role (a
// *RoleSpecError), so that a command can refuse its flags before it opens
// anything.
func (s RoleSpecs) Check() error {
	for _, r := range []struct {
		role string
		spec RoleSpec
	}{{"extractor", s.Extractor}, {"reader", s.Reader}} {
		kind := r.spec.kind(KindLexical)
		switch {
		case !slices.Contains(RoleKinds(r.role), kind):
			return &RoleSpecError{Role: r.role, Reason: fmt.Sprintf("unknown %s %q (want %s)", r.role, kind, strings.Join(RoleKinds(r.role), ", "))}
		case kind == KindLLM && r.spec.Model == "":
			return &RoleSpecError{Role: r.role, Fields: []string{"model"}, Reason: r.role + " llm needs a model"}
		case kind != KindLLM && (r.spec.Model != "" || r.spec.BaseURL != ""):
			return &RoleSpecError{Role: r.role, Fields: []string{"model", "base_url"}, Reason: fmt.Sprintf("a model and a server are for %s llm, not %s", r.role, kind)}
		}
	}
	if _, err := ParseReaderInput(string(s.ReaderInput)); err != nil {
		return &RoleSpecError{Role: "reader", Fields: []string{"input"}, Reason: err.Error()}
	}
	sum := RoleSpec{Kind: s.Summarizer}.kind(KindBuiltin)
	switch {
	case !slices.Contains(RoleKinds("summarizer"), sum):
		return &RoleSpecError{Role: "summarizer", Reason: fmt.Sprintf("unknown summarizer %q (want %s)", sum, strings.Join(RoleKinds("summarizer"), ", "))}
	case sum == KindLLM && s.Reader.Model == "":
		return &RoleSpecError{Role: "reader", Fields: []string{"model"}, Reason: "summarizer llm uses the reader's model: give the reader one"}
	}
	return nil
}

func (s RoleSpec) kind(builtin string) string {
	if s.Kind == "" {
		return builtin
	}
	return s.Kind
}

// Open opens the roles s names (after Check); a model role's Chatter comes
// from dial, asked once per role.
func (s RoleSpecs) Open(dial Dial) (OpenedRoles, error) {
	if err := s.Check(); err != nil {
		return OpenedRoles{}, err
	}
	o := OpenedRoles{Extractor: LexicalExtractor{}, Reader: LexicalReader{},
		Summarizer: LeadSummary{}, FocusedSummarizer: FocusedSummary{}}
	if s.Extractor.Kind == KindLLM {
		ch, err := dial("extractor", s.Extractor.Model, s.Extractor.BaseURL)
		if err != nil {
			return o, err
		}
		o.Extractor = NewLLMExtractor(ch, s.Extractor.Model)
	}
	if s.Reader.Kind == KindLLM {
		ch, err := dial("reader", s.Reader.Model, s.Reader.BaseURL)
		if err != nil {
			return o, err
		}
		o.Reader = NewLLMReader(ch, s.Reader.Model, WithReaderInput(s.ReaderInput))
	}
	if s.Summarizer == KindLLM {
		ch, err := dial("summarizer", s.Reader.Model, s.Reader.BaseURL)
		if err != nil {
			return o, err
		}
		o.Summarizer = NewLLMSummarizer(ch, s.Reader.Model, false)
		o.FocusedSummarizer = NewLLMSummarizer(ch, s.Reader.Model, true)
	}
	return o, nil
}

// UsesModels reports whether any of the roles asks a model.
func (s RoleSpecs) UsesModels() bool {
	return s.Extractor.Kind == KindLLM || s.Reader.Kind == KindLLM || s.Summarizer == KindLLM
}
