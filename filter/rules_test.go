package filter

import (
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRules(t *testing.T) {
	t.Parallel()
	someGap := gap("attribute", "Alpha", "birth date")
	tests := []struct {
		name string
		opts Options
		row  data.Label
		// wantRule is the rule that drops row, "" when it is kept.
		wantRule, wantReason string
	}{
		{
			name:       "teacher-failed",
			opts:       Options{MinAgreement: -1},
			row:        lbl("q", 0, failed),
			wantRule:   RuleTeacherFailed,
			wantReason: "teacher failed: no usable sample: sample 0: HTTP 500",
		},
		{
			name:       "teacher-failed before low-agreement",
			opts:       Options{MinAgreement: 0.5},
			row:        lbl("q", 0, failed),
			wantRule:   RuleTeacherFailed,
			wantReason: "teacher failed: no usable sample: sample 0: HTTP 500",
		},
		{
			name:       "low-agreement",
			opts:       Options{MinAgreement: -1},
			row:        lbl("q", 0, sampled(3, 2)),
			wantRule:   RuleLowAgreement,
			wantReason: "agreement 0.67 below 1.00 (2 of 3 samples for the majority verdict)",
		},
		{
			name:       "low-agreement with a set threshold",
			opts:       Options{MinAgreement: 0.8},
			row:        lbl("q", 0, sampled(5, 3)),
			wantRule:   RuleLowAgreement,
			wantReason: "agreement 0.60 below 0.80 (3 of 5 samples for the majority verdict)",
		},
		{
			name:       "low-agreement close to the threshold",
			opts:       Options{MinAgreement: 0.999},
			row:        lbl("q", 0, func(l *data.Label) { l.Agreement = 0.998 }),
			wantRule:   RuleLowAgreement,
			wantReason: "agreement 0.998 below 0.999 (1 of 1 samples for the majority verdict)",
		},
		{
			name: "agreement 2/3 passes 0.67 (rounded threshold)",
			opts: Options{MinAgreement: 0.6666666667},
			row:  lbl("q", 0, sampled(3, 2)),
		},
		{
			name:       "self-contradictory",
			opts:       Options{MinAgreement: -1, DropSelfContradictory: true},
			row:        lbl("q", 0, contradicted),
			wantRule:   RuleSelfContradictory,
			wantReason: "a sample contradicted itself: sample 0: sufficient with gap items",
		},
		{
			name: "self-contradictory kept by default",
			opts: Options{MinAgreement: -1},
			row:  lbl("q", 0, contradicted),
		},
		{
			name:       "contradicts-strong-positive",
			opts:       Options{MinAgreement: -1},
			row:        lbl("q", 0, asStrongPositive, insufficient(someGap)),
			wantRule:   RuleContradictsStrongPositive,
			wantReason: "teacher said insufficient but 2/2 gold titles are in the context and it states the answer",
		},
		{
			name: "strong positive judged sufficient kept",
			opts: Options{MinAgreement: -1},
			row:  lbl("q", 0, asStrongPositive),
		},
		{
			name:       "contradicts-strong-negative",
			opts:       Options{MinAgreement: -1},
			row:        lbl("q", 0, asStrongNegative),
			wantRule:   RuleContradictsStrongNegative,
			wantReason: "teacher said sufficient but 0/2 gold titles are in the context and it does not state the answer",
		},
		{
			name: "strong negative judged insufficient kept",
			opts: Options{MinAgreement: -1},
			row:  lbl("q", 0, asStrongNegative, insufficient(someGap)),
		},
		{
			name:       "contradicts-strong-positive before empty-gaps",
			opts:       Options{MinAgreement: -1},
			row:        lbl("q", 0, asStrongPositive, insufficient()),
			wantRule:   RuleContradictsStrongPositive,
			wantReason: "teacher said insufficient but 2/2 gold titles are in the context and it states the answer",
		},
		{
			name:       "empty-gaps",
			opts:       Options{MinAgreement: -1},
			row:        lbl("q", 0, insufficient()),
			wantRule:   RuleEmptyGaps,
			wantReason: "teacher said insufficient but named no gap item",
		},
		{
			name: "empty-gaps kept with KeepEmptyGaps",
			opts: Options{MinAgreement: -1, KeepEmptyGaps: true},
			row:  lbl("q", 0, insufficient()),
		},
		{
			name: "sufficient with gap items kept (gaps cleared)",
			opts: Options{MinAgreement: -1},
			row:  lbl("q", 0, func(l *data.Label) { l.GapItems = []data.GapItem{someGap} }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A second question that every rule keeps, so that both splits
			// have one.
			rows := []data.Label{tt.row, lbl("other", 0)}
			tt.opts.ValFraction = -1
			sum, out := run(t, rows, tt.opts)

			want := map[string]int64{}
			if tt.wantRule != "" {
				want[tt.wantRule] = 1
			}
			if diff := cmp.Diff(want, droppedByRule(sum)); diff != "" {
				t.Errorf("dropped by rule (-want +got):\n%s", diff)
			}
			var got *data.Label
			all := out.all()
			for i, l := range all {
				if l.QuestionID == "q" {
					got = &all[i]
				}
			}
			if got == nil {
				t.Fatal("row q missing from the output")
			}
			if got.DropRule != tt.wantRule || got.DropReason != tt.wantReason {
				t.Errorf("got rule %q, reason %q; want %q, %q", got.DropRule, got.DropReason, tt.wantRule, tt.wantReason)
			}
			wantSplit := SplitTrain
			if tt.wantRule != "" {
				wantSplit = ""
			}
			if got.Split != wantSplit {
				t.Errorf("got split %q, want %q", got.Split, wantSplit)
			}
		})
	}
}

func TestRulesList(t *testing.T) {
	want := []string{
		"teacher-failed", "low-agreement", "self-contradictory", "contradicts-strong-positive",
		"contradicts-strong-negative", "empty-gaps", "balance",
	}
	if diff := cmp.Diff(want, Rules()); diff != "" {
		t.Errorf("Rules() (-want +got):\n%s", diff)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name        string
		in          data.Label
		wantGaps    []data.GapItem
		wantSupport []int32
		want        Normalization
	}{
		{
			name: "already normal",
			in: data.Label{GapItems: []data.GapItem{gap("attribute", "Alpha", "born")},
				GapSupport: []int32{3}},
			wantGaps:    []data.GapItem{gap("attribute", "Alpha", "born")},
			wantSupport: []int32{3},
			want:        Normalization{Rows: 1},
		},
		{
			name: "categories",
			in: data.Label{GapItems: []data.GapItem{
				gap("Bridge Entity", "Alpha", "spouse"), gap("alias", "Beta", "real name"),
				gap("evidence", "Gamma", "year"), gap("whatever", "Delta", "x"), gap("relation", "Eps", "y"),
			}, GapSupport: []int32{1, 2, 3, 4, 5}},
			wantGaps: []data.GapItem{
				gap("bridge_entity", "Alpha", "spouse"), gap("bridge_entity", "Beta", "real name"),
				gap("evidence_span", "Gamma", "year"), gap("other", "Delta", "x"), gap("relation", "Eps", "y"),
			},
			wantSupport: []int32{1, 2, 3, 4, 5},
			want:        Normalization{Rows: 1, CategoriesChanged: 4},
		},
		{
			name: "duplicates after normalisation, first kept, support aligned",
			in: data.Label{GapItems: []data.GapItem{
				gap("bridge entity", "Alpha", "spouse"), gap("attribute", "Beta", "born"),
				gap("entity", "alpha ", "Spouse"), gap("bridge_entity", "Alpha", "spouse"),
			}, GapSupport: []int32{3, 2, 1, 1}},
			wantGaps:    []data.GapItem{gap("bridge_entity", "Alpha", "spouse"), gap("attribute", "Beta", "born")},
			wantSupport: []int32{3, 2},
			want:        Normalization{Rows: 1, CategoriesChanged: 1, DuplicatesRemoved: 2},
		},
		{
			name: "empty targets",
			in: data.Label{GapItems: []data.GapItem{
				gap("attribute", "", "born"), gap("attribute", "  ", "died"), gap("attribute", "Answer", "born"),
			}, GapSupport: []int32{2, 2, 1}},
			wantGaps:    []data.GapItem{gap("attribute", "Answer", "born"), gap("attribute", "Answer", "died")},
			wantSupport: []int32{2, 2},
			want:        Normalization{Rows: 1, TargetsFilled: 2, DuplicatesRemoved: 1},
		},
		{
			name: "sufficient cleared",
			in: data.Label{Sufficient: true, GapItems: []data.GapItem{gap("attribute", "Alpha", "born")},
				GapSupport: []int32{1}},
			want: Normalization{Rows: 1, GapsCleared: 1},
		},
		{
			name: "sufficient without gaps",
			in:   data.Label{Sufficient: true},
			want: Normalization{Rows: 1},
		},
		{
			name: "support missing",
			in: data.Label{GapItems: []data.GapItem{gap("attribute", "Alpha", "born"), gap("attribute", "alpha", "born")},
				GapSupport: nil},
			wantGaps: []data.GapItem{gap("attribute", "Alpha", "born")},
			want:     Normalization{Rows: 1, DuplicatesRemoved: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.in
			got := normalize(&l)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantGaps, l.GapItems, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gap items (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSupport, l.GapSupport, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gap support (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNormalizeWritten checks that kept rows are written normalised and
// that the summary counts each kind of normalisation.
func TestNormalizeWritten(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		row      data.Label
		wantGaps []data.GapItem
		want     Normalization
	}{
		{
			name:     "category",
			row:      lbl("q", 0, insufficient(gap("Bridge-Entities", "Alpha", "spouse"))),
			wantGaps: []data.GapItem{gap("bridge_entity", "Alpha", "spouse")},
			want:     Normalization{Rows: 2, CategoriesChanged: 1},
		},
		{
			name:     "duplicate",
			row:      lbl("q", 0, insufficient(gap("attribute", "Alpha", "born"), gap("property", "ALPHA", "born"))),
			wantGaps: []data.GapItem{gap("attribute", "Alpha", "born")},
			want:     Normalization{Rows: 2, DuplicatesRemoved: 1},
		},
		{
			name:     "empty target",
			row:      lbl("q", 0, insufficient(gap("relation", "", "between"))),
			wantGaps: []data.GapItem{gap("relation", "Answer", "between")},
			want:     Normalization{Rows: 2, TargetsFilled: 1},
		},
		{
			name: "sufficient cleared",
			row:  lbl("q", 0, func(l *data.Label) { l.GapItems, l.GapSupport = []data.GapItem{gap("other", "x", "y")}, []int32{1} }),
			want: Normalization{Rows: 2, GapsCleared: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sum, out := run(t, []data.Label{tt.row, lbl("other", 0)}, Options{MinAgreement: -1, ValFraction: -1})
			if diff := cmp.Diff(tt.want, sum.Normalization); diff != "" {
				t.Errorf("normalisation counts (-want +got):\n%s", diff)
			}
			if len(out.train) != 2 {
				t.Fatalf("got %d train rows, want 2", len(out.train))
			}
			got := out.train[0]
			if diff := cmp.Diff(tt.wantGaps, got.GapItems, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("gap items (-want +got):\n%s", diff)
			}
			if len(got.GapSupport) != len(got.GapItems) {
				t.Errorf("got %d gap supports for %d gap items", len(got.GapSupport), len(got.GapItems))
			}
		})
	}
}

func TestDroppedRowsAsRead(t *testing.T) {
	// A row dropped before normalisation keeps its gap items as read.
	row := lbl("q", 0, asStrongPositive, insufficient(gap("Alias", "", "x"), gap("alias", "", "x")))
	_, out := run(t, []data.Label{row, lbl("other", 0)}, Options{MinAgreement: -1})
	if len(out.dropped) != 1 {
		t.Fatalf("got %d dropped rows, want 1", len(out.dropped))
	}
	if diff := cmp.Diff(row.GapItems, out.dropped[0].GapItems); diff != "" {
		t.Errorf("gap items of a dropped row (-want +got):\n%s", diff)
	}
}

// TestScanRowColumnsAreLabels checks that every column the first pass
// reads (scanRow) is a column of the labels (data.Label) with the same
// type and structure.
func TestScanRowColumnsAreLabels(t *testing.T) {
	testkit.SameColumns(t, scanRow{}, data.Label{}, 12)
}
