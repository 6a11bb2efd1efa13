package judge

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/internal/lexical"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
)

// writeLinearModel writes a valid linear model trained on template in
// dir/LinearModelFile and returns its path.
func writeLinearModel(t *testing.T, dir, template string) string {
	t.Helper()
	n := len(lexical.FeatureNames())
	m := LinearModel{Version: lexical.FeaturesVersion, Features: lexical.FeatureNames(),
		Mean: make([]float64, n), Std: make([]float64, n), Weights: make([]float64, n), Threshold: 0.5, TemplateHash: template}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, LinearModelFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeHandback writes h into a new directory and returns it.
func writeHandback(t *testing.T, h Handback) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteHandback(dir, h); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chatRecorder is a ChatterFunc that records what it was asked for.
type chatRecorder struct {
	calls []string
	err   error
}

func (r *chatRecorder) chat(model, baseURL string) (llm.Chatter, error) {
	r.calls = append(r.calls, model+" @ "+baseURL)
	if r.err != nil {
		return nil, r.err
	}
	return nil, nil // a judge is not asked anything here
}

func TestOpen(t *testing.T) {
	modelDir := t.TempDir()
	modelFile := writeLinearModel(t, modelDir, TemplateHash)
	tests := []struct {
		name      string
		spec      Spec
		wantModel string // the Model recorded by the judge's results, for built-in judges
		wantType  any
		wantCalls []string
	}{
		{name: "lexical", spec: Spec{Kind: "lexical"}, wantType: Lexical{}, wantModel: LexicalName},
		{name: "model flags ignored by other kinds", spec: Spec{Kind: "never", Model: "m", BaseURL: "u"}, wantType: Never{}, wantModel: NeverName},
		{name: "always", spec: Spec{Kind: "always"}, wantType: Always{}, wantModel: AlwaysName},
		{name: "llm", spec: Spec{Kind: "llm", Model: "judge-lora", BaseURL: "http://x/v1"}, wantType: &LLM{}, wantCalls: []string{"judge-lora @ http://x/v1"}},
		{name: "builtin file", spec: Spec{Kind: BuiltinPrefix + modelFile}, wantType: &Linear{}, wantModel: LinearPrefix + LinearModelFile},
		{name: "builtin directory", spec: Spec{Kind: BuiltinPrefix + modelDir}, wantType: &Linear{}, wantModel: LinearPrefix + LinearModelFile},
		{name: "hand-back of a model file", spec: Spec{From: writeHandback(t, Handback{ModelFile: modelFile, TemplateHash: TemplateHash})}, wantType: &Linear{}, wantModel: LinearPrefix + LinearModelFile},
		{
			name: "hand-back of a fine-tuned model", spec: Spec{From: writeHandback(t, Handback{FineTunedModel: "ft:judge", TemplateHash: TemplateHash}), BaseURL: "http://p/v1"},
			wantType: &LLM{}, wantCalls: []string{"ft:judge @ http://p/v1"},
		},
		{
			name: "hand-back of a served adapter", spec: Spec{From: writeHandback(t, Handback{AdapterDir: "/a", TemplateHash: TemplateHash}), BaseURL: "http://localhost:8000/v1"},
			wantType: &LLM{}, wantCalls: []string{AdapterName + " @ http://localhost:8000/v1"},
		},
		{
			name: "served adapter with matching chat templates", spec: Spec{From: writeHandback(t, Handback{AdapterDir: "/a", TemplateHash: TemplateHash,
				ChatTemplate: &ChatTemplates{Trained: "c1", Served: "c1", Status: ChatTemplatesMatch}}), BaseURL: "http://localhost:8000/v1"},
			wantType: &LLM{}, wantCalls: []string{AdapterName + " @ http://localhost:8000/v1"},
		},
		{
			name: "other chat template allowed", spec: Spec{From: writeHandback(t, Handback{AdapterDir: "/a", TemplateHash: TemplateHash,
				ChatTemplate: &ChatTemplates{Trained: "c1", Served: "c2", Status: ChatTemplatesDiffer}}), BaseURL: "http://u/v1", AllowTemplateMismatch: true},
			wantType: &LLM{}, wantCalls: []string{AdapterName + " @ http://u/v1"},
		},
		{
			name: "other template allowed", spec: Spec{From: writeHandback(t, Handback{ModelFile: writeLinearModel(t, t.TempDir(), "other"), TemplateHash: "other"}), AllowTemplateMismatch: true},
			wantType: &Linear{}, wantModel: LinearPrefix + LinearModelFile,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec chatRecorder
			j, err := Open(tt.spec, rec.chat)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := typeName(j), typeName(tt.wantType); got != want {
				t.Errorf("got a %s, want a %s", got, want)
			}
			if diff := cmp.Diff(tt.wantCalls, rec.calls); diff != "" {
				t.Errorf("ChatterFunc calls (-want +got):\n%s", diff)
			}
			if tt.wantModel != "" {
				res, err := j.Judge(t.Context(), "Who?", testkit.Blocks(testkit.FilmBlock))
				if err != nil || res.Model != tt.wantModel {
					t.Errorf("judged by %q, %v; want %q", res.Model, err, tt.wantModel)
				}
			}
		})
	}
}

func typeName(v any) string {
	switch v.(type) {
	case Lexical:
		return "Lexical"
	case Never:
		return "Never"
	case Always:
		return "Always"
	case *LLM:
		return "*LLM"
	case *Linear:
		return "*Linear"
	}
	return "something else"
}

func TestOpenErrors(t *testing.T) {
	otherModel := writeLinearModel(t, t.TempDir(), "other-template")
	broken := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(broken, []byte(`{"version": "lexical-features v0"}`), 0o644)
	adapter := Handback{AdapterDir: "/a", TemplateHash: TemplateHash, Serve: "vllm serve base --enable-lora"}
	tests := []struct {
		name string
		spec Spec
		// want checks the error, a *SpecError.
		want func(*SpecError) bool
	}{
		{"unknown kind", Spec{Kind: "oracle"}, func(e *SpecError) bool { return errors.Is(e, ErrUnknownKind) && e.Spec.Kind == "oracle" }},
		{"empty kind", Spec{}, func(e *SpecError) bool { return errors.Is(e, ErrUnknownKind) }},
		{"llm without model", Spec{Kind: "llm"}, func(e *SpecError) bool { return errors.Is(e, ErrNoModel) }},
		{"missing model file", Spec{Kind: BuiltinPrefix + "nowhere.json"}, func(e *SpecError) bool { return errors.Is(e, os.ErrNotExist) }},
		{"bad model file", Spec{Kind: BuiltinPrefix + broken}, func(e *SpecError) bool { return errors.Is(e, ErrLinearModel) }},
		{"model of another template", Spec{Kind: BuiltinPrefix + otherModel}, func(e *SpecError) bool {
			var te *TemplateError
			return errors.As(e, &te) && te.Trained == "other-template" && te.Handback == "" && e.Spec.Kind == BuiltinPrefix+otherModel
		}},
		{"missing hand-back", Spec{From: t.TempDir()}, func(e *SpecError) bool { return errors.Is(e, os.ErrNotExist) && e.Spec.From != "" }},
		{"kind and hand-back", Spec{Kind: "lexical", From: t.TempDir()}, func(e *SpecError) bool { return strings.Contains(e.Error(), "not both") }},
		{"hand-back of another template", Spec{From: writeHandback(t, Handback{FineTunedModel: "ft", TemplateHash: "other"})}, func(e *SpecError) bool {
			var te *TemplateError
			return errors.As(e, &te) && te.Trained == "other" && te.Handback == e.Spec.From
		}},
		{"hand-back whose server applies another chat template", Spec{From: writeHandback(t, Handback{AdapterDir: "/a", TemplateHash: TemplateHash,
			ChatTemplate: &ChatTemplates{Trained: "c1", ServedFrom: "gemma.gguf", Status: ChatTemplatesDiffer, Note: "the GGUF has none"}}), BaseURL: "http://u/v1"}, func(e *SpecError) bool {
			var ce *ChatTemplateError
			return errors.As(e, &ce) && ce.Handback == e.Spec.From && strings.Contains(e.Error(), "applies none (gemma.gguf): the GGUF has none")
		}},
		{"hand-back without a judge", Spec{From: writeHandback(t, Handback{TemplateHash: TemplateHash})}, func(e *SpecError) bool { return errors.Is(e, ErrNoJudge) }},
		{"adapter not served", Spec{From: writeHandback(t, adapter)}, func(e *SpecError) bool {
			var se *ServeError
			return errors.As(e, &se) && strings.HasPrefix(se.Serve, "vllm serve ") && se.Dir == e.Spec.From
		}},
		{"hand-back of a model file of another template", Spec{From: writeHandback(t, Handback{ModelFile: otherModel, TemplateHash: TemplateHash})}, func(e *SpecError) bool {
			var te *TemplateError
			return errors.As(e, &te) && e.Spec.Kind == BuiltinPrefix+otherModel && e.Spec.From == ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec chatRecorder
			for _, f := range []func() error{
				func() error { _, err := Open(tt.spec, rec.chat); return err },
				func() error { _, err := Resolve(tt.spec); return err },
			} {
				err := f()
				var se *SpecError
				if !errors.As(err, &se) || !tt.want(se) {
					t.Errorf("got error %v, want another *SpecError", err)
				}
			}
			if len(rec.calls) > 0 {
				t.Errorf("ChatterFunc called for a bad spec: %v", rec.calls)
			}
		})
	}
}

func TestOpenChatterError(t *testing.T) {
	// The ChatterFunc's error is the caller's own: returned as is, not as a
	// bad spec.
	want := errors.New("no such server")
	rec := chatRecorder{err: want}
	_, err := Open(Spec{Kind: "llm", Model: "m"}, rec.chat)
	var se *SpecError
	if err != want || errors.As(err, &se) {
		t.Errorf("got error %v, want %v as is", err, want)
	}
}

func TestResolve(t *testing.T) {
	dir := writeHandback(t, Handback{FineTunedModel: "ft:judge", TemplateHash: TemplateHash})
	got, err := Resolve(Spec{From: dir, BaseURL: "http://p/v1", Model: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Spec{Kind: "llm", Model: "ft:judge", BaseURL: "http://p/v1"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// A resolved spec opens as it resolves, and resolves to itself.
	again, err := Resolve(got)
	if err != nil || again != got {
		t.Errorf("resolving again: %+v, %v; want %+v", again, err, got)
	}
}
