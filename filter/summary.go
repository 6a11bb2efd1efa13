package filter

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/distill-rag/distill/internal/stage"
)

// Summary is the content of filter.json: what Run read, with which
// settings, and where each row went.
type Summary struct {
	// Inputs are the labels files read, in order, with their rows; Output
	// the directory written.
	Inputs  []Input     `json:"inputs"`
	Output  string      `json:"output"`
	Options UsedOptions `json:"options"`
	Rows    Rows        `json:"rows"`
	// Dropped counts the rows each rule dropped, every rule in the order
	// they apply (Rules), zero included.
	Dropped   []RuleCount `json:"dropped"`
	Questions Questions   `json:"questions"`
	Classes   Classes     `json:"classes"`
	// GapCategories counts the gap items of the kept rows (train and val)
	// by category, after normalisation, every category of
	// data.GapCategories in its order.
	GapCategories []CategoryCount `json:"gap_categories"`
	Normalization Normalization   `json:"normalization"`
	// Agreement is the histogram of the agreement of the input rows,
	// rounded to 2 decimals, in increasing order.
	Agreement []AgreementBucket `json:"agreement_histogram"`
	// Teachers lists the teachers and models of the input rows, sorted.
	Teachers []Teacher      `json:"teachers"`
	Truth    TruthAgreement `json:"truth"`
}

// Input is one labels file that a run read and how many rows it held.
type Input struct {
	File string `json:"file"`
	Rows int64  `json:"rows"`
}

// UsedOptions are the settings of a run, defaults filled in.
type UsedOptions struct {
	// MinAgreement is the threshold applied; MinAgreementDefault says it
	// was chosen from MaxSamples, the most samples of an input row.
	MinAgreement          float64 `json:"min_agreement"`
	MinAgreementDefault   bool    `json:"min_agreement_default"`
	MaxSamples            int     `json:"max_samples"`
	KeepEmptyGaps         bool    `json:"keep_empty_gaps"`
	DropSelfContradictory bool    `json:"drop_self_contradictory"`
	Balance               bool    `json:"balance"`
	BalanceRatio          float64 `json:"balance_ratio,omitempty"`
	BalanceUpsample       bool    `json:"balance_upsample,omitempty"`
	BalanceHardOnly       bool    `json:"balance_hard_only,omitempty"`
	BalancePerRound       bool    `json:"balance_per_round,omitempty"`
	ValFraction           float64 `json:"val_fraction"`
	ValByRow              bool    `json:"val_by_row,omitempty"`
	ReferenceTruth        bool    `json:"reference_truth,omitempty"`
	Seed                  int64   `json:"seed"`
}

// Rows counts the rows read and where they went: In = Train + Val + Dropped
// (less the copies of upsampling, Upsampled).
type Rows struct {
	In      int64 `json:"in"`
	Train   int64 `json:"train"`
	Val     int64 `json:"val"`
	Dropped int64 `json:"dropped"`
	// Upsampled counts the rows of train that are copies of others
	// (Options.BalanceUpsample): In = Train - Upsampled + Val + Dropped.
	Upsampled int64 `json:"upsampled,omitempty"`
}

// RuleCount is the number of rows a rule dropped.
type RuleCount struct {
	Rule string `json:"rule"`
	Rows int64  `json:"rows"`
}

// Questions counts the unique question ids of the input and of each split;
// no question is in both splits.
type Questions struct {
	In    int `json:"in"`
	Train int `json:"train"`
	Val   int `json:"val"`
}

// Classes are the verdicts of the rows of each split.
type Classes struct {
	Train ClassCounts `json:"train"`
	Val   ClassCounts `json:"val"`
}

// ClassCounts counts sufficient and insufficient rows.
type ClassCounts struct {
	Sufficient   int64 `json:"sufficient"`
	Insufficient int64 `json:"insufficient"`
}

// CategoryCount is the number of gap items of a category.
type CategoryCount struct {
	Category string `json:"category"`
	Items    int64  `json:"items"`
}

// Normalization counts what normalisation changed. It applies to the rows
// that pass rules 1 to 5: the kept rows and those that empty-gaps or
// balance dropped after it.
type Normalization struct {
	// Rows counts the rows normalised.
	Rows int64 `json:"rows"`
	// CategoriesChanged, DuplicatesRemoved and TargetsFilled count gap
	// items: categories rewritten by data.NormalizeCategory, repeats of an
	// earlier item of the row removed, empty targets set to "Answer".
	CategoriesChanged int64 `json:"categories_changed"`
	DuplicatesRemoved int64 `json:"duplicates_removed"`
	TargetsFilled     int64 `json:"targets_filled"`
	// GapsCleared counts the sufficient rows whose gap items were cleared.
	GapsCleared int64 `json:"gaps_cleared"`
}

func (n *Normalization) add(m Normalization) {
	n.Rows += m.Rows
	n.CategoriesChanged += m.CategoriesChanged
	n.DuplicatesRemoved += m.DuplicatesRemoved
	n.TargetsFilled += m.TargetsFilled
	n.GapsCleared += m.GapsCleared
}

// AgreementBucket counts the rows of an agreement ("0.67").
type AgreementBucket struct {
	Agreement string `json:"agreement"`
	Rows      int64  `json:"rows"`
}

// Teacher is a teacher and model found in the input, with its rows.
type Teacher struct {
	Teacher string `json:"teacher"`
	Model   string `json:"model"`
	Rows    int64  `json:"rows"`
}

// TruthAgreement compares the teacher's verdicts with retrieval truth, over
// the input rows that the teacher did not fail on (Rows of them).
type TruthAgreement struct {
	Rows int64 `json:"rows"`
	// StrongPositives counts the strong positives, Sufficient those the
	// teacher judged sufficient, and Agreement their share (0 without
	// strong positives).
	StrongPositives StrengthAgreement `json:"strong_positives"`
	// StrongNegatives: the same, for strong negatives judged insufficient.
	StrongNegatives StrengthAgreement `json:"strong_negatives"`
	// Confusion is the teacher's verdict against TruthComplete.
	Confusion Confusion `json:"confusion"`
	// FalsePositiveRate is FP / (FP + TN): judged sufficient while the
	// gold evidence is not all there. MissRate is FN / (TP + FN): the gold
	// evidence is all there yet judged insufficient. Both are 0 when their
	// denominator is.
	FalsePositiveRate float64 `json:"false_positive_rate"`
	MissRate          float64 `json:"miss_rate"`
}

// StrengthAgreement counts the rows of a class of retrieval truth and those
// the teacher agreed with.
type StrengthAgreement struct {
	Rows      int64   `json:"rows"`
	Agreed    int64   `json:"agreed"`
	Agreement float64 `json:"agreement"`
}

// Confusion is a confusion matrix of the teacher's Sufficient (predicted)
// against TruthComplete (actual).
type Confusion struct {
	TP int64 `json:"tp"`
	FP int64 `json:"fp"`
	FN int64 `json:"fn"`
	TN int64 `json:"tn"`
}

func (t *TruthAgreement) add(l *scanRow, f facts) {
	t.Rows++
	switch f.strength {
	case strongPositive:
		t.StrongPositives.Rows++
		if l.Sufficient {
			t.StrongPositives.Agreed++
		}
	case strongNegative:
		t.StrongNegatives.Rows++
		if !l.Sufficient {
			t.StrongNegatives.Agreed++
		}
	}
	c := &t.Confusion
	switch {
	case l.Sufficient && l.TruthComplete:
		c.TP++
	case l.Sufficient:
		c.FP++
	case l.TruthComplete:
		c.FN++
	default:
		c.TN++
	}
}

func (t *TruthAgreement) finish() {
	t.StrongPositives.Agreement = share(t.StrongPositives.Agreed, t.StrongPositives.Rows)
	t.StrongNegatives.Agreement = share(t.StrongNegatives.Agreed, t.StrongNegatives.Rows)
	c := t.Confusion
	t.FalsePositiveRate = share(c.FP, c.FP+c.TN)
	t.MissRate = share(c.FN, c.TP+c.FN)
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// check verifies that every input row is accounted for once.
func (s *Summary) check() error {
	var dropped int64
	for _, d := range s.Dropped {
		dropped += d.Rows
	}
	r := s.Rows
	if dropped != r.Dropped || r.In != r.Train-r.Upsampled+r.Val+r.Dropped {
		return fmt.Errorf("rows do not add up: %d in, %d train (%d of them copies) + %d val + %d dropped (%d by rule)",
			r.In, r.Train, r.Upsampled, r.Val, r.Dropped, dropped)
	}
	return nil
}

// rowsText says where the rows went.
func rowsText(r Rows) string {
	train := fmt.Sprint(r.Train)
	if r.Upsampled > 0 {
		train = fmt.Sprintf("%d (less %d copies)", r.Train, r.Upsampled)
	}
	return fmt.Sprintf("%d in = %s train + %d val + %d dropped", r.In, train, r.Val, r.Dropped)
}

// balanceText says how train was balanced.
func balanceText(o UsedOptions) string {
	t := fmt.Sprintf("train's majority class cut to at most %.4g times its minority's size", o.BalanceRatio)
	if o.BalanceUpsample {
		t = fmt.Sprintf("train's minority class written again up to 1/%.4g of its majority's size", o.BalanceRatio)
	}
	if o.BalanceHardOnly {
		t += ", among the rows retrieval truth does not settle"
	}
	if o.BalancePerRound {
		t += ", round by round"
	}
	return t
}

func parseFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// WriteTable writes the main figures of s as aligned text: rows and
// settings, the rows each rule dropped, the splits, the gap categories,
// normalisation, agreement, teachers and agreement with retrieval truth.
func WriteTable(w io.Writer, s Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format+"\n", args...) }
	o := s.Options

	for _, in := range s.Inputs {
		p("input\t%s (%s)", in.File, plural(int(in.Rows), "row"))
	}
	p("output\t%s", s.Output)
	how := "set"
	if o.MinAgreementDefault {
		how = fmt.Sprintf("default, up to %s per state", plural(o.MaxSamples, "sample"))
	}
	p("min agreement\t%.2f (%s)", o.MinAgreement, how)
	unit := "questions"
	if o.ValByRow {
		unit = "rows"
	}
	p("val fraction\t%.2f of %s, seed %d", o.ValFraction, unit, o.Seed)
	if o.Balance {
		p("balance\t%s", balanceText(o))
	}
	if o.ReferenceTruth {
		p("retrieval truth\tthe authors' (raw substrings of titles and the first answer)")
	}
	p("rows\t%s", rowsText(s.Rows))
	p("")

	p("rule\tdropped")
	off := map[string]bool{
		RuleSelfContradictory: !o.DropSelfContradictory,
		RuleEmptyGaps:         o.KeepEmptyGaps,
		RuleBalance:           !o.Balance,
	}
	for _, d := range s.Dropped {
		note := ""
		if off[d.Rule] {
			note = " (off)"
		}
		p("%s\t%d%s", d.Rule, d.Rows, note)
	}
	p("total\t%d", s.Rows.Dropped)
	p("")

	p("split\tquestions\trows\tsufficient\tinsufficient")
	for _, sp := range []struct {
		name      string
		questions int
		rows      int64
		c         ClassCounts
	}{
		{SplitTrain, s.Questions.Train, s.Rows.Train, s.Classes.Train},
		{SplitVal, s.Questions.Val, s.Rows.Val, s.Classes.Val},
	} {
		p("%s\t%d\t%d\t%d\t%d", sp.name, sp.questions, sp.rows, sp.c.Sufficient, sp.c.Insufficient)
	}
	p("")

	p("gap category\titems")
	for _, c := range s.GapCategories {
		p("%s\t%d", c.Category, c.Items)
	}
	p("")

	n := s.Normalization
	p("normalisation\t%d rows", n.Rows)
	p("categories changed\t%d", n.CategoriesChanged)
	p("duplicates removed\t%d", n.DuplicatesRemoved)
	p("targets filled\t%d", n.TargetsFilled)
	p("sufficient rows cleared of gaps\t%d", n.GapsCleared)
	p("")

	p("agreement\trows")
	for _, b := range s.Agreement {
		p("%s\t%d", b.Agreement, b.Rows)
	}
	p("")

	p("teacher\tmodel\trows")
	for _, t := range s.Teachers {
		p("%s\t%s\t%d", orDash(t.Teacher), orDash(t.Model), t.Rows)
	}
	p("")

	t := s.Truth
	p("teacher vs retrieval truth\t%d rows, teacher-failed excluded", t.Rows)
	p("strong positives judged sufficient\t%s", ratio(t.StrongPositives))
	p("strong negatives judged insufficient\t%s", ratio(t.StrongNegatives))
	c := t.Confusion
	p("confusion (teacher / truth)\tcomplete\tincomplete")
	p("sufficient\ttp %d\tfp %d", c.TP, c.FP)
	p("insufficient\tfn %d\ttn %d", c.FN, c.TN)
	p("false positive rate\t%s", percent(c.FP, c.FP+c.TN))
	p("complete judged insufficient\t%s", percent(c.FN, c.TP+c.FN))
	return tw.Flush()
}

func ratio(a StrengthAgreement) string {
	return fmt.Sprintf("%d/%d %s", a.Agreed, a.Rows, percent(a.Agreed, a.Rows))
}

func percent(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// plural writes n and a noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ReadSummary reads the filter.json that Run wrote in dir.
func ReadSummary(dir string) (Summary, error) { return stage.ReadReport[Summary](dir, SummaryFile) }
