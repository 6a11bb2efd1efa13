package rollout

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm/llmtest"
)

// TestReaderPromptRounds holds the reader's input under
// ReaderInputReference: the question, then each round's query and
// evidence, a round already in the context shown again.
func TestReaderPromptRounds(t *testing.T) {
	c := data.NewContext(data.LayoutReference)
	paris := data.Evidence{DocID: "d1", Title: "Paris", Text: "Paris is the capital."}
	c.StartRound("Who rules? Paris")
	c.Append([]data.Evidence{paris})
	c.StartRound("Who rules?\nagain")
	c.Append([]data.Evidence{paris})
	c.StartRound("Who rules? nothing")
	got := ReaderPromptRounds("Who rules\nFrance?", c.Rounds()).User
	want := "Question: Who rules France?\n\n" +
		"Search 1: Who rules? Paris\n[Paris] EVIDENCE:\n- Paris is the capital.\n\n" +
		"Search 2: Who rules? again\n[Paris] EVIDENCE:\n- Paris is the capital.\n\n" +
		"Search 3: Who rules? nothing\n(no evidence)\n\n" +
		`Reply with the two lines "Answer: ..." and "Rationale: ..." only.`
	if got != want {
		t.Errorf("prompt:\n%s\nwant\n%s", got, want)
	}
	if got := ReaderPromptRounds("Q?", nil).User; got != "Question: Q?\n\n(no evidence)\n\n"+`Reply with the two lines "Answer: ..." and "Rationale: ..." only.` {
		t.Errorf("no rounds: %q", got)
	}
}

func TestParseRoundsAnswer(t *testing.T) {
	for _, tt := range []struct {
		out, want string
		ok        bool
	}{
		{"Answer: Carrow\nRationale: Venn was born there.", "Carrow", true},
		{"Answer: Carrow. Rationale: on one line", "Carrow.", true},
		{"Thinking...\nAnswer:  New York City \n\nRationale: x\nAnswer: other\nRationale: y", "New York City", true},
		{"Answer:\nRationale: none", "", true},
		{"Answer: Carrow", AnswerNotFound, false},
		{"Rationale: x Answer: Carrow", AnswerNotFound, false},
		{"answer: Carrow\nrationale: x", AnswerNotFound, false},
		{"", AnswerNotFound, false},
	} {
		got, ok := ParseRoundsAnswer(tt.out)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRoundsAnswer(%q) = %q, %v; want %q, %v", tt.out, got, ok, tt.want, tt.ok)
		}
	}
}

// TestLLMReaderRounds checks that the reader under ReaderInputReference
// sends ReaderPromptRounds, asks once, and reads an unusable reply as
// AnswerNotFound with a parse error.
func TestLLMReaderRounds(t *testing.T) {
	c := data.NewContext(data.LayoutReference)
	c.StartRound("q1")
	c.Append([]data.Evidence{{DocID: "d1", Title: "Carrow", Text: "Venn was born in Carrow."}})
	for _, tt := range []struct {
		reply, want string
		parseError  bool
	}{
		{"Answer: Carrow\nRationale: the evidence says so.", "Carrow", false},
		{"Carrow", AnswerNotFound, true},
	} {
		s := scripted(t, tt.reply)
		r := NewLLMReader(client(t, s.URL(), "reader-model"), "reader-model", WithReaderInput(ReaderInputReference))
		got, err := r.Answer(context.Background(), "Where was Venn born?", c)
		if err != nil {
			t.Fatal(err)
		}
		if got.Answer != tt.want || (got.ParseError != "") != tt.parseError || got.TemplateHash != ReaderRoundsTemplateHash || got.Repaired {
			t.Errorf("reply %q: answer %q, parse error %q, template %s, repaired %v; want %q, a parse error %v, the rounds template, no repair",
				tt.reply, got.Answer, got.ParseError, got.TemplateHash, got.Repaired, tt.want, tt.parseError)
		}
		reqs := s.Requests()
		if len(reqs) != 1 {
			t.Fatalf("reply %q: %d requests, want 1 (no second ask)", tt.reply, len(reqs))
		}
		p := ReaderPromptRounds("Where was Venn born?", c.Rounds())
		want := []llmtest.Message{{Role: "system", Content: p.System}, {Role: "user", Content: p.User}}
		if diff := cmp.Diff(want, reqs[0].Messages); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
	}
}

func TestParseReaderInput(t *testing.T) {
	for in, want := range map[string]ReaderInput{"": ReaderInputDistill, "distill": ReaderInputDistill, "reference": ReaderInputReference} {
		if got, err := ParseReaderInput(in); got != want || err != nil {
			t.Errorf("ParseReaderInput(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseReaderInput("rounds"); err == nil {
		t.Error("ParseReaderInput(rounds): no error")
	}
}
