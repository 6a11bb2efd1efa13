package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

// goldenRows are labels that every rule and normalisation has work on,
// from two teachers, sampled three times.
func goldenRows() []data.Label {
	var rows []data.Label
	add := func(qid string, round int32, mods ...func(*data.Label)) {
		rows = append(rows, lbl(qid, round, append([]func(*data.Label){sampled(3, 3)}, mods...)...))
	}
	other := func(l *data.Label) { l.Teacher, l.TeacherModel = "retrieval-truth", "" }
	for i := range 12 {
		qid := fmt.Sprintf("q%02d", i)
		add(qid, 0, insufficient(gap("Bridge Entity", "", "spouse"), gap("bridge_entity", "answer", "Spouse"), gap("evidence", "Beta", "year")))
		add(qid, 1, asStrongPositive)
		if i%3 == 0 {
			add(qid, 2, asStrongNegative, insufficient(gap("property", "Alpha", "born")))
		}
	}
	add("q00", 3, failed)
	add("q01", 3, sampled(3, 2))
	add("q02", 3, contradicted)
	add("q03", 3, asStrongPositive, insufficient(gap("relation", "x", "y")))
	add("q04", 3, asStrongNegative)
	add("q05", 3, insufficient())
	add("q06", 3, other, func(l *data.Label) { l.GapItems = []data.GapItem{gap("other", "x", "y")} })
	add("q07", 3, other, asStrongPositive, func(l *data.Label) { l.TruthComplete = false })
	return rows
}

func TestWriteTable(t *testing.T) {
	sum, _ := run(t, goldenRows(), Options{MinAgreement: -1, DropSelfContradictory: true, Balance: true})
	sum.Inputs[0].File, sum.Output = "runs/labels/labels.parquet", "runs/filtered"

	var buf bytes.Buffer
	if err := WriteTable(&buf, sum); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "table.golden", buf.String())

	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "filter.golden.json", string(b)+"\n")
}

func TestTruthAgreement(t *testing.T) {
	rows := []data.Label{
		lbl("a", 0, asStrongPositive),                                       // tp, positive agreed
		lbl("b", 0, asStrongPositive, insufficient(gap("other", "x", "y"))), // fn, positive not agreed
		lbl("c", 0, asStrongNegative, insufficient(gap("other", "x", "y"))), // tn, negative agreed
		lbl("d", 0, asStrongNegative),                                       // fp, negative not agreed
		lbl("e", 0),                                                         // fp
		lbl("f", 0, asStrongNegative, failed),                               // excluded
	}
	sum, _ := run(t, rows, Options{})
	want := TruthAgreement{
		Rows:              5,
		StrongPositives:   StrengthAgreement{Rows: 2, Agreed: 1, Agreement: 0.5},
		StrongNegatives:   StrengthAgreement{Rows: 2, Agreed: 1, Agreement: 0.5},
		Confusion:         Confusion{TP: 1, FP: 2, FN: 1, TN: 1},
		FalsePositiveRate: 2.0 / 3,
		MissRate:          0.5,
	}
	if diff := cmp.Diff(want, sum.Truth); diff != "" {
		t.Errorf("truth agreement (-want +got):\n%s", diff)
	}
	wantHist := []AgreementBucket{{"0.00", 1}, {"1.00", 5}}
	if diff := cmp.Diff(wantHist, sum.Agreement); diff != "" {
		t.Errorf("agreement histogram (-want +got):\n%s", diff)
	}
	wantTeachers := []Teacher{{Teacher: "llm", Model: "gpt-test", Rows: 6}}
	if diff := cmp.Diff(wantTeachers, sum.Teachers); diff != "" {
		t.Errorf("teachers (-want +got):\n%s", diff)
	}
}

func TestSummaryCheck(t *testing.T) {
	ok := Summary{Rows: Rows{In: 5, Train: 2, Val: 1, Dropped: 2}, Dropped: []RuleCount{{RuleEmptyGaps, 1}, {RuleBalance, 1}}}
	if err := ok.check(); err != nil {
		t.Errorf("check of consistent counts: %v", err)
	}
	for name, s := range map[string]Summary{
		"rows":  {Rows: Rows{In: 6, Train: 2, Val: 1, Dropped: 2}, Dropped: ok.Dropped},
		"rules": {Rows: ok.Rows, Dropped: []RuleCount{{RuleEmptyGaps, 1}}},
	} {
		if err := s.check(); err == nil {
			t.Errorf("%s: check found nothing wrong with %+v", name, s)
		}
	}
}
