package label

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
)

// NewLabel returns the label of an item before any sample: the state, its
// retrieval truth and the teacher's names.
func NewLabel(it Item, teacher, model, template string) data.Label {
	s, q := it.State, it.Question
	t := it.Truth()
	return data.Label{
		QuestionID: s.QuestionID, Dataset: s.Dataset, Round: s.Round, Question: s.Question,
		Context: s.Context, Evidence: s.Evidence, IsFinal: s.IsFinal,
		JudgeModel: s.JudgeModel, JudgeSufficient: s.Sufficient,
		GoldTitles: q.GoldTitles, Answers: q.Answers,
		TruthTitlesFound: int32(t.TitlesFound), TruthAnswerFound: t.AnswerFound, TruthComplete: t.Complete,
		TruthStrength: t.Strength.String(),
		Teacher:       teacher, TeacherModel: model, TeacherTemplate: template,
	}
}

// Aggregate sets the aggregate fields of l from its samples, as data.Label
// describes them: the majority verdict of the usable samples (a tie is
// insufficient), the agreement (majority votes over all samples), the gap
// items that more than half of the insufficient votes gave, the samples'
// contradictions, and Failure when no sample is usable.
func Aggregate(l *data.Label) {
	l.Sufficient, l.GapItems, l.GapSupport = false, []data.GapItem{}, []int32{}
	l.Votes, l.SufficientVotes, l.Agreement = 0, 0, 0
	l.Contradiction, l.Contradictions, l.Failure = false, nil, ""
	l.PromptTokens, l.CompletionTokens = 0, 0
	if len(l.Samples) == 0 {
		l.Failure = "no samples"
		return
	}
	var reasons []string
	for _, s := range l.Samples {
		l.PromptTokens += s.PromptTokens
		l.CompletionTokens += s.CompletionTokens
		if s.Contradiction != "" {
			l.Contradiction = true
			l.Contradictions = append(l.Contradictions, fmt.Sprintf("sample %d: %s", s.Sample, s.Contradiction))
		}
		switch {
		case s.Error != "":
			reasons = append(reasons, fmt.Sprintf("sample %d: %s", s.Sample, s.Error))
			continue
		case s.ParseError != "":
			reasons = append(reasons, fmt.Sprintf("sample %d: %s", s.Sample, s.ParseError))
			continue
		}
		l.Votes++
		if s.Sufficient {
			l.SufficientVotes++
		}
	}
	if l.Votes == 0 {
		l.Failure = "no usable sample: " + strings.Join(reasons, "; ")
		return
	}
	insufficient := l.Votes - l.SufficientVotes
	l.Sufficient = l.SufficientVotes > insufficient
	majority := max(l.SufficientVotes, insufficient)
	l.Agreement = float64(majority) / float64(len(l.Samples))
	if l.Sufficient {
		return
	}
	l.GapItems, l.GapSupport = recurringGaps(l.Samples, insufficient)
}

// recurringGaps returns the gap items that more than half of the n
// insufficient samples gave (each sample counted once per gap), matched on
// data.GapKey, the most supported first, then in order of first
// appearance; each is the first wording given.
func recurringGaps(samples []data.LabelSample, n int32) ([]data.GapItem, []int32) {
	type gap struct {
		item    data.GapItem
		support int32
		first   int
	}
	var order []data.GapKey
	gaps := make(map[data.GapKey]*gap)
	for _, s := range samples {
		if !s.Usable() || s.Sufficient {
			continue
		}
		seen := make(map[data.GapKey]bool, len(s.GapItems))
		for _, g := range s.GapItems {
			k := g.Key()
			if seen[k] {
				continue
			}
			seen[k] = true
			if e, ok := gaps[k]; ok {
				e.support++
				continue
			}
			gaps[k] = &gap{item: g, support: 1, first: len(order)}
			order = append(order, k)
		}
	}
	var kept []*gap
	for _, k := range order {
		if g := gaps[k]; 2*g.support > n {
			kept = append(kept, g)
		}
	}
	slices.SortStableFunc(kept, func(a, b *gap) int {
		return cmp.Or(cmp.Compare(b.support, a.support), cmp.Compare(a.first, b.first))
	})
	items, support := make([]data.GapItem, len(kept)), make([]int32, len(kept))
	for i, g := range kept {
		items[i], support[i] = g.item, g.support
	}
	return items, support
}
