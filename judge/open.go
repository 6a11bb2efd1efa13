package judge

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/distill-rag/distill/llm"
)

// BuiltinPrefix starts the kind of a spec that names a trained built-in
// judge: "builtin:PATH".
const BuiltinPrefix = "builtin:"

// Kinds returns the kinds a Spec may name, as users write them.
func Kinds() []string {
	return []string{"lexical", "never", "always", "llm", BuiltinPrefix + "PATH"}
}

// Spec names a judge the way a user does: by its kind, or by the hand-back
// of the training job that made it.
type Spec struct {
	// Kind is one of Kinds: "lexical" (Lexical), "never" and "always" (the
	// fixed policies), "llm" (LLM, the model Model reached at BaseURL) or
	// "builtin:PATH" (Linear: PATH is its model file, or the training
	// directory that holds one). It is empty when From is set.
	Kind string
	// Model and BaseURL name the model of an llm judge; other kinds ignore
	// them. What an empty BaseURL means is the ChatterFunc's business.
	Model, BaseURL string
	// From is a directory a training job handed its judge back in
	// (HandbackFile): a built-in model file opens as a builtin judge, a
	// fine-tuned model as an llm judge of that model at BaseURL, and a LoRA
	// adapter as an llm judge of AdapterName at BaseURL, which must then
	// say where the adapter is served.
	From string
	// AllowTemplateMismatch opens a trained judge whose training prompt
	// template is not this build's TemplateHash, or whose hand-back records
	// that its server applies another chat template than it was trained
	// with. Such a judge would be shown prompts it was not trained on, so
	// it is refused by default (*TemplateError, *ChatTemplateError).
	AllowTemplateMismatch bool
	// NoRepair makes an llm judge record an unusable answer without asking
	// again (WithNoRepair); other kinds ignore it.
	NoRepair bool
}

// ChatterFunc makes the Chatter that an llm judge asks. The caller decides
// how a model is reached: its client, retries, limits, cache and
// accounting.
type ChatterFunc func(model, baseURL string) (llm.Chatter, error)

// The causes of a *SpecError that callers may want to tell apart.
var (
	// ErrUnknownKind: Spec.Kind is none of Kinds.
	ErrUnknownKind = errors.New("unknown kind, want one of " + strings.Join(Kinds(), ", "))
	// ErrNoModel: an llm judge without Spec.Model.
	ErrNoModel = errors.New("an llm judge needs a model")
	// ErrNoJudge: the hand-back names no model file, fine-tuned model or
	// adapter.
	ErrNoJudge = errors.New("the hand-back names no trained judge")
)

// SpecError is an error about a spec: it names no judge of this package,
// or what it points to cannot be used. It is the user's to fix, which a
// command line reports as a usage error; an error of the ChatterFunc is
// not one (Open returns it as is).
type SpecError struct {
	// Spec is the spec that failed. When From was followed, it is the
	// spec of the judge the hand-back names.
	Spec Spec
	// Err says why: ErrUnknownKind, ErrNoModel, ErrNoJudge, a *ServeError,
	// a *TemplateError, a *ChatTemplateError, or why the hand-back or the
	// model file could not be read.
	Err error
}

func (e *SpecError) Error() string {
	if e.Spec.From != "" {
		return fmt.Sprintf("judge of %s: %v", e.Spec.From, e.Err)
	}
	return fmt.Sprintf("judge %q: %v", e.Spec.Kind, e.Err)
}

func (e *SpecError) Unwrap() error { return e.Err }

// ServeError says that a hand-back is a LoRA adapter, which an llm judge
// can only ask once it is served, and that the spec gives no BaseURL.
type ServeError struct {
	// Dir is the hand-back's directory, Serve the command that serves the
	// adapter (Handback.Serve).
	Dir, Serve string
}

func (e *ServeError) Error() string {
	return fmt.Sprintf("the judge in %s is a LoRA adapter: serve it (%s) and give the base URL it is served at", e.Dir, e.Serve)
}

// TemplateError says that a trained judge was trained on another prompt
// template than this build's TemplateHash, and the spec does not allow it.
type TemplateError struct {
	// Trained is the template hash the judge was trained on.
	Trained string
	// Handback is the hand-back directory that records it; empty when it
	// is the model file of a builtin judge (SpecError.Spec names it).
	Handback string
}

func (e *TemplateError) Error() string {
	if e.Handback != "" {
		return fmt.Sprintf("the judge in %s was trained on prompt template %.12s, this build's judge template is %.12s", e.Handback, e.Trained, TemplateHash)
	}
	return fmt.Sprintf("trained on labels of prompt template %.12s, not this build's %.12s", e.Trained, TemplateHash)
}

// ChatTemplateError says that a hand-back records that the server of its
// judge applies another chat template than the judge was trained with,
// and the spec does not allow it.
type ChatTemplateError struct {
	// Handback is the hand-back's directory, Templates what it records.
	Handback  string
	Templates ChatTemplates
}

func (e *ChatTemplateError) Error() string {
	served := e.Templates.Served
	if served == "" {
		served = "none"
	}
	msg := fmt.Sprintf("the judge in %s was trained with chat template %.12s, and its server applies %.12s (%s)",
		e.Handback, e.Templates.Trained, served, e.Templates.ServedFrom)
	if e.Templates.Note != "" {
		msg += ": " + e.Templates.Note
	}
	return msg
}

// Open returns the judge a spec names; see Spec. It is the one way from a
// user's words to a judge, for the command line and for Go programs alike.
// chat is called only for an llm judge, once; its error is returned as is.
// Every other error is a *SpecError.
func Open(spec Spec, chat ChatterFunc) (Judge, error) {
	spec, linear, err := resolve(spec)
	if err != nil {
		return nil, err
	}
	switch spec.Kind {
	case "lexical":
		return Lexical{}, nil
	case "never":
		return Never{}, nil
	case "always":
		return Always{}, nil
	case "llm":
		if chat == nil {
			return nil, errors.New("judge: an llm judge needs a ChatterFunc")
		}
		c, err := chat(spec.Model, spec.BaseURL)
		if err != nil {
			return nil, err
		}
		var opts []Option
		if spec.NoRepair {
			opts = append(opts, WithNoRepair())
		}
		return NewLLM(c, spec.Model, opts...), nil
	}
	return linear, nil
}

// Resolve checks a spec as Open does, without making any judge: it follows
// a hand-back (From) to the spec of the judge it names and reads and checks
// a builtin judge's model file. Its errors are Open's. It is for callers
// that check what users asked for before starting anything, or that open
// one judge many times (a benchmark opens the judge once per variant, each
// with its own accounting): they resolve once and Open the result.
func Resolve(spec Spec) (Spec, error) {
	spec, _, err := resolve(spec)
	return spec, err
}

// resolve is Resolve, and returns the builtin judge it loaded.
func resolve(spec Spec) (Spec, *Linear, error) {
	if spec.From != "" {
		var err error
		if spec, err = followHandback(spec); err != nil {
			return spec, nil, err
		}
	}
	switch kind := spec.Kind; {
	case kind == "lexical", kind == "never", kind == "always":
		return spec, nil, nil
	case kind == "llm":
		if spec.Model == "" {
			return spec, nil, &SpecError{Spec: spec, Err: ErrNoModel}
		}
		return spec, nil, nil
	case strings.HasPrefix(kind, BuiltinPrefix):
		j, err := LoadLinear(strings.TrimPrefix(kind, BuiltinPrefix))
		if err != nil {
			return spec, nil, &SpecError{Spec: spec, Err: err}
		}
		if h := j.TrainedTemplateHash(); h != "" && h != TemplateHash && !spec.AllowTemplateMismatch {
			return spec, nil, &SpecError{Spec: spec, Err: &TemplateError{Trained: h}}
		}
		return spec, j, nil
	}
	return spec, nil, &SpecError{Spec: spec, Err: ErrUnknownKind}
}

// followHandback returns the spec of the judge a hand-back names.
func followHandback(spec Spec) (Spec, error) {
	if spec.Kind != "" {
		return spec, &SpecError{Spec: spec, Err: errors.New("a spec names a kind or a hand-back, not both")}
	}
	h, err := ReadHandback(spec.From)
	if err != nil {
		return spec, &SpecError{Spec: spec, Err: err}
	}
	if h.TemplateHash != TemplateHash && !spec.AllowTemplateMismatch {
		return spec, &SpecError{Spec: spec, Err: &TemplateError{Trained: h.TemplateHash, Handback: spec.From}}
	}
	if ct := h.ChatTemplate; ct != nil && ct.Status == ChatTemplatesDiffer && !spec.AllowTemplateMismatch {
		return spec, &SpecError{Spec: spec, Err: &ChatTemplateError{Handback: spec.From, Templates: *ct}}
	}
	next := spec
	next.From = ""
	switch {
	case h.ModelFile != "":
		next.Kind = BuiltinPrefix + h.ModelFile
	case h.FineTunedModel != "":
		next.Kind, next.Model = "llm", h.FineTunedModel
	case h.AdapterDir != "":
		next.Kind, next.Model = "llm", AdapterName
		if next.BaseURL == "" {
			return spec, &SpecError{Spec: spec, Err: &ServeError{Dir: spec.From, Serve: h.Serve}}
		}
	default:
		return spec, &SpecError{Spec: spec, Err: fmt.Errorf("%w: %s has no model file, fine-tuned model or adapter", ErrNoJudge, filepath.Join(spec.From, HandbackFile))}
	}
	return next, nil
}
