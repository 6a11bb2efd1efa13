package runner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/distill-rag/distill/data"
)

// tally counts the rows of an output, question by question, as they stream
// past, and checks that each question appears once: its rows contiguous,
// its last row final (or a failure). Memory grows with the number of
// question ids only.
type tally struct {
	c OutputCounts
	// sources names where rows come from (parts, inputs), for errors.
	sources []string
	// seen maps each question id to the source it came from.
	seen map[string]int
	// The current question (when open): its id, rows, and its last row.
	open    bool
	cur     string
	curRows int64
	last    rowSummary
	// Models and templates seen, by role.
	judge, extractor, reader map[modelTemplate]int64
}

type rowSummary struct {
	final   bool
	failure string
	round   int32
}

type modelTemplate struct{ model, template string }

func newTally() *tally {
	return &tally{
		c:     OutputCounts{Rounds: map[int]int{}},
		seen:  make(map[string]int),
		judge: map[modelTemplate]int64{}, extractor: map[modelTemplate]int64{}, reader: map[modelTemplate]int64{},
	}
}

// source registers a source of rows and returns its number for add.
func (t *tally) source(name string) int {
	t.sources = append(t.sources, name)
	return len(t.sources) - 1
}

// add counts one row read from source src.
func (t *tally) add(src int, st *data.State) error {
	if st.QuestionID == "" {
		return fmt.Errorf("%s: a row has no question id", t.sources[src])
	}
	if !t.open || st.QuestionID != t.cur {
		if err := t.endQuestion(); err != nil {
			return err
		}
		if prev, dup := t.seen[st.QuestionID]; dup {
			return &twiceError{id: st.QuestionID, first: t.sources[prev], again: t.sources[src]}
		}
		t.seen[st.QuestionID] = src
		t.open, t.cur, t.curRows = true, st.QuestionID, 0
		t.c.Questions++
	}
	t.curRows++
	t.c.Rows++
	t.last = rowSummary{final: st.IsFinal, failure: st.Failure, round: st.Round}
	if st.Failure != "" {
		return nil // a failure row records no call
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
	return nil
}

// twiceError is a question found in two sources (parts, merged inputs).
type twiceError struct{ id, first, again string }

func (e *twiceError) Error() string {
	return fmt.Sprintf("question %s appears twice (in %s and %s)", e.id, e.first, e.again)
}

// endSource closes the current question at the end of a source: a
// question's rows never span two sources.
func (t *tally) endSource() error { return t.endQuestion() }

// endQuestion closes the current question, if one is open.
func (t *tally) endQuestion() error {
	if !t.open {
		return nil
	}
	t.open = false
	switch {
	case t.last.failure != "":
		t.c.Failed++
		if len(t.c.Failures) < maxFailures {
			t.c.Failures = append(t.c.Failures, Failure{QuestionID: t.cur, Reason: t.last.failure})
		}
	case t.last.final:
		t.c.Done++
		t.c.States += t.curRows
		t.c.Rounds[int(t.last.round)]++
	default:
		return fmt.Errorf("question %s (in %s) has no final state", t.cur, t.sources[t.seen[t.cur]])
	}
	return nil
}

// done closes the last question and returns the counts.
func (t *tally) done() (OutputCounts, error) {
	err := t.endQuestion()
	return t.c, err
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
