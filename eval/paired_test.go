package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		b, c int
		want float64
	}{
		{0, 0, 1},
		{1, 0, 1},
		{3, 3, 1},
		{5, 0, 2.0 / 32},
		{0, 5, 2.0 / 32},
		{10, 2, 2 * (1 + 12 + 66) / 4096.0},
		// 2 * sum(comb(100, k) for k in range(41)) / 2**100, in Python
		{40, 60, 0.056887933640980784},
	}
	for _, tt := range tests {
		if got := mcNemarExact(tt.b, tt.c); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("mcNemarExact(%d, %d) = %v, want %v", tt.b, tt.c, got, tt.want)
		}
	}
}

// rows makes the score rows of a variant from EM and F1 per question.
func rows(variant string, em, f1 []float64) []ScoreRow {
	out := make([]ScoreRow, len(em))
	for i := range em {
		out[i] = ScoreRow{Variant: variant, ID: string(rune('a' + i)), EM: em[i], F1: f1[i]}
	}
	return out
}

func TestComparePaired(t *testing.T) {
	base := rows("full", []float64{1, 1, 0, 0, 1}, []float64{1, 1, 0.5, 0, 1})
	same := rows("same", []float64{1, 1, 0, 0, 1}, []float64{1, 1, 0.5, 0, 1})
	got := ComparePaired(base, same)
	want := Paired{Variant: "same", Baseline: "full", Questions: 5, McNemarP: 1, Tied: 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identical variants (-want +got):\n%s", diff)
	}

	better := rows("better", []float64{1, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1})
	better = append(better, ScoreRow{Variant: "better", ID: "only-here", EM: 1, F1: 1})
	got = ComparePaired(base, better)
	if got.Questions != 5 || got.EMWon != 2 || got.EMLost != 0 || got.Won != 2 || got.Tied != 3 {
		t.Errorf("better: got %+v, want 5 paired questions, 2 won on EM and F1, 3 tied", got)
	}
	if got.EM.Diff != 40 || got.F1.Diff != 30 {
		t.Errorf("better: EM Δ %v, F1 Δ %v; want 40 and 30", got.EM.Diff, got.F1.Diff)
	}
	if got.EM.Significant {
		t.Errorf("better: 2 discordant pairs are not significant (p %v)", got.McNemarP)
	}
	if !(got.F1.Low <= got.F1.Diff && got.F1.Diff <= got.F1.High) || got.F1.Low < 0 || got.F1.High > 100 {
		t.Errorf("better: F1 interval [%v, %v] should hold %v and stay within [0, 100]", got.F1.Low, got.F1.High, got.F1.Diff)
	}
	if again := ComparePaired(base, better); !cmp.Equal(got, again) {
		t.Errorf("the bootstrap is not deterministic: %+v then %+v", got, again)
	}
}

// TestComparePairedInterval checks the bootstrap interval of a mean
// difference against the normal approximation, which agrees closely with it
// for 2,000 questions.
func TestComparePairedInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 2000
	em0, em1, f0, f1 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		em0[i], em1[i] = float64(r.IntN(2)), float64(r.IntN(2))
		f0[i], f1[i] = r.Float64(), r.Float64()
	}
	got := ComparePaired(rows("full", em0, f0), rows("v", em1, f1))
	var mean, sq float64
	for i := range n {
		mean += f1[i] - f0[i]
	}
	mean /= float64(n)
	for i := range n {
		d := f1[i] - f0[i] - mean
		sq += d * d
	}
	half := 100 * 1.96 * math.Sqrt(sq/float64(n-1)/float64(n))
	if math.Abs(got.F1.Low-(100*mean-half)) > 0.3 || math.Abs(got.F1.High-(100*mean+half)) > 0.3 {
		t.Errorf("F1 interval [%v, %v], want about [%v, %v]", got.F1.Low, got.F1.High, 100*mean-half, 100*mean+half)
	}
	if got.F1.Significant != (got.F1.Low > 0 || got.F1.High < 0) {
		t.Errorf("F1 significance %v does not follow its interval [%v, %v]", got.F1.Significant, got.F1.Low, got.F1.High)
	}
	if got.EM.Significant != (got.McNemarP < 0.05) {
		t.Errorf("EM significance %v does not follow McNemar's p %v", got.EM.Significant, got.McNemarP)
	}
}

func TestComparePairedCalibration(t *testing.T) {
	base := []ScoreRow{
		{Variant: "full", ID: "a", Calibration: Confusion{FP: 1, TN: 3, TP: 1}},
		{Variant: "full", ID: "b", Calibration: Confusion{TN: 4, FN: 1}},
	}
	v := []ScoreRow{
		{Variant: "v", ID: "a", Calibration: Confusion{FP: 3, TN: 1, TP: 1}},
		{Variant: "v", ID: "b", Calibration: Confusion{FP: 2, TN: 2}},
	}
	got := ComparePaired(base, v)
	// FP rate: 5/8 against 1/8; complete judged insufficient: 0/1 against 1/2.
	if got.FalsePositiveRate == nil || got.FalsePositiveRate.Diff != 50 {
		t.Errorf("FP rate Δ: got %+v, want 50", got.FalsePositiveRate)
	}
	if got.CompleteJudgedInsufficient == nil || got.CompleteJudgedInsufficient.Diff != -50 {
		t.Errorf("complete judged insufficient Δ: got %+v, want -50", got.CompleteJudgedInsufficient)
	}
	if none := ComparePaired(rows("full", []float64{1}, []float64{1}), rows("v", []float64{1}, []float64{1})); none.FalsePositiveRate != nil {
		t.Errorf("no judge calls: got an FP rate difference %+v", none.FalsePositiveRate)
	}
}

func TestPairedAgainstBaseline(t *testing.T) {
	rs := map[string][]ScoreRow{
		"full":   rows("full", []float64{1}, []float64{1}),
		"no-sft": rows("no-sft", []float64{0}, []float64{0}),
	}
	got := PairedAgainstBaseline([]string{"full", "no-sft"}, rs)
	if len(got) != 1 || got[0].Variant != "no-sft" || got[0].Baseline != "full" || got[0].EMLost != 1 {
		t.Errorf("got %+v, want one comparison of no-sft with full", got)
	}
	if got := PairedAgainstBaseline([]string{"no-sft"}, map[string][]ScoreRow{"no-sft": rs["no-sft"]}); got != nil {
		t.Errorf("without full: got %+v, want none", got)
	}
}

// TestScoreTable: the compact table a benchmark keeps gives back the rows,
// the scores.jsonl lines, the paired statistics and the question ids that
// the rows themselves give.
func TestScoreTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"no-judge", Baseline, "no-sft"}
	byVariant := map[string][]ScoreRow{}
	tab := newScoreTable()
	var wantIDs []string
	for vi, name := range names {
		perm := rng.Perm(300)
		for _, i := range perm[:250+vi*20] { // the variants share most questions, not all
			id := fmt.Sprintf("q%03d", i)
			if !slices.Contains(wantIDs, id) {
				wantIDs = append(wantIDs, id)
			}
			r := ScoreRow{Variant: name, ID: id, EM: float64(rng.IntN(2)), F1: rng.Float64(),
				Calibration: Confusion{TP: rng.IntN(3), FP: rng.IntN(3), FN: rng.IntN(3), TN: rng.IntN(4)}}
			byVariant[name] = append(byVariant[name], r)
			if _, err := tab.add(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A question a variant gave before is an error, and adds nothing.
	again := byVariant["no-sft"][7]
	if _, err := tab.add(again); err == nil || !strings.Contains(err.Error(), "question "+again.ID+": its rows are not together") {
		t.Errorf("a question twice: got %v, want an error naming it", err)
	}
	for _, name := range names {
		if got := slices.Collect(tab.rows(name)); !cmp.Equal(got, byVariant[name]) {
			t.Errorf("rows(%s) differ from the rows added: %s", name, cmp.Diff(byVariant[name], got))
		}
	}
	if diff := cmp.Diff(wantIDs, slices.Collect(tab.ids.all())); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	want := PairedAgainstBaseline(names, byVariant)
	if got := tab.paired(names); !cmp.Equal(got, want) {
		t.Errorf("paired differs from PairedAgainstBaseline:\n%s", cmp.Diff(want, got))
	}
	var b strings.Builder
	if err := tab.write(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ScoresFile)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadScores(path)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(back, byVariant) {
		t.Errorf("scores.jsonl read back differs: %s", cmp.Diff(byVariant, back))
	}
	if got := newScoreTable().paired(names); got != nil {
		t.Errorf("no rows: got %+v, want no comparison", got)
	}
}
