package eval

import (
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
)

// JudgeTraining says which questions the benchmarked judge was trained on,
// as its hand-back (judge.Handback's TrainQuestions and ValQuestions, from
// distill filter's split) records them.
type JudgeTraining struct {
	// Source names where they come from (the hand-back's model.json).
	Source string
	// Questions are the ids of its training and validation questions;
	// Known is false when the hand-back does not record them.
	Questions []string
	Known     bool
}

// Leakage is what a report says about the benchmark's questions and the
// judge's training questions.
type Leakage struct {
	Source string `json:"source"`
	// Known is false when the judge's training questions are not
	// recorded: the overlap could not be checked.
	Known             bool `json:"known"`
	TrainingQuestions int  `json:"training_questions"`
	// Questions is the number of the benchmark's questions and Overlap
	// how many of them the judge was trained or validated on; IDs lists
	// the first of them.
	Questions int      `json:"questions"`
	Overlap   int      `json:"overlap"`
	IDs       []string `json:"ids,omitempty"`
}

// maxLeakedIDs is how many overlapping ids a Leakage lists.
const maxLeakedIDs = 20

// leakage sets the benchmark's question ids against the judge's training
// questions (the first maxLeakedIDs overlapping ids listed in order); nil
// without a trained judge.
func (t *JudgeTraining) leakage(ids iter.Seq[string]) *Leakage {
	if t == nil {
		return nil
	}
	l := &Leakage{Source: t.Source, Known: t.Known}
	var trained map[string]bool
	if t.Known {
		trained = make(map[string]bool, len(t.Questions))
		for _, id := range t.Questions {
			trained[id] = true
		}
		l.TrainingQuestions = len(trained)
	}
	// The ids listed are the first in order, so that a report does not
	// depend on the order the questions finished in: the smallest
	// maxLeakedIDs of the overlap, kept sorted as they come.
	for id := range ids {
		l.Questions++
		if !trained[id] {
			continue
		}
		l.Overlap++
		i, _ := slices.BinarySearch(l.IDs, id)
		if i < maxLeakedIDs {
			l.IDs = slices.Insert(l.IDs, i, id)
			l.IDs = l.IDs[:min(len(l.IDs), maxLeakedIDs)]
		}
	}
	return l
}

// warn logs what l says, loudly when the questions overlap, naming the
// questions withIDs (once a run: they may be thousands).
func (l *Leakage) warn(log *slog.Logger, when string, withIDs bool) {
	switch {
	case l == nil:
	case !l.Known:
		log.Warn("the trained judge's hand-back does not record its training questions: the benchmark cannot check that it measures the judge on unseen questions",
			"source", l.Source)
	case l.Overlap > 0:
		attrs := []any{"when", when, "overlap", l.Overlap, "questions", l.Questions, "training_questions", l.TrainingQuestions, "source", l.Source}
		if withIDs {
			attrs = append(attrs, "ids", strings.Join(l.IDs, ","))
		}
		log.Warn("LEAKAGE: the benchmark's questions include questions the judge was trained on; its numbers overstate the judge", attrs...)
	}
}

// words is the warning report.md opens with, empty when there is nothing
// to say.
func (l *Leakage) words() string {
	switch {
	case l == nil:
		return ""
	case !l.Known:
		return fmt.Sprintf("> **Warning: not checked for leakage.** The trained judge's hand-back (%s) does not record the questions it was trained on, "+
			"so this benchmark cannot tell whether it measures the judge on questions it has seen.\n\n", l.Source)
	case l.Overlap == 0:
		return ""
	}
	more := ""
	if l.Overlap > len(l.IDs) {
		more = fmt.Sprintf(", ... (%d in all)", l.Overlap)
	}
	return fmt.Sprintf("> **WARNING: LEAKAGE.** %d of the %d questions of this benchmark were used to train or validate the judge "+
		"(its training split, recorded in %s): the numbers below overstate it. Benchmark it on held-out questions. Overlapping ids: %s%s.\n\n",
		l.Overlap, l.Questions, l.Source, strings.Join(l.IDs, ", "), more)
}
