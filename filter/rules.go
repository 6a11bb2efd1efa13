package filter

import (
	"context"
	"fmt"
	"strings"

	"github.com/distill-rag/distill/data"
)

// Names of the rules, as dropped rows record them in DropRule and the
// summary counts them.
const (
	RuleTeacherFailed             = "teacher-failed"
	RuleLowAgreement              = "low-agreement"
	RuleSelfContradictory         = "self-contradictory"
	RuleContradictsStrongPositive = "contradicts-strong-positive"
	RuleContradictsStrongNegative = "contradicts-strong-negative"
	RuleEmptyGaps                 = "empty-gaps"
	RuleBalance                   = "balance"
)

// Rules returns the names of the rules in the order they apply.
func Rules() []string { return ruleNames[1:] }

// rule is a rule's number; ruleNone is a row that no rule dropped.
type rule uint8

const (
	ruleNone rule = iota
	ruleTeacherFailed
	ruleLowAgreement
	ruleSelfContradictory
	ruleContradictsStrongPositive
	ruleContradictsStrongNegative
	ruleEmptyGaps
	ruleBalance
	numRules
)

var ruleNames = []string{
	ruleNone:                      "",
	ruleTeacherFailed:             RuleTeacherFailed,
	ruleLowAgreement:              RuleLowAgreement,
	ruleSelfContradictory:         RuleSelfContradictory,
	ruleContradictsStrongPositive: RuleContradictsStrongPositive,
	ruleContradictsStrongNegative: RuleContradictsStrongNegative,
	ruleEmptyGaps:                 RuleEmptyGaps,
	ruleBalance:                   RuleBalance,
}

func (r rule) String() string { return ruleNames[r] }

// normalized reports whether a row dropped by r went through normalisation
// first: every row that passed the rules before it (kept rows, and rows
// dropped by empty-gaps or balance).
func (r rule) normalized() bool { return r == ruleNone || r >= ruleEmptyGaps }

// strength is data.Label.TruthStrength as a number.
type strength uint8

const (
	neither strength = iota
	strongPositive
	strongNegative
)

func parseStrength(s string) strength {
	switch s {
	case data.StrongPositive.String():
		return strongPositive
	case data.StrongNegative.String():
		return strongNegative
	}
	return neither
}

// facts is what the rules look at in a row; the filter keeps them in
// memory for every row of the input, between its two passes.
type facts struct {
	q         int32 // index of the question id in the sorted ids
	round     int32
	agreement float64
	strength  strength
	failed    bool
	// contradiction: a sample contradicted itself.
	contradiction bool
	sufficient    bool
	// noGaps: an insufficient verdict with no gap items (normalisation
	// never empties a list of gap items, so this holds after it too).
	noGaps bool
}

// scanRow is what the first pass reads of a label (data.Label): the
// columns named here, by the same names, for the rules and the summary.
// The others, most of a labels file (the state's context and evidence,
// the samples' outputs, the gap items' text), are neither read nor
// decoded; of the samples and the gap items one column each is read, for
// their number.
type scanRow struct {
	QuestionID    string  `parquet:"question_id"`
	Round         int32   `parquet:"round"`
	TruthComplete bool    `parquet:"truth_complete"`
	TruthStrength string  `parquet:"truth_strength"`
	Teacher       string  `parquet:"teacher"`
	TeacherModel  string  `parquet:"teacher_model"`
	Sufficient    bool    `parquet:"sufficient"`
	Agreement     float64 `parquet:"agreement"`
	Contradiction bool    `parquet:"contradiction"`
	Failure       string  `parquet:"failure"`
	Samples       []struct {
		Sample int32 `parquet:"sample"`
	} `parquet:"samples,list"`
	GapItems []struct {
		Category string `parquet:"category"`
	} `parquet:"gap_items,list"`
}

func factsOf(l *scanRow) facts {
	return facts{
		round:         l.Round,
		agreement:     l.Agreement,
		strength:      parseStrength(l.TruthStrength),
		failed:        l.Failure != "",
		contradiction: l.Contradiction,
		sufficient:    l.Sufficient,
		noGaps:        !l.Sufficient && len(l.GapItems) == 0,
	}
}

// agreementSlack absorbs the rounding of agreements computed as k/n, so that
// a threshold of 0.67 keeps 2/3.
const agreementSlack = 1e-9

// rules are the settings of rules 1 to 6.
type rules struct {
	minAgreement          float64
	dropSelfContradictory bool
	keepEmptyGaps         bool
}

// apply returns the first of rules 1 to 6 that drops a row, ruleNone if
// none does.
func (rs rules) apply(f facts) rule {
	switch {
	case f.failed:
		return ruleTeacherFailed
	case f.agreement < rs.minAgreement-agreementSlack:
		return ruleLowAgreement
	case rs.dropSelfContradictory && f.contradiction:
		return ruleSelfContradictory
	case f.strength == strongPositive && !f.sufficient:
		return ruleContradictsStrongPositive
	case f.strength == strongNegative && f.sufficient:
		return ruleContradictsStrongNegative
	case f.noGaps && !rs.keepEmptyGaps:
		return ruleEmptyGaps
	}
	return ruleNone
}

// reason says in a sentence why rule r dropped l; bal describes the
// balancing of train, for ruleBalance.
func (rs rules) reason(r rule, l *data.Label, bal balance) string {
	switch r {
	case ruleTeacherFailed:
		return "teacher failed: " + l.Failure
	case ruleLowAgreement:
		got, want := fmt.Sprintf("%.2f", l.Agreement), fmt.Sprintf("%.2f", rs.minAgreement)
		if got == want {
			got, want = fmt.Sprintf("%.4g", l.Agreement), fmt.Sprintf("%.4g", rs.minAgreement)
		}
		return fmt.Sprintf("agreement %s below %s (%d of %d samples for the majority verdict)",
			got, want, majorityVotes(l), len(l.Samples))
	case ruleSelfContradictory:
		if len(l.Contradictions) == 0 {
			return "a sample contradicted itself"
		}
		return "a sample contradicted itself: " + strings.Join(l.Contradictions, "; ")
	case ruleContradictsStrongPositive:
		return fmt.Sprintf("teacher said insufficient but %d/%d gold titles are in the context and it states the answer",
			l.TruthTitlesFound, len(l.GoldTitles))
	case ruleContradictsStrongNegative:
		return fmt.Sprintf("teacher said sufficient but %d/%d gold titles are in the context and it does not state the answer",
			l.TruthTitlesFound, len(l.GoldTitles))
	case ruleEmptyGaps:
		return "teacher said insufficient but named no gap item"
	case ruleBalance:
		return fmt.Sprintf("train had %d %s and %d %s rows; %s rows downsampled to %d",
			bal.majority, className(bal.majoritySufficient), bal.minority, className(!bal.majoritySufficient),
			className(bal.majoritySufficient), bal.kept)
	}
	return ""
}

func majorityVotes(l *data.Label) int32 { return max(l.SufficientVotes, l.Votes-l.SufficientVotes) }

func className(sufficient bool) string {
	if sufficient {
		return "sufficient"
	}
	return "insufficient"
}

// answerTarget is the target given to gap items that have none.
const answerTarget = "Answer"

// normalize applies the reference normalisation to the verdict of l, in
// place, and counts what it changed: the gap items of a sufficient verdict
// are cleared; the others get their category normalised and an empty
// target replaced by "Answer", and repeats of an earlier item
// (data.GapKey) are removed, GapSupport following GapItems.
func normalize(l *data.Label) Normalization {
	n := Normalization{Rows: 1}
	if l.Sufficient {
		if len(l.GapItems) > 0 || len(l.GapSupport) > 0 {
			n.GapsCleared = 1
		}
		l.GapItems, l.GapSupport = []data.GapItem{}, []int32{}
		return n
	}
	aligned := len(l.GapSupport) == len(l.GapItems)
	items := make([]data.GapItem, 0, len(l.GapItems))
	var support []int32
	if aligned {
		support = make([]int32, 0, len(l.GapItems))
	}
	seen := make(map[data.GapKey]bool, len(l.GapItems))
	for i, g := range l.GapItems {
		c := data.NormalizeCategory(g.Category)
		categoryChanged := c != g.Category
		g.Category = c
		targetFilled := strings.TrimSpace(g.Target) == ""
		if targetFilled {
			g.Target = answerTarget
		}
		k := g.Key()
		if seen[k] {
			n.DuplicatesRemoved++
			continue
		}
		seen[k] = true
		if categoryChanged {
			n.CategoriesChanged++
		}
		if targetFilled {
			n.TargetsFilled++
		}
		items = append(items, g)
		if aligned {
			support = append(support, l.GapSupport[i])
		}
	}
	l.GapItems = items
	if aligned {
		l.GapSupport = support
	}
	return n
}

// truthRow is what referenceStrengths reads of a label.
type truthRow struct {
	QuestionID string   `parquet:"question_id"`
	Round      int32    `parquet:"round"`
	Context    string   `parquet:"context"`
	GoldTitles []string `parquet:"gold_titles,list"`
	Answers    []string `parquet:"answers,list"`
}

// referenceStrengths classifies every label of the inputs by the authors'
// retrieval truth (data.ReferenceStrength). It is a pass of its own, so
// that the default filter never reads the labels' contexts.
func referenceStrengths(ctx context.Context, paths []string) (map[data.StateKey]strength, error) {
	out := make(map[data.StateKey]strength)
	for _, path := range paths {
		err := data.EachRow(ctx, path, data.KindLabels, func(rows []truthRow) error {
			for _, r := range rows {
				out[data.StateKey{QuestionID: r.QuestionID, Round: r.Round}] = parseStrength(data.ReferenceStrength(r.GoldTitles, r.Answers, r.Context).String())
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
