package rollout

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/judge"
)

// promptQuestion, promptContext, promptGaps and promptSentences are the
// fixed input of the prompt tests and golden files.
const promptQuestion = testkit.PromptQuestion

var promptContext = testkit.PromptContext

func promptGaps() []data.GapItem {
	return []data.GapItem{
		{Category: data.CategoryAttribute, Target: "Orla Venn", Slot: "birthplace city", Description: "Find the city where Orla Venn was born."},
		{Category: data.CategoryEvidenceSpan, Target: "Orla Venn", Slot: "born", Description: `A sentence stating "born in <city>" & the date.`},
		{Category: data.CategoryOther, Description: "Anything else about Orla Venn's early life."},
		{Category: data.CategoryRelation, Target: "shown only", Slot: "to the query", Description: "A fourth item the extractor does not see."},
	}
}

func promptSentences() []Numbered {
	docs := []struct {
		id, title string
		sentences []string
	}{
		{"d3", "Orla Venn", []string{"Orla Venn (1920 - 1988) was a film director.", "Venn was born in Carrow, a port city of Greselle.", "She moved to Tarsk in 1945."}},
		{"d4", "Carrow", []string{"Carrow is the second city of Greselle."}},
	}
	var out []Numbered
	for _, d := range docs {
		for i, s := range d.sentences {
			e := data.Evidence{DocID: d.id, Title: d.title, Index: int32(i), Text: s}
			out = append(out, Numbered{ID: len(out) + 1, Evidence: e, Line: NumberedLine(len(out)+1, e)})
		}
	}
	return out
}

func TestExtractorPrompt(t *testing.T) {
	sentences := promptSentences()
	noLines := make([]Numbered, len(sentences))
	for i, n := range sentences {
		n.Line = ""
		noLines[i] = n
	}
	tests := []struct {
		name      string
		question  string
		gaps      []data.GapItem
		sentences []Numbered
		max       int
		// want are the parts of the user message between its fixed texts.
		wantQuestion, wantGaps, wantSentences, wantMax string
	}{
		{
			name:          "three of four gaps, lines as given",
			question:      promptQuestion,
			gaps:          promptGaps(),
			sentences:     sentences,
			max:           6,
			wantQuestion:  promptQuestion,
			wantGaps:      `{"category":"attribute","target":"Orla Venn","slot":"birthplace city","description":"Find the city where Orla Venn was born."}` + "\n" + `{"category":"evidence_span","target":"Orla Venn","slot":"born","description":"A sentence stating \"born in <city>\" & the date."}` + "\n" + `{"category":"other","target":"","slot":"","description":"Anything else about Orla Venn's early life."}`,
			wantSentences: "[1] (Orla Venn | s#0) Orla Venn (1920 - 1988) was a film director.\n[2] (Orla Venn | s#1) Venn was born in Carrow, a port city of Greselle.\n[3] (Orla Venn | s#2) She moved to Tarsk in 1945.\n[4] (Carrow | s#0) Carrow is the second city of Greselle.",
			wantMax:       "6",
		},
		{
			name:          "no gaps, lines rendered, question on one line",
			question:      "  Where was\nOrla Venn born? ",
			sentences:     noLines[:2],
			max:           2,
			wantQuestion:  "Where was Orla Venn born?",
			wantGaps:      extractorNoGaps,
			wantSentences: "[1] (Orla Venn | s#0) Orla Venn (1920 - 1988) was a film director.\n[2] (Orla Venn | s#1) Venn was born in Carrow, a port city of Greselle.",
			wantMax:       "2",
		},
		{
			name:          "a gap with line breaks stays on one line",
			question:      "q",
			gaps:          []data.GapItem{{Category: "attribute", Target: "a\nb", Slot: "c", Description: "d"}},
			sentences:     sentences[3:],
			max:           1,
			wantQuestion:  "q",
			wantGaps:      `{"category":"attribute","target":"a\nb","slot":"c","description":"d"}`,
			wantSentences: "[4] (Carrow | s#0) Carrow is the second city of Greselle.",
			wantMax:       "1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ExtractorPrompt(tt.question, tt.gaps, tt.sentences, tt.max)
			if p.System != extractorSystem {
				t.Errorf("got system message %q, want the extractor's", p.System)
			}
			want := strings.NewReplacer("{question}", tt.wantQuestion, "{gaps}", tt.wantGaps, "{sentences}", tt.wantSentences, "{max}", tt.wantMax).Replace(extractorUser)
			if diff := cmp.Diff(want, p.User); diff != "" {
				t.Errorf("user message differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtractorPromptPlaceholdersInInput(t *testing.T) {
	// Text that looks like a placeholder is shown, not filled.
	p := ExtractorPrompt("What is {sentences}?", []data.GapItem{{Description: "{max}"}}, promptSentences()[:1], 3)
	if !strings.Contains(p.User, "Question: What is {sentences}?\n") || !strings.Contains(p.User, `"description":"{max}"`) {
		t.Errorf("got user message %q, want the question and gap text verbatim", p.User)
	}
}

func TestReaderPrompt(t *testing.T) {
	c := promptContext()
	tests := []struct {
		name, question, context string
		wantQuestion, wantEvid  string
	}{
		{"evidence", promptQuestion, c.Render(), promptQuestion, c.Render()},
		{"no evidence", "Who?\n", "", "Who?", readerNoEvidence},
		{"blank evidence", "Who?", " \n", "Who?", readerNoEvidence},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ReaderPrompt(tt.question, tt.context)
			want := data.Prompt{
				System: readerSystem,
				User:   strings.NewReplacer("{question}", tt.wantQuestion, "{evidence}", tt.wantEvid).Replace(readerUser),
			}
			if diff := cmp.Diff(want, p); diff != "" {
				t.Errorf("prompt differs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTemplateHashes(t *testing.T) {
	hashes := map[string]string{
		"judge":     judge.TemplateHash,
		"extractor": ExtractorTemplateHash,
		"reader":    ReaderTemplateHash,
	}
	seen := make(map[string]string)
	for role, h := range hashes {
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			t.Errorf("%s: got template hash %q, want 64 hex digits", role, h)
		}
		if other, ok := seen[h]; ok {
			t.Errorf("%s and %s: got the same template hash %s, want different ones", role, other, h)
		}
		seen[h] = role
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name, output, want string
		wantErr            bool
	}{
		{name: "plain", output: "Answer: Carrow", want: "Carrow"},
		{name: "final period", output: "Answer: Carrow.", want: "Carrow"},
		{name: "reasoning first", output: "Venn was born in Carrow.\nAnswer: Carrow", want: "Carrow"},
		{name: "last marker wins", output: "Answer: Tarsk\nWait, no.\nAnswer: Carrow", want: "Carrow"},
		{name: "any case", output: "FINAL ANSWER: yes", want: "yes"},
		{name: "markdown bold", output: "**Answer:** Carrow", want: "Carrow"},
		{name: "markdown around answer", output: "Answer: **Carrow**.", want: "Carrow"},
		{name: "code", output: "Answer: `42`", want: "42"},
		{name: "quoted", output: `Answer: "Moon Over Greselle".`, want: "Moon Over Greselle"},
		{name: "quoted with period inside", output: `Answer: "Carrow."`, want: "Carrow"},
		{name: "curly quotes", output: "Answer: \u201cCarrow\u201d", want: "Carrow"},
		{name: "single quotes", output: "Answer: 'Carrow'", want: "Carrow"},
		{name: "inner quotes kept", output: `Answer: "A" and "B"`, want: `"A" and "B"`},
		{name: "apostrophe kept", output: "Answer: Rock 'n' roll", want: "Rock 'n' roll"},
		{name: "ellipsis kept", output: "Answer: And Then...", want: "And Then..."},
		{name: "abbreviation loses its period", output: "Answer: Washington, D.C.", want: "Washington, D.C"},
		{name: "next line", output: "Answer:\n  Carrow\nbecause the evidence says so", want: "Carrow"},
		{name: "rest of the line only", output: "Answer: Carrow\nExplanation: see [Orla Venn].", want: "Carrow"},
		{name: "crlf", output: "Answer: Carrow\r\n", want: "Carrow"},
		{name: "answer is", output: "The answer is: Los Angeles.", want: "Los Angeles"},
		{name: "answer is, spaced", output: "The Answer  is :\tParis", want: "Paris"},
		{name: "answer is without colon", output: "The answer is Paris.", wantErr: true},
		{name: "answers is not a marker", output: "Answers: Paris", wantErr: true},
		{name: "no marker", output: "Carrow", wantErr: true},
		{name: "empty output", output: "", wantErr: true},
		{name: "nothing after marker", output: "The answer is below.\nAnswer:", wantErr: true},
		{name: "only decoration after marker", output: "Answer: **.**", wantErr: true},
		{name: "empty quotes", output: `Answer: ""`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer(tt.output)
			var aerr *AnswerError
			if tt.wantErr {
				if !errors.As(err, &aerr) || got != "" {
					t.Fatalf("got (%q, %v), want (\"\", an *AnswerError)", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got (%q, %v), want (%q, nil)", got, err, tt.want)
			}
		})
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		"Answer: Carrow", "**Answer:** \"Carrow\".", "x\nanswer:\n 'a'", "Answer: ...", "Answer:",
		"Answer: \u201c\u201d", "ANSWER: `*`", "no marker", "answer:answer:", "Answer: \"a\".\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, output string) {
		got, err := ParseAnswer(output)
		if err != nil {
			var aerr *AnswerError
			if !errors.As(err, &aerr) || got != "" {
				t.Fatalf("ParseAnswer(%q) = (%q, %v), want (\"\", an *AnswerError) on failure", output, got, err)
			}
			return
		}
		if got == "" || strings.Contains(got, "\n") || !strings.Contains(output, got) {
			t.Fatalf("ParseAnswer(%q) = %q, want a non-empty one-line substring", output, got)
		}
		if again, err := ParseAnswer("Answer: " + got); err != nil || again != got {
			t.Fatalf("ParseAnswer(%q) = (%q, %v), want (%q, nil): parsing is not idempotent", "Answer: "+got, again, err, got)
		}
	})
}
