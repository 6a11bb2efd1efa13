package rollout

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/roletest"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// scripted starts a server that answers with answers in turn, and client
// returns a real model client for a server.
var (
	scripted = llmtest.Scripted
	client   = roletest.Client
)

func TestLLMJudgeLoopFallback(t *testing.T) {
	// What the loop makes of an unusable verdict of the LLM judge:
	// insufficient, no gaps, the failure recorded and counted.
	s := scripted(t, "I cannot tell.")
	w := synth.Sample()
	roles := Roles{
		Judge:     judge.NewLLM(client(t, s.URL(), "judge-model"), "judge-model"),
		Extractor: LexicalExtractor{},
		Reader:    LexicalReader{},
		Retriever: &fakeRetriever{corpus: w.Passages[:20]},
	}
	tr, err := Run(context.Background(), w.Questions[0], roles, Options{MaxRetrievals: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.Counts.JudgeParseFailures, 2; got != want {
		t.Errorf("got %d judge parse failures, want %d", got, want)
	}
	for _, st := range tr.States {
		if st.Sufficient || len(st.GapItems) != 0 || st.JudgeParseError == "" || st.JudgeOutput != "I cannot tell." {
			t.Errorf("round %d: got sufficient %v, gaps %v, parse error %q, output %q; want an insufficient verdict without gaps and the failure recorded",
				st.Round, st.Sufficient, st.GapItems, st.JudgeParseError, st.JudgeOutput)
		}
	}
}

func TestLLMExtractor(t *testing.T) {
	tests := []struct {
		name           string
		answers        []string
		want           []int
		wantParseError string
	}{
		{name: "ids", answers: []string{`{"evidence_global_ids": [2, 4]}`}, want: []int{2, 4}},
		{name: "ids as given, unchecked", answers: []string{`{"evidence_global_ids": [2, 2, 99, 0, -1, 1, 3, 4, 5]}`}, want: []int{2, 2, 99, 0, -1, 1, 3, 4, 5}},
		{name: "empty list", answers: []string{`{"evidence_global_ids": []}`}, want: []int{}},
		{name: "null", answers: []string{`{"evidence_global_ids": null}`}, want: []int{}},
		{name: "object in prose", answers: []string{`Sentences 2 and 4: {"evidence_global_ids": [2, 4]}`}, want: []int{2, 4}},
		{name: "malformed, then valid", answers: []string{`{"evidence_global_ids": [2, 4`, `{"evidence_global_ids": [2]}`}, want: []int{2}},
		{name: "malformed twice", answers: []string{"[2] and [4]", `{"evidence_global_ids": [2,`}, wantParseError: "no JSON object"},
		{name: "strings twice", answers: []string{`{"evidence_global_ids": ["2", "4"]}`}, wantParseError: "cannot unmarshal string"},
		{name: "fractions twice", answers: []string{`{"evidence_global_ids": [2.5]}`}, wantParseError: "cannot unmarshal number"},
		{name: "member missing twice", answers: []string{`{"ids": [2]}`}, wantParseError: `member "evidence_global_ids" is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, tt.answers...)
			x := NewLLMExtractor(client(t, s.URL(), "extractor-model"), "configured-extractor")
			gaps, sentences := promptGaps(), promptSentences()
			got, err := x.Extract(context.Background(), promptQuestion, gaps, sentences, 3)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			reqs := s.Requests()
			roletest.Repair(t, reqs, tt.answers, tt.wantParseError, got.Call, "extractor-model", ExtractorTemplateHash)
			if diff := cmp.Diff(tt.want, got.IDs); diff != "" {
				t.Errorf("ids differ (-want +got):\n%s", diff)
			}
			wantUser := ExtractorPrompt(promptQuestion, gaps, sentences, 3).User
			if got := reqs[0].Messages; len(got) != 2 || got[1].Content != wantUser {
				t.Errorf("got messages %q, want the system prompt and the user message of ExtractorPrompt", got)
			}
		})
	}
}

func TestLLMExtractorNothingToPointAt(t *testing.T) {
	s := scripted(t, `{"evidence_global_ids": [1]}`)
	x := NewLLMExtractor(client(t, s.URL(), "extractor-model"), "configured-extractor")
	for _, tt := range []struct {
		name      string
		sentences []Numbered
		max       int
	}{
		{"no sentences", nil, 6},
		{"max zero", promptSentences(), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := x.Extract(context.Background(), promptQuestion, nil, tt.sentences, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			want := ExtractResult{IDs: []int{}, Call: data.Call{Model: "configured-extractor", TemplateHash: ExtractorTemplateHash}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result differs (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
}

func TestLLMReader(t *testing.T) {
	tests := []struct {
		name           string
		answers        []string // the model's answers in turn; a second one is the repair's
		want           string
		wantParseError string
	}{
		{name: "answer", answers: []string{"Answer: Carrow"}, want: "Carrow"},
		{name: "reasoning, then answer with period", answers: []string{"Venn was born in Carrow.\nAnswer: Carrow."}, want: "Carrow"},
		{name: "markdown and quotes", answers: []string{`**Answer:** "Carrow"`}, want: "Carrow"},
		{name: "answer is", answers: []string{"The answer is: Carrow."}, want: "Carrow"},
		{name: "no marker, repaired", answers: []string{"Carrow", "Answer: Carrow"}, want: "Carrow"},
		{name: "no marker twice", answers: []string{"Carrow", "It is Carrow"}, wantParseError: `no "Answer:"`},
		{name: "nothing after the marker twice", answers: []string{"Answer:", "Answer:"}, wantParseError: `nothing after the last "Answer:"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scripted(t, tt.answers...)
			r := NewLLMReader(client(t, s.URL(), "reader-model"), "configured-reader")
			c := promptContext()
			got, err := r.Answer(context.Background(), promptQuestion, c)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			reqs := s.Requests()
			if len(reqs) != len(tt.answers) {
				t.Fatalf("got %d requests, want %d", len(reqs), len(tt.answers))
			}
			last := tt.answers[len(tt.answers)-1]
			want := ReadResult{Answer: tt.want, Call: data.Call{Raw: last, Model: "reader-model", Repaired: len(tt.answers) == 2,
				TemplateHash: ReaderTemplateHash, Usage: roletest.Billed(reqs, tt.answers)}}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(data.Call{}, "ParseError")); diff != "" {
				t.Errorf("result differs (-want +got):\n%s", diff)
			}
			switch {
			case tt.wantParseError == "" && got.ParseError != "":
				t.Errorf("got parse error %q, want none", got.ParseError)
			case !strings.Contains(got.ParseError, tt.wantParseError):
				t.Errorf("got parse error %q, want one containing %q", got.ParseError, tt.wantParseError)
			}
			wantMsgs := []llmtest.Message{{Role: "system", Content: readerSystem}, {Role: "user", Content: ReaderPrompt(promptQuestion, c.Render()).User}}
			if diff := cmp.Diff(wantMsgs, reqs[0].Messages); diff != "" {
				t.Errorf("messages differ (-want +got):\n%s", diff)
			}
			if len(reqs) == 2 {
				repair := append(slices.Clone(wantMsgs), llmtest.Message{Role: "assistant", Content: tt.answers[0]}, llmtest.Message{Role: "user", Content: readerRepair})
				if diff := cmp.Diff(repair, reqs[1].Messages); diff != "" {
					t.Errorf("repair messages differ (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// llmRoles are the extractor and the reader as the checks of every
// model-backed role see them, run on the fixed prompt input.
func llmRoles() []roletest.Role[LLMOption] {
	return []roletest.Role[LLMOption]{
		{
			Name: "extractor", MaxTokens: DefaultExtractorMaxTokens, WithMaxTokens: WithMaxTokens, Answer: `{"evidence_global_ids": [2]}`,
			Schema: &extractorSchema, TemplateHash: ExtractorTemplateHash,
			Call: func(ctx context.Context, c llm.Chatter, opts ...LLMOption) (data.Call, error) {
				r, err := NewLLMExtractor(c, "extractor-model", opts...).Extract(ctx, promptQuestion, promptGaps(), promptSentences(), DefaultMaxEvidence)
				return r.Call, err
			},
		},
		{
			Name: "reader", MaxTokens: DefaultReaderMaxTokens, WithMaxTokens: WithMaxTokens, Answer: "Answer: Carrow",
			TemplateHash: ReaderTemplateHash,
			Call: func(ctx context.Context, c llm.Chatter, opts ...LLMOption) (data.Call, error) {
				r, err := NewLLMReader(c, "reader-model", opts...).Answer(ctx, promptQuestion, promptContext())
				return r.Call, err
			},
		},
	}
}

func TestLLMRoles(t *testing.T) {
	for _, role := range llmRoles() {
		roletest.SamplingParameters(t, role)
		roletest.Failures(t, role)
		roletest.ModelFallback(t, role)
		roletest.PromptGolden(t, role, "llm_"+role.Name+"_prompt.golden")
	}
}

func TestLLMReaderCutOff(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"reader-model","choices":[{"index":0,"message":{"role":"assistant","content":"Venn was born in a city that"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":128,"total_tokens":135}}`
		w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	got, err := NewLLMReader(client(t, ts.URL+"/v1", "reader-model"), "reader-model").Answer(context.Background(), promptQuestion, promptContext())
	if err != nil {
		t.Fatal(err)
	}
	if got.Answer != "" || !strings.Contains(got.ParseError, "cut off at the token limit") {
		t.Errorf("got answer %q and parse error %q, want no answer and a parse error saying the reply was cut off", got.Answer, got.ParseError)
	}
}

// TestLLMRolesEndToEnd runs the loop with the three model-backed roles on
// the sample questions and a BM25 index, against a server whose answers
// are deterministic: the judge asks for more twice, then calls the
// evidence sufficient; the extractor points at sentences 1, 2, 3 and 2
// again; the reader answers "x".
func TestLLMRolesEndToEnd(t *testing.T) {
	const (
		judgeModel, extractorModel, readerModel = "judge-model", "extractor-model", "reader-model"
		extractorAnswer                         = `{"evidence_global_ids": [1, 2, 3, 2]}`
		readerAnswer                            = "Answer: x."
	)
	gap := data.GapItem{Category: data.CategoryBridgeEntity, Target: "next", Slot: "entity", Description: "Find the next entity."}
	gapJSON, err := json.Marshal(data.Verdict{GapItems: []data.GapItem{gap}})
	if err != nil {
		t.Fatal(err)
	}
	insufficientAnswer, sufficientAnswer := string(gapJSON), `{"sufficient": true, "gap_items": []}`

	var mu sync.Mutex
	judgeCalls := make(map[string]int)          // by question
	judgeUsers := make(map[string][]string)     // the judge's user messages, by question
	extractorUsers := make(map[string][]string) // the extractor's
	s := llmtest.NewServer(llmtest.Options{Answer: func(r llmtest.Request) string {
		user := r.Messages[1].Content
		line, _, _ := strings.Cut(user, "\n")
		q := strings.TrimPrefix(line, "Question: ")
		mu.Lock()
		defer mu.Unlock()
		switch r.Model {
		case judgeModel:
			judgeCalls[q]++
			judgeUsers[q] = append(judgeUsers[q], user)
			if judgeCalls[q] <= 2 {
				return insufficientAnswer
			}
			return sufficientAnswer
		case extractorModel:
			extractorUsers[q] = append(extractorUsers[q], user)
			return extractorAnswer
		default:
			return readerAnswer
		}
	}})
	t.Cleanup(s.Close)

	w := synth.Sample()
	qs := w.Questions
	roles := Roles{
		Judge:     judge.NewLLM(client(t, s.URL(), judgeModel), "unused"),
		Extractor: NewLLMExtractor(client(t, s.URL(), extractorModel), "unused"),
		Reader:    NewLLMReader(client(t, s.URL(), readerModel), "unused"),
		Retriever: buildIndex(t, w.Passages),
	}
	trs := runAll(t, qs, roles, Options{})
	measure(t, qs, trs, byID(w.Passages)) // checks every trajectory and its provenance

	for i, tr := range trs {
		q := qs[i]
		key := data.OneLine(q.Text)
		if got := len(tr.States); got != 3 {
			t.Fatalf("question %s: got %d states, want 3 (sufficient at the third judge call)", q.ID, got)
		}
		wantCounts := Counts{JudgeCalls: 3, Retrievals: 2, ExtractorCalls: 2, Documents: tr.Counts.Documents, Candidates: tr.Counts.Candidates,
			Chosen: 6, DroppedRepeated: 2, BlocksAdded: tr.Counts.BlocksAdded, BlocksSkipped: tr.Counts.BlocksSkipped}
		if diff := cmp.Diff(wantCounts, tr.Counts); diff != "" {
			t.Errorf("question %s: counts differ (-want +got):\n%s", q.ID, diff)
		}
		if tr.Answer != "x" {
			t.Errorf("question %s: got answer %q, want %q", q.ID, tr.Answer, "x")
		}
		var judgeUsage, extractorUsage data.Usage
		for r, st := range tr.States {
			wantJudge := insufficientAnswer
			if r == 2 {
				wantJudge = sufficientAnswer
			}
			if st.JudgeOutput != wantJudge || st.JudgeParseError != "" || st.JudgeModel != judgeModel || st.JudgeTemplate != judge.TemplateHash {
				t.Errorf("question %s round %d: got judge output %q, parse error %q, model %q, template %q; want %q, none, %q, %q",
					q.ID, r, st.JudgeOutput, st.JudgeParseError, st.JudgeModel, st.JudgeTemplate, wantJudge, judgeModel, judge.TemplateHash)
			}
			if st.JudgePromptTokens == 0 || st.JudgeCompletionTokens == 0 {
				t.Errorf("question %s round %d: got judge tokens %d + %d, want both counted", q.ID, r, st.JudgePromptTokens, st.JudgeCompletionTokens)
			}
			judgeUsage = judgeUsage.Add(data.Usage{PromptTokens: st.JudgePromptTokens, CompletionTokens: st.JudgeCompletionTokens})
			extractorUsage = extractorUsage.Add(data.Usage{PromptTokens: st.ExtractorPromptTokens, CompletionTokens: st.ExtractorCompletionTokens})
			// The judge saw exactly the recorded context, in the one rendering.
			mu.Lock()
			seen := judgeUsers[key]
			mu.Unlock()
			if want := judge.Prompt(q.Text, st.Context).User; r >= len(seen) || seen[r] != want {
				t.Errorf("question %s round %d: the judge was not shown the recorded context", q.ID, r)
			}
			if r == 0 {
				continue
			}
			if st.ExtractorOutput != extractorAnswer || st.ExtractorParseError != "" || st.ExtractorModel != extractorModel || st.ExtractorTemplate != ExtractorTemplateHash {
				t.Errorf("question %s round %d: got extractor output %q, parse error %q, model %q, template %q; want %q, none, %q, %q",
					q.ID, r, st.ExtractorOutput, st.ExtractorParseError, st.ExtractorModel, st.ExtractorTemplate, extractorAnswer, extractorModel, ExtractorTemplateHash)
			}
			if st.Candidates < 3 {
				t.Fatalf("question %s round %d: %d candidates, want at least 3 for this test", q.ID, r, st.Candidates)
			}
			wantIDs := struct{ Chosen, Dropped []int32 }{[]int32{1, 2, 3}, []int32{2}}
			if diff := cmp.Diff(wantIDs, struct{ Chosen, Dropped []int32 }{st.ChosenIDs, st.DroppedIDs}); diff != "" || st.DroppedRepeated != 1 || st.DroppedOutOfRange != 0 {
				t.Errorf("question %s round %d: got chosen %v, dropped %v (repeated %d, out of range %d); want [1 2 3], [2] (repeated 1)",
					q.ID, r, st.ChosenIDs, st.DroppedIDs, st.DroppedRepeated, st.DroppedOutOfRange)
			}
			mu.Lock()
			extractorSeen := extractorUsers[key]
			mu.Unlock()
			if len(extractorSeen) != 2 || !strings.Contains(extractorSeen[r-1], `{"category":"bridge_entity","target":"next","slot":"entity","description":"Find the next entity."}`) ||
				!strings.Contains(extractorSeen[r-1], "\n[1] (") {
				t.Errorf("question %s round %d: the extractor was not shown the gap item and the numbered sentences", q.ID, r)
			}
		}
		last := tr.States[2]
		if last.ReaderOutput != readerAnswer || last.ReaderParseError != "" || last.ReaderModel != readerModel || last.ReaderTemplate != ReaderTemplateHash || last.ReaderPromptTokens == 0 {
			t.Errorf("question %s: got reader output %q, parse error %q, model %q, template %q, prompt tokens %d; want %q, none, %q, %q, some",
				q.ID, last.ReaderOutput, last.ReaderParseError, last.ReaderModel, last.ReaderTemplate, last.ReaderPromptTokens, readerAnswer, readerModel, ReaderTemplateHash)
		}
		if judgeUsage != tr.JudgeUsage || extractorUsage != tr.ExtractorUsage || (data.Usage{PromptTokens: last.ReaderPromptTokens, CompletionTokens: last.ReaderCompletionTokens}) != tr.ReaderUsage {
			t.Errorf("question %s: usage of the rows (%+v, %+v) does not add up to the trajectory's (%+v, %+v)", q.ID, judgeUsage, extractorUsage, tr.JudgeUsage, tr.ExtractorUsage)
		}
	}
	c := s.Counts()
	if want := 6 * len(qs); c.Requests != want || c.OK != want {
		t.Errorf("got %d requests, %d answered, want %d and %d (3 judge, 2 extractor, 1 reader calls per question)", c.Requests, c.OK, want, want)
	}
}
