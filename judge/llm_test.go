package judge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/roletest"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// promptQuestion and promptContext are the fixed input of the LLM judge's
// tests and golden file; rollout's model-backed roles are tested on the
// same.
const promptQuestion = testkit.PromptQuestion

var promptContext = testkit.PromptContext

// scripted starts a server that answers with answers in turn, and client
// returns a real model client for a server.
var (
	scripted = llmtest.Scripted
	client   = roletest.Client
)

// llmRole is the LLM judge as the checks of every model-backed role see
// it, run on the fixed prompt input.
func llmRole() roletest.Role[Option] {
	schema := Schema()
	return roletest.Role[Option]{
		Name: "judge", MaxTokens: DefaultMaxTokens, WithMaxTokens: WithMaxTokens, Answer: sufficientAnswer,
		Schema: &schema, TemplateHash: TemplateHash,
		Call: func(ctx context.Context, c llm.Chatter, opts ...Option) (data.Call, error) {
			r, err := NewLLM(c, "judge-model", opts...).Judge(ctx, promptQuestion, promptContext())
			return r.Call, err
		},
	}
}

// sufficientAnswer is a usable answer of the judge.
const sufficientAnswer = `{"sufficient": true, "gap_items": []}`

func TestLLM(t *testing.T) {
	gap := `{"category": "attribute", "target": "Orla Venn", "slot": "birthplace city", "description": "Find the city where Orla Venn was born."}`
	gapItem := data.GapItem{Category: "attribute", Target: "Orla Venn", Slot: "birthplace city", Description: "Find the city where Orla Venn was born."}
	insufficient := `{"sufficient": false, "gap_items": [` + gap + `]}`
	tests := []struct {
		name    string
		answers []string
		want    data.Verdict
		// wantParseError is a part of the parse error; empty means none.
		wantParseError string
	}{
		{name: "insufficient with a gap", answers: []string{insufficient}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "sufficient", answers: []string{`{"sufficient": true, "gap_items": []}`}, want: data.Verdict{Sufficient: true}},
		{name: "gaps of a sufficient verdict dropped", answers: []string{`{"sufficient": true, "gap_items": [` + gap + `]}`}, want: data.Verdict{Sufficient: true}},
		{name: "object in a code fence", answers: []string{"Here is my verdict:\n```json\n" + insufficient + "\n```"}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "insufficient without gap items", answers: []string{`{"sufficient": false}`}, want: data.Verdict{}},
		{name: "malformed, then valid", answers: []string{`{"sufficient": false, "gap_items": [`, insufficient}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "non-boolean, then valid", answers: []string{`{"sufficient": "no", "gap_items": []}`, insufficient}, want: data.Verdict{GapItems: []data.GapItem{gapItem}}},
		{name: "malformed twice", answers: []string{"The evidence is not enough.", `{"sufficient": tru`}, wantParseError: "no JSON object"},
		{name: "non-boolean twice", answers: []string{`{"sufficient": "yes", "gap_items": []}`}, wantParseError: `"sufficient" is "yes", want true or false`},
		{name: "sufficient missing twice", answers: []string{`{"gap_items": []}`}, wantParseError: `no "sufficient" field`},
		{name: "gap item not an object twice", answers: []string{`{"sufficient": false, "gap_items": ["Orla Venn"]}`}, wantParseError: "gap item 0 is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, tt.answers...)
			j := NewLLM(client(t, s.URL(), "judge-model"), "configured-judge")
			c := promptContext()
			got, err := j.Judge(context.Background(), promptQuestion, c)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			reqs := s.Requests()
			roletest.Repair(t, reqs, tt.answers, tt.wantParseError, got.Call, "judge-model", TemplateHash)
			if diff := cmp.Diff(tt.want, got.Verdict); diff != "" {
				t.Errorf("verdict differs (-want +got):\n%s", diff)
			}
			wantUser := Prompt(promptQuestion, c.Render()).User
			if got := reqs[0].Messages; len(got) != 2 || got[1].Content != wantUser {
				t.Errorf("got messages %q, want the system prompt and the user message of Prompt", got)
			}
		})
	}
}

func TestLLMRole(t *testing.T) {
	role := llmRole()
	roletest.SamplingParameters(t, role)
	roletest.Failures(t, role)
	roletest.ModelFallback(t, role)
	roletest.PromptGolden(t, role, "llm_prompt.golden")
}

func TestSchemaCategories(t *testing.T) {
	var s struct {
		Properties struct {
			GapItems struct {
				Items struct {
					Properties struct {
						Category struct {
							Enum []string `json:"enum"`
						} `json:"category"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"gap_items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema().Schema, &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(data.GapCategories(), s.Properties.GapItems.Items.Properties.Category.Enum); diff != "" {
		t.Errorf("category enum differs from data.GapCategories() (-want +got):\n%s", diff)
	}
}

// TestLLMNoRepair: WithNoRepair (and Spec.NoRepair) records an unusable
// answer after one request: no verdict (insufficient, no gap items) and
// the parse error.
func TestLLMNoRepair(t *testing.T) {
	for _, open := range []struct {
		name string
		new  func(c llm.Chatter) Judge
	}{
		{"WithNoRepair", func(c llm.Chatter) Judge { return NewLLM(c, "judge-model", WithNoRepair()) }},
		{"Spec.NoRepair", func(c llm.Chatter) Judge {
			j, err := Open(Spec{Kind: "llm", Model: "judge-model", NoRepair: true}, func(string, string) (llm.Chatter, error) { return c, nil })
			if err != nil {
				t.Fatal(err)
			}
			return j
		}},
	} {
		t.Run(open.name, func(t *testing.T) {
			s := scripted(t, `{"sufficient": "yes", "gap_items": []}`, sufficientAnswer)
			got, err := open.new(client(t, s.URL(), "judge-model")).Judge(context.Background(), promptQuestion, promptContext())
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("got %d requests, want 1", n)
			}
			if got.ParseError == "" || got.Repaired || got.Verdict.Sufficient || len(got.Verdict.GapItems) != 0 {
				t.Errorf("got %+v, want an insufficient verdict with no gaps and the parse error, not repaired", got)
			}
		})
	}
}
