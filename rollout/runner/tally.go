package runner

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/distill-rag/distill/data"
)

// tally counts the rows of an output, question by question, as the engine
// streams them past (stage.Layout.Count), and checks that each question
// ends with a final row (or is one failure row). The engine checks that no
// question appears twice.
type tally struct {
	c OutputCounts
	// Models and templates seen, by role.
	judge, extractor, reader map[modelTemplate]int64
}

type modelTemplate struct{ model, template string }

func newTally() *tally {
	return &tally{
		c:     OutputCounts{Rounds: map[int]int{}},
		judge: map[modelTemplate]int64{}, extractor: map[modelTemplate]int64{}, reader: map[modelTemplate]int64{},
	}
}

// question counts the rows of one question.
func (t *tally) question(rows []data.State) error {
	last := rows[len(rows)-1]
	if last.QuestionID == "" {
		return errors.New("a row has no question id")
	}
	t.c.Questions++
	t.c.Rows += int64(len(rows))
	for i := range rows {
		t.add(&rows[i])
	}
	switch {
	case last.Failure != "":
		t.c.Failed++
		if len(t.c.Failures) < maxFailures {
			t.c.Failures = append(t.c.Failures, Failure{QuestionID: last.QuestionID, Reason: last.Failure})
		}
	case last.IsFinal:
		t.c.Done++
		t.c.States += int64(len(rows))
		t.c.Rounds[int(last.Round)]++
	default:
		return fmt.Errorf("question %s has no final state", last.QuestionID)
	}
	return nil
}

// add counts the calls that one row records.
func (t *tally) add(st *data.State) {
	if st.Failure != "" {
		return // a failure row records no call
	}
	if st.JudgeParseError != "" {
		t.c.JudgeParseFailures++
	}
	if st.ExtractorParseError != "" {
		t.c.ExtractorParseFailures++
	}
	if st.ReaderParseError != "" {
		t.c.ReaderParseFailures++
	}
	if st.Override {
		t.c.Overrides++
	}
	t.c.JudgeRepairs += b2i(st.JudgeRepaired)
	t.c.ExtractorRepairs += b2i(st.ExtractorRepaired)
	t.c.ReaderRepairs += b2i(st.ReaderRepaired)
	t.c.CandidatesTrimmed += int64(st.CandidatesTrimmed)
	t.c.EvidenceTrimmed += int64(st.EvidenceTrimmed)
	tk := &t.c.Tokens
	tk.JudgePrompt += st.JudgePromptTokens
	tk.JudgeCompletion += st.JudgeCompletionTokens
	tk.ExtractorPrompt += st.ExtractorPromptTokens
	tk.ExtractorCompletion += st.ExtractorCompletionTokens
	tk.ReaderPrompt += st.ReaderPromptTokens
	tk.ReaderCompletion += st.ReaderCompletionTokens
	t.judge[modelTemplate{st.JudgeModel, st.JudgeTemplate}]++
	if st.ExtractorModel != "" || st.ExtractorTemplate != "" {
		t.extractor[modelTemplate{st.ExtractorModel, st.ExtractorTemplate}]++
	}
	if st.IsFinal {
		t.reader[modelTemplate{st.ReaderModel, st.ReaderTemplate}]++
	}
}

// seen fills in what the rows record of each role's models and templates.
func (t *tally) seen(r *Roles) {
	r.Judge.Seen, r.Extractor.Seen, r.Reader.Seen = seenOf(t.judge), seenOf(t.extractor), seenOf(t.reader)
}

// seenOf lists a role's models and templates, most rows first.
func seenOf(m map[modelTemplate]int64) []Seen {
	out := make([]Seen, 0, len(m))
	for k, n := range m {
		out = append(out, Seen{Model: k.model, Template: k.template, Rows: n})
	}
	slices.SortFunc(out, func(a, b Seen) int {
		return cmp.Or(cmp.Compare(b.Rows, a.Rows), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Template, b.Template))
	})
	return out
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
