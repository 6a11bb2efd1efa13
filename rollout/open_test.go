package rollout

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/llm"
)

func TestRoleSpecsCheck(t *testing.T) {
	llmRole := RoleSpec{Kind: KindLLM, Model: "m"}
	tests := []struct {
		name string
		s    RoleSpecs
		want *RoleSpecError // nil: accepted
	}{
		{"built-in", RoleSpecs{}, nil},
		{"named built-ins", RoleSpecs{Extractor: RoleSpec{Kind: KindLexical}, Reader: RoleSpec{Kind: KindLexical}, Summarizer: KindBuiltin}, nil},
		{"models", RoleSpecs{Extractor: llmRole, Reader: RoleSpec{Kind: KindLLM, Model: "r", BaseURL: "http://x/v1"}, Summarizer: KindLLM}, nil},
		{"unknown extractor", RoleSpecs{Extractor: RoleSpec{Kind: "never"}},
			&RoleSpecError{Role: "extractor", Reason: `unknown extractor "never" (want lexical, llm)`}},
		{"reader llm without a model", RoleSpecs{Reader: RoleSpec{Kind: KindLLM}},
			&RoleSpecError{Role: "reader", Fields: []string{"model"}, Reason: "reader llm needs a model"}},
		{"a server for the lexical extractor", RoleSpecs{Extractor: RoleSpec{BaseURL: "http://x/v1"}},
			&RoleSpecError{Role: "extractor", Fields: []string{"model", "base_url"}, Reason: "a model and a server are for extractor llm, not lexical"}},
		{"unknown reader input", RoleSpecs{ReaderInput: "rounds"},
			&RoleSpecError{Role: "reader", Fields: []string{"input"}, Reason: `unknown reader input "rounds" (want distill or reference)`}},
		{"unknown summarizer", RoleSpecs{Summarizer: "lead"},
			&RoleSpecError{Role: "summarizer", Reason: `unknown summarizer "lead" (want builtin, llm)`}},
		{"summarizer llm without a reader model", RoleSpecs{Extractor: llmRole, Summarizer: KindLLM},
			&RoleSpecError{Role: "reader", Fields: []string{"model"}, Reason: "summarizer llm uses the reader's model: give the reader one"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Check()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var got *RoleSpecError
			if !errors.As(err, &got) {
				t.Fatalf("got %v, want a *RoleSpecError", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			// Open refuses what Check refuses, before it dials.
			if _, err := tt.s.Open(func(string, string, string) (llm.Chatter, error) {
				t.Fatal("dialled a refused role")
				return nil, nil
			}); err == nil {
				t.Error("Open accepted what Check refused")
			}
		})
	}
}

// noChat is a Chatter that is never asked.
type noChat struct{}

func (noChat) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("not asked")
}

func TestRoleSpecsOpen(t *testing.T) {
	s := RoleSpecs{Extractor: RoleSpec{Kind: KindLLM, Model: "x", BaseURL: "http://e/v1"},
		Reader: RoleSpec{Kind: KindLLM, Model: "r", BaseURL: "http://r/v1"}, Summarizer: KindLLM}
	var dialled []string
	o, err := s.Open(func(role, model, baseURL string) (llm.Chatter, error) {
		dialled = append(dialled, role+" "+model+" "+baseURL)
		return noChat{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"extractor x http://e/v1", "reader r http://r/v1", "summarizer r http://r/v1"}
	if diff := cmp.Diff(want, dialled); diff != "" {
		t.Errorf("dialled (-want +got):\n%s", diff)
	}
	for name, v := range map[string]any{"extractor": o.Extractor, "reader": o.Reader, "summarizer": o.Summarizer, "focused summarizer": o.FocusedSummarizer} {
		if typ := reflect.TypeOf(v).String(); !slices.Contains([]string{"*rollout.LLMExtractor", "*rollout.LLMReader", "*rollout.LLMSummarizer"}, typ) {
			t.Errorf("%s is a %s, want a model role", name, typ)
		}
	}
	// The built-in roles dial nothing.
	o, err = RoleSpecs{}.Open(func(string, string, string) (llm.Chatter, error) {
		t.Fatal("dialled a built-in role")
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(OpenedRoles{Extractor: LexicalExtractor{}, Reader: LexicalReader{}, Summarizer: LeadSummary{}, FocusedSummarizer: FocusedSummary{}}, o); diff != "" {
		t.Errorf("built-in roles (-want +got):\n%s", diff)
	}
	// A failed dial is the error.
	boom := errors.New("no server")
	if _, err := (RoleSpecs{Reader: RoleSpec{Kind: KindLLM, Model: "r"}}).Open(func(string, string, string) (llm.Chatter, error) {
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Errorf("got %v, want the dial's error", err)
	}
}
