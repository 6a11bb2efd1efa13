package filter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

func TestDefaultMinAgreement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		opts        Options
		rows        []data.Label
		wantMin     float64
		wantDefault bool
		wantDropped map[string]int64
	}{
		{
			name: "K=1: no threshold",
			opts: Options{MinAgreement: -1},
			rows: []data.Label{
				lbl("a", 0), lbl("b", 0, func(l *data.Label) { l.Agreement = 0.5 }),
			},
			wantMin: 0, wantDefault: true, wantDropped: map[string]int64{},
		},
		{
			name: "K=3: unanimity",
			opts: Options{MinAgreement: -1},
			rows: []data.Label{
				lbl("a", 0, sampled(3, 3)), lbl("b", 0, sampled(3, 2)), lbl("c", 0, sampled(3, 2), insufficient(gap("attribute", "x", "y"))),
			},
			wantMin: 1, wantDefault: true, wantDropped: map[string]int64{RuleLowAgreement: 2},
		},
		{
			name: "K=3 in one row only",
			opts: Options{MinAgreement: -1},
			rows: []data.Label{
				lbl("a", 0, sampled(1, 1)), lbl("b", 0, sampled(3, 2)),
			},
			wantMin: 1, wantDefault: true, wantDropped: map[string]int64{RuleLowAgreement: 1},
		},
		{
			name: "K=3 with a set threshold",
			opts: Options{MinAgreement: 0.6},
			rows: []data.Label{
				lbl("a", 0, sampled(3, 3)), lbl("b", 0, sampled(3, 2)),
			},
			wantMin: 0.6, wantDropped: map[string]int64{},
		},
		{
			name: "zero is no threshold",
			opts: Options{},
			rows: []data.Label{
				lbl("a", 0, sampled(3, 3)), lbl("b", 0, sampled(3, 2)),
			},
			wantMin: 0, wantDropped: map[string]int64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sum, _ := run(t, tt.rows, tt.opts)
			if sum.Options.MinAgreement != tt.wantMin || sum.Options.MinAgreementDefault != tt.wantDefault {
				t.Errorf("got min agreement %v (default %v), want %v (default %v)",
					sum.Options.MinAgreement, sum.Options.MinAgreementDefault, tt.wantMin, tt.wantDefault)
			}
			if diff := cmp.Diff(tt.wantDropped, droppedByRule(sum)); diff != "" {
				t.Errorf("dropped by rule (-want +got):\n%s", diff)
			}
		})
	}
}

// mixed returns rows of n questions with 1 to 3 states each, some of which
// the rules drop.
func mixed(n int) []data.Label {
	var rows []data.Label
	for i := range n {
		qid := fmt.Sprintf("q%03d", i)
		for r := range int32(i%3 + 1) {
			var mods []func(*data.Label)
			switch (i + int(r)) % 7 {
			case 1, 4:
				mods = append(mods, insufficient(gap("attribute", "x", fmt.Sprint(r))))
			case 2:
				mods = append(mods, asStrongNegative, insufficient(gap("bridge", "y", "z")))
			case 5:
				mods = append(mods, insufficient())
			}
			rows = append(rows, lbl(qid, r, mods...))
		}
	}
	return rows
}

// splitOf maps each question of the output to its split, failing on a
// question in both.
func splitOf(t *testing.T, out output) map[string]string {
	t.Helper()
	m := make(map[string]string)
	for _, rows := range [][]data.Label{out.train, out.val} {
		for _, l := range rows {
			if s, ok := m[l.QuestionID]; ok && s != l.Split {
				t.Errorf("question %s in %s and %s", l.QuestionID, s, l.Split)
			}
			m[l.QuestionID] = l.Split
		}
	}
	return m
}

func TestSplit(t *testing.T) {
	rows := mixed(100)
	sum, out := run(t, rows, Options{MinAgreement: -1})
	split := splitOf(t, out)
	if len(split) != 100-countEmpty(rows) {
		t.Fatalf("got %d questions kept, want %d", len(split), 100-countEmpty(rows))
	}
	var val int
	for _, s := range split {
		if s == SplitVal {
			val++
		}
	}
	wantVal := int(float64(len(split))*0.1 + 0.5)
	if val != wantVal || sum.Questions.Val != wantVal || sum.Questions.Train != len(split)-wantVal {
		t.Errorf("got %d val questions (summary %d val, %d train), want %d of %d", val, sum.Questions.Val, sum.Questions.Train, wantVal, len(split))
	}
	for _, l := range out.train {
		if l.Split != SplitTrain {
			t.Errorf("train row %v has split %q", l.Key(), l.Split)
		}
	}
	for _, l := range out.val {
		if l.Split != SplitVal {
			t.Errorf("val row %v has split %q", l.Key(), l.Split)
		}
	}

	t.Run("same seed, same split", func(t *testing.T) {
		_, again := run(t, rows, Options{MinAgreement: -1})
		if diff := cmp.Diff(split, splitOf(t, again)); diff != "" {
			t.Errorf("split (-first +second):\n%s", diff)
		}
	})
	t.Run("input order does not matter", func(t *testing.T) {
		shuffled := slices.Clone(rows)
		slices.Reverse(shuffled)
		_, again := run(t, shuffled, Options{MinAgreement: -1})
		if diff := cmp.Diff(split, splitOf(t, again)); diff != "" {
			t.Errorf("split (-in order +reversed):\n%s", diff)
		}
	})
	t.Run("seed matters", func(t *testing.T) {
		_, other := run(t, rows, Options{MinAgreement: -1, Seed: 7})
		if cmp.Equal(split, splitOf(t, other)) {
			t.Error("seeds 42 and 7 gave the same split")
		}
	})
	t.Run("balance does not change the split", func(t *testing.T) {
		_, bal := run(t, rows, Options{MinAgreement: -1, Balance: true})
		for q, s := range splitOf(t, bal) {
			if split[q] != s {
				t.Errorf("question %s in %s with balance, %s without", q, s, split[q])
			}
		}
	})
	t.Run("rows in input order", func(t *testing.T) {
		for name, got := range map[string][]data.Label{"train": out.train, "val": out.val, "dropped": out.dropped} {
			idx := make([]int, len(got))
			for i, l := range got {
				idx[i] = slices.IndexFunc(rows, func(r data.Label) bool { return r.Key() == l.Key() })
			}
			if !slices.IsSorted(idx) {
				t.Errorf("%s rows not in input order: %v", name, idx)
			}
		}
	})
}

func countEmpty(rows []data.Label) int {
	kept := make(map[string]bool)
	all := make(map[string]bool)
	for _, l := range rows {
		all[l.QuestionID] = true
		if l.TruthStrength == data.StrongNegative.String() && l.Sufficient || !l.Sufficient && len(l.GapItems) == 0 {
			continue
		}
		kept[l.QuestionID] = true
	}
	return len(all) - len(kept)
}

func TestValQuestions(t *testing.T) {
	tests := []struct {
		frac float64
		n    int
		want int
	}{
		{0.1, 0, 0},
		{0.1, 1, 0},
		{0.9, 1, 0},
		{0.1, 2, 1},
		{0.9, 2, 1},
		{0.1, 100, 10},
		{0.1, 104, 10},
		{0.1, 105, 11},
		{0.5, 3, 2},
		{0.99, 10, 9},
		{0, 10, 0},
		{-1, 10, 0},
	}
	for _, tt := range tests {
		if got := valQuestions(tt.frac, tt.n); got != tt.want {
			t.Errorf("valQuestions(%v, %d) = %d, want %d", tt.frac, tt.n, got, tt.want)
		}
	}
}

func TestValFraction(t *testing.T) {
	t.Parallel()
	var rows []data.Label
	for i := range 100 {
		rows = append(rows, lbl(fmt.Sprintf("q%d", i), 0), lbl(fmt.Sprintf("q%d", i), 1, insufficient(gap("other", "a", "b"))))
	}
	for _, tt := range []struct {
		frac    float64
		wantVal int
	}{{0, 10}, {0.1, 10}, {0.25, 25}, {-1, 0}} {
		t.Run(fmt.Sprint(tt.frac), func(t *testing.T) {
			t.Parallel()
			sum, out := run(t, rows, Options{ValFraction: tt.frac})
			splitOf(t, out)
			if sum.Questions.Val != tt.wantVal || sum.Rows.Val != int64(2*tt.wantVal) {
				t.Errorf("got %d val questions, %d val rows; want %d, %d", sum.Questions.Val, sum.Rows.Val, tt.wantVal, 2*tt.wantVal)
			}
		})
	}
}

func TestBalance(t *testing.T) {
	// 10 sufficient and 4 insufficient rows, all in train.
	var rows []data.Label
	for i := range 14 {
		var mods []func(*data.Label)
		if i%7 >= 5 {
			mods = append(mods, insufficient(gap("attribute", "a", "b")))
		}
		rows = append(rows, lbl(fmt.Sprintf("q%02d", i/2), int32(i%2), mods...))
	}
	opts := Options{Balance: true, ValFraction: -1}
	sum, out := run(t, rows, opts)
	if diff := cmp.Diff(ClassCounts{Sufficient: 4, Insufficient: 4}, sum.Classes.Train); diff != "" {
		t.Errorf("train classes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{RuleBalance: 6}, droppedByRule(sum)); diff != "" {
		t.Errorf("dropped by rule (-want +got):\n%s", diff)
	}
	var suff int
	for _, l := range out.train {
		if l.Sufficient {
			suff++
		}
	}
	if suff != 4 || len(out.train) != 8 {
		t.Errorf("got %d train rows, %d sufficient; want 8, 4", len(out.train), suff)
	}
	for _, l := range out.dropped {
		want := "train had 10 sufficient and 4 insufficient rows; sufficient rows downsampled to 4"
		if l.DropRule != RuleBalance || l.DropReason != want || !l.Sufficient {
			t.Errorf("dropped %v: rule %q, reason %q, sufficient %v; want %q, %q, true", l.Key(), l.DropRule, l.DropReason, l.Sufficient, RuleBalance, want)
		}
	}

	keys := func(out output) []data.StateKey {
		var k []data.StateKey
		for _, l := range out.dropped {
			k = append(k, l.Key())
		}
		slices.SortFunc(k, func(a, b data.StateKey) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		return k
	}
	_, again := run(t, rows, opts)
	if diff := cmp.Diff(keys(out), keys(again)); diff != "" {
		t.Errorf("same seed, different rows dropped (-first +second):\n%s", diff)
	}
	reversed := slices.Clone(rows)
	slices.Reverse(reversed)
	_, rev := run(t, reversed, opts)
	if diff := cmp.Diff(keys(out), keys(rev)); diff != "" {
		t.Errorf("reversed input, different rows dropped (-in order +reversed):\n%s", diff)
	}
	opts.Seed = 1
	_, other := run(t, rows, opts)
	if cmp.Equal(keys(out), keys(other)) {
		t.Error("seeds 42 and 1 dropped the same rows")
	}

	t.Run("val keeps its distribution", func(t *testing.T) {
		sum, out := run(t, rows, Options{Balance: true, ValFraction: 0.5})
		if tr := sum.Classes.Train; tr.Sufficient != tr.Insufficient {
			t.Errorf("train not balanced: %+v", tr)
		}
		// Every input row of a val question is in val.
		split := splitOf(t, out)
		var want ClassCounts
		for _, l := range rows {
			if split[l.QuestionID] != SplitVal {
				continue
			}
			if l.Sufficient {
				want.Sufficient++
			} else {
				want.Insufficient++
			}
		}
		if diff := cmp.Diff(want, sum.Classes.Val); diff != "" || sum.Rows.Val == 0 {
			t.Errorf("val classes (-want +got), %d val rows:\n%s", sum.Rows.Val, diff)
		}
		for _, l := range out.dropped {
			if split[l.QuestionID] == SplitVal {
				t.Errorf("balance dropped %v of a val question", l.Key())
			}
		}
	})
}

func TestBalanceMajorityInsufficient(t *testing.T) {
	rows := []data.Label{
		lbl("a", 0), lbl("a", 1, insufficient(gap("other", "x", "y"))),
		lbl("b", 0, insufficient(gap("other", "x", "y"))), lbl("c", 0, insufficient(gap("other", "x", "y"))),
	}
	sum, _ := run(t, rows, Options{Balance: true, ValFraction: -1})
	if diff := cmp.Diff(ClassCounts{Sufficient: 1, Insufficient: 1}, sum.Classes.Train); diff != "" {
		t.Errorf("train classes (-want +got):\n%s", diff)
	}
}

func TestBalanceRatio(t *testing.T) {
	// 2 sufficient and 7 insufficient rows, each of its own question.
	rows := []data.Label{lbl("s1", 0), lbl("s2", 0)}
	for i := range 7 {
		rows = append(rows, lbl(fmt.Sprintf("i%d", i), 0, insufficient(gap("other", "x", "y"))))
	}
	for _, tt := range []struct {
		ratio float64
		want  int64 // insufficient rows kept
	}{{0, 2}, {1, 2}, {1.5, 3}, {1.75, 4}, {3, 6}, {10, 7}} {
		sum, out := run(t, rows, Options{Balance: true, BalanceRatio: tt.ratio, ValFraction: -1})
		if diff := cmp.Diff(ClassCounts{Sufficient: 2, Insufficient: tt.want}, sum.Classes.Train); diff != "" {
			t.Errorf("ratio %v: train classes (-want +got):\n%s", tt.ratio, diff)
		}
		if got := int64(len(out.dropped)); got != 7-tt.want {
			t.Errorf("ratio %v: %d rows dropped, want %d", tt.ratio, got, 7-tt.want)
		}
		wantRatio := max(tt.ratio, 1)
		if sum.Options.BalanceRatio != wantRatio {
			t.Errorf("ratio %v: summary records %v", tt.ratio, sum.Options.BalanceRatio)
		}
	}
	for _, bad := range []float64{0.5, -1, math.NaN(), math.Inf(1)} {
		if _, err := Run(context.Background(), Options{In: []string{"x"}, Out: t.TempDir(), Balance: true, BalanceRatio: bad}); err == nil || !strings.Contains(err.Error(), "balance ratio") {
			t.Errorf("ratio %v: err %v, want a balance ratio error", bad, err)
		}
	}
}

func TestSummaryFile(t *testing.T) {
	rows := mixed(20)
	dir := t.TempDir()
	in := writeLabels(t, dir, rows)
	out := filepath.Join(dir, "out")
	sum, err := Run(context.Background(), Options{In: []string{in}, Out: out, MinAgreement: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var got Summary
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sum, got); diff != "" {
		t.Errorf("filter.json (-returned +file):\n%s", diff)
	}
	var names []string
	for _, d := range got.Dropped {
		names = append(names, d.Rule)
	}
	if diff := cmp.Diff(Rules(), names); diff != "" {
		t.Errorf("rules in the summary (-want +got):\n%s", diff)
	}
	for _, key := range []string{`"min_agreement"`, `"agreement_histogram"`, `"gap_categories"`, `"strong_positives"`, `"tp"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("filter.json lacks %s", key)
		}
	}
	files := testkit.DirNames(t, out)
	want := OutputFiles()
	slices.Sort(want)
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files in the output (-want +got):\n%s", diff)
	}
}

func TestOutExists(t *testing.T) {
	dir := t.TempDir()
	rows := mixed(10)
	in := writeLabels(t, dir, rows)
	for _, name := range OutputFiles() {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, name), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Run(context.Background(), Options{In: []string{in}, Out: out})
			if !errors.Is(err, ErrOutExists) {
				t.Fatalf("got error %v, want ErrOutExists", err)
			}
			if b, _ := os.ReadFile(filepath.Join(out, name)); string(b) != "old" {
				t.Errorf("%s was changed: %q", name, b)
			}

			sum, err := Run(context.Background(), Options{In: []string{in}, Out: out, Overwrite: true})
			if err != nil {
				t.Fatalf("with Overwrite: %v", err)
			}
			checkCounts(t, sum, readOutput(t, out), len(rows))
		})
	}

	t.Run("any other file", func(t *testing.T) {
		out := t.TempDir()
		if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), Options{In: []string{in}, Out: out}); !errors.Is(err, ErrOutExists) {
			t.Fatalf("got error %v, want ErrOutExists", err)
		}
	})
	t.Run("input inside the output", func(t *testing.T) {
		for _, overwrite := range []bool{false, true} {
			_, err := Run(context.Background(), Options{In: []string{in}, Out: dir, Overwrite: overwrite})
			if err == nil || !strings.Contains(err.Error(), "is inside the output directory") {
				t.Fatalf("overwrite %v: got error %v, want one about the input being inside the output", overwrite, err)
			}
		}
		if _, err := os.Stat(in); err != nil {
			t.Errorf("the input is gone: %v", err)
		}
	})
	t.Run("a failed start leaves nothing", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		bad := writeKind(t, filepath.Join(t.TempDir(), "bad.parquet"), data.KindLabels, append(mixed(3), mixed(3)...))
		if _, err := Run(context.Background(), Options{In: []string{bad}, Out: out}); err == nil {
			t.Fatal("a state labelled twice was filtered")
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the failed run left %s: %v", out, err)
		}
	})
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		in      string
		opts    Options
		wantErr error
		want    string
	}{
		{
			name:    "wrong kind",
			in:      writeKind(t, filepath.Join(dir, "states.parquet"), data.KindTrajectories, mixed(2)),
			wantErr: ErrInput,
			want:    "holds trajectories rows, not labels",
		},
		{
			name: "duplicate state",
			in: writeKind(t, filepath.Join(dir, "dup.parquet"), data.KindLabels, []data.Label{
				lbl("a", 0), lbl("b", 0), lbl("a", 1), lbl("b", 0, insufficient(gap("other", "x", "y"))),
			}),
			wantErr: ErrInput,
			want:    `state (question "b", round 0) labelled twice, rows 2 and 4`,
		},
		{
			name: "duplicate state past round 63",
			in: writeKind(t, filepath.Join(dir, "dup-late.parquet"), data.KindLabels, []data.Label{
				lbl("a", 64), lbl("a", 0), lbl("a", 63), lbl("a", 64),
			}),
			wantErr: ErrInput,
			want:    `state (question "a", round 64) labelled twice, rows 1 and 4`,
		},
		{
			name:    "missing",
			in:      filepath.Join(dir, "none.parquet"),
			wantErr: os.ErrNotExist,
		},
		{
			name: "min agreement over 1",
			in:   writeKind(t, filepath.Join(dir, "ok.parquet"), data.KindLabels, mixed(2)),
			opts: Options{MinAgreement: 1.5},
			want: "min agreement 1.5 is not at most 1",
		},
		{
			name: "val fraction 1",
			in:   filepath.Join(dir, "ok.parquet"),
			opts: Options{ValFraction: 1},
			want: "val fraction 1 is not below 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.In, opts.Out = []string{tt.in}, filepath.Join(t.TempDir(), "out")
			_, err := Run(context.Background(), opts)
			if err == nil {
				t.Fatal("got no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %q, want it to contain %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(opts.Out, SummaryFile)); err == nil {
				t.Errorf("%s written after an error", SummaryFile)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	dir := t.TempDir()
	in := writeLabels(t, dir, mixed(10))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(dir, "out")
	if _, err := Run(ctx, Options{In: []string{in}, Out: out}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got error %v, want context.Canceled", err)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 0 {
		t.Errorf("cancelled run left %d files in the output", len(entries))
	}
}

func TestEmptyInput(t *testing.T) {
	sum, _ := run(t, nil, Options{MinAgreement: -1, Balance: true})
	if sum.Rows != (Rows{}) {
		t.Errorf("got rows %+v, want none", sum.Rows)
	}
}

// TestManyRows checks the split's proportions over more rows than one read
// batch.
func TestManyRows(t *testing.T) {
	var rows []data.Label
	for i := range 1000 {
		for r := range int32(3) {
			rows = append(rows, lbl(fmt.Sprintf("q%04d", i), r))
		}
	}
	sum, out := run(t, rows, Options{})
	splitOf(t, out)
	if sum.Questions.Val != 100 || sum.Rows.Val != 300 || sum.Rows.Train != 2700 {
		t.Errorf("got %d val questions, %d val rows, %d train rows; want 100, 300, 2700", sum.Questions.Val, sum.Rows.Val, sum.Rows.Train)
	}
}

func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	var rows []data.Label
	for i := range 2000 {
		for r := range int32(3) {
			rows = append(rows, lbl(fmt.Sprintf("q%04d", i), r, func(l *data.Label) {
				l.Context = strings.Repeat("some evidence sentence. ", 80)
			}))
		}
	}
	w, err := data.CreateParquet[data.Label](filepath.Join(dir, "labels.parquet"), data.KindLabels)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := Run(context.Background(), Options{
			In: []string{filepath.Join(dir, "labels.parquet")}, Out: filepath.Join(dir, fmt.Sprint("out", i)),
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
}

func TestStateSet(t *testing.T) {
	var s stateSet
	states := [][2]int32{{0, 0}, {0, 1}, {1, 0}, {0, 63}, {0, 64}, {0, -1}, {5, 2}, {5, 1 << 30}, {2, 63}}
	for _, st := range states {
		if !s.add(st[0], st[1]) {
			t.Fatalf("state %v taken for one already added", st)
		}
	}
	for _, st := range states {
		if s.add(st[0], st[1]) {
			t.Errorf("state %v added twice", st)
		}
	}
	for _, st := range [][2]int32{{1, 1}, {1, 63}, {2, 62}, {3, 0}, {5, 0}, {0, 65}, {1, -1}} {
		if !s.add(st[0], st[1]) {
			t.Errorf("state %v taken for one already added", st)
		}
	}
}

// TestSeveralInputs: the labels of several files (datasets, runs) are
// filtered as one: the outputs and counts are those of one file holding
// them all, the summary lists each input with its rows, and a state in
// two of them is refused.
func TestSeveralInputs(t *testing.T) {
	rows := goldenRows()
	cut := slices.IndexFunc(rows, func(l data.Label) bool { return l.QuestionID == "q04" })
	dir := t.TempDir()
	a := writeKind(t, filepath.Join(dir, "a.parquet"), data.KindLabels, rows[:cut])
	b := writeKind(t, filepath.Join(dir, "b.parquet"), data.KindLabels, rows[cut:])
	opts := Options{MinAgreement: -1, Balance: true}

	oneSum, one := run(t, rows, opts)
	opts.In, opts.Out = []string{a, b}, filepath.Join(dir, "out")
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(one, readOutput(t, opts.Out), cmp.AllowUnexported(output{})); diff != "" {
		t.Errorf("outputs differ from one file's (-one +two):\n%s", diff)
	}
	wantInputs := []Input{{File: a, Rows: int64(cut)}, {File: b, Rows: int64(len(rows) - cut)}}
	if diff := cmp.Diff(wantInputs, sum.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if sum.Rows != oneSum.Rows || !slices.Equal(sum.Dropped, oneSum.Dropped) || sum.Classes != oneSum.Classes {
		t.Errorf("counts %+v %+v %+v, want those of one file: %+v %+v %+v",
			sum.Rows, sum.Dropped, sum.Classes, oneSum.Rows, oneSum.Dropped, oneSum.Classes)
	}

	opts.In, opts.Out = []string{a, a}, filepath.Join(dir, "twice")
	if _, err := Run(context.Background(), opts); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "labelled twice") {
		t.Errorf("one file given twice: got error %v, want %v (labelled twice)", err, ErrInput)
	}
}

// TestValSplitByRow: with ValByRow, the share of the kept rows (not of the
// questions) goes to val, chosen by the seed whatever the input's order,
// and a question may have states on both sides.
func TestValSplitByRow(t *testing.T) {
	rows := mixed(60)
	opts := Options{ValByRow: true, ValFraction: 0.25, MinAgreement: -1}
	sum, out := run(t, rows, opts)
	kept := sum.Rows.Train + sum.Rows.Val
	if want := int64(math.Round(0.25 * float64(kept))); sum.Rows.Val != want {
		t.Errorf("%d val rows of %d kept, want %d", sum.Rows.Val, kept, want)
	}
	if !sum.Options.ValByRow {
		t.Error("the summary does not record the split by row")
	}
	sides := map[string]map[string]bool{}
	for _, part := range [][]data.Label{out.train, out.val} {
		for _, l := range part {
			if sides[l.QuestionID] == nil {
				sides[l.QuestionID] = map[string]bool{}
			}
			sides[l.QuestionID][l.Split] = true
		}
	}
	both := 0
	for _, s := range sides {
		if len(s) == 2 {
			both++
		}
	}
	if both == 0 {
		t.Error("no question has states on both sides: the rows were not split one by one")
	}
	keys := func(o output) []string {
		var k []string
		for _, l := range o.val {
			k = append(k, fmt.Sprint(l.Key()))
		}
		slices.Sort(k)
		return k
	}
	reversed := slices.Clone(rows)
	slices.Reverse(reversed)
	_, rev := run(t, reversed, opts)
	if diff := cmp.Diff(keys(out), keys(rev)); diff != "" {
		t.Errorf("reversed input, other val rows (-in order +reversed):\n%s", diff)
	}
}

// TestReferenceTruth drops by the authors' retrieval truth (raw substrings
// of the titles and the first answer in the context) instead of the
// label's own, with Options.ReferenceTruth.
func TestReferenceTruth(t *testing.T) {
	t.Parallel()
	withContext := func(ctx string, titles, answers []string) func(*data.Label) {
		return func(l *data.Label) { l.Context, l.GoldTitles, l.Answers = ctx, titles, answers }
	}
	rows := []data.Label{
		// Insufficient; by distill neither (the label says so), by the
		// authors' rules a strong positive: "Pari" and "1889" are in it.
		lbl("a", 1, insufficient(gap("attribute", "x", "y")), withContext("[Paris]\nIt opened in 1889.", []string{"Pari"}, []string{"1889"})),
		// Sufficient; a strong negative by distill, neither by the
		// authors' rules, which find the first answer as a substring.
		lbl("b", 1, asStrongNegative, withContext("[Rome]\nSeven hills, 753 BC.", []string{"Athens"}, []string{"753"})),
	}
	for _, tc := range []struct {
		reference bool
		want      map[string]int64
	}{
		{false, map[string]int64{RuleContradictsStrongNegative: 1}},
		{true, map[string]int64{RuleContradictsStrongPositive: 1}},
	} {
		sum, _ := run(t, rows, Options{ReferenceTruth: tc.reference, ValFraction: -1})
		if diff := cmp.Diff(tc.want, droppedByRule(sum)); diff != "" {
			t.Errorf("reference truth %v: dropped by rule (-want +got):\n%s", tc.reference, diff)
		}
		if sum.Options.ReferenceTruth != tc.reference {
			t.Errorf("filter.json's options say reference truth %v, want %v", sum.Options.ReferenceTruth, tc.reference)
		}
	}
}

// TestBalanceModes holds the authors' balancing options: upsampling the
// minority, only the rows retrieval truth does not settle, round by round.
func TestBalanceModes(t *testing.T) {
	t.Parallel()
	// Round 0: 6 sufficient, 2 insufficient; round 1: 2 sufficient, 4
	// insufficient. Two of round 0's sufficient rows are strong positives.
	var rows []data.Label
	for i := range 8 {
		var mods []func(*data.Label)
		switch {
		case i >= 6:
			mods = append(mods, insufficient(gap("attribute", "a", "b")))
		case i < 2:
			mods = append(mods, asStrongPositive)
		}
		rows = append(rows, lbl(fmt.Sprintf("r0-%d", i), 0, mods...))
	}
	for i := range 6 {
		var mods []func(*data.Label)
		if i >= 2 {
			mods = append(mods, insufficient(gap("attribute", "a", "b")))
		}
		rows = append(rows, lbl(fmt.Sprintf("r1-%d", i), 1, mods...))
	}
	classes := func(out output) map[int32][2]int { // by round: sufficient, insufficient
		m := map[int32][2]int{}
		for _, l := range out.train {
			c := m[l.Round]
			if l.Sufficient {
				c[0]++
			} else {
				c[1]++
			}
			m[l.Round] = c
		}
		return m
	}
	tests := []struct {
		name string
		opts Options
		want map[int32][2]int
	}{
		// 8 sufficient, 6 insufficient: 2 insufficient copies, in either
		// round (allRounds sums them).
		{"upsample", Options{BalanceUpsample: true}, map[int32][2]int{allRounds: {8, 8}}},
		{"upsample per round", Options{BalanceUpsample: true, BalancePerRound: true}, map[int32][2]int{0: {6, 6}, 1: {4, 4}}},
		{"downsample per round", Options{BalancePerRound: true}, map[int32][2]int{0: {2, 2}, 1: {2, 2}}},
		// Hard rows: 6 sufficient (the strong positives kept apart), 6
		// insufficient: nothing to do.
		{"hard only", Options{BalanceHardOnly: true}, map[int32][2]int{0: {6, 2}, 1: {2, 4}}},
		{"hard only, per round", Options{BalanceHardOnly: true, BalancePerRound: true}, map[int32][2]int{0: {4, 2}, 1: {2, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Balance, tt.opts.ValFraction = true, -1
			sum, out := run(t, rows, tt.opts)
			got := classes(out)
			if _, total := tt.want[allRounds]; total {
				got = map[int32][2]int{allRounds: {got[0][0] + got[1][0], got[0][1] + got[1][1]}}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("train classes by round (-want +got):\n%s", diff)
			}
			for _, l := range out.train {
				if l.TruthStrength == data.StrongPositive.String() && tt.opts.BalanceHardOnly && !l.Sufficient {
					t.Errorf("a strong positive changed class")
				}
			}
			if tt.opts.BalanceUpsample && (sum.Rows.Upsampled == 0 || sum.Rows.Dropped != 0) {
				t.Errorf("upsampling: %d copies, %d dropped; want some copies and nothing dropped", sum.Rows.Upsampled, sum.Rows.Dropped)
			}
		})
	}
}
