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

// TestScoreTable: the table a benchmark keeps gives the paired statistics
// and the question ids that the rows themselves give, whether the baseline
// comes first or after other variants.
func TestScoreTable(t *testing.T) {
	for _, names := range [][]string{{Baseline, "no-judge", "no-sft"}, {"no-judge", Baseline, "no-sft"}} {
		rng := rand.New(rand.NewPCG(3, 4))
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
		if diff := cmp.Diff(wantIDs, slices.Collect(tab.ids.all())); diff != "" {
			t.Errorf("ids (-want +got):\n%s", diff)
		}
		want := PairedAgainstBaseline(names, byVariant)
		got := tab.paired(names)
		if !cmp.Equal(got, want) {
			t.Errorf("%v: paired differs from PairedAgainstBaseline:\n%s", names, cmp.Diff(want, got))
		}
		if len(got) != 2 || got[0].Questions == 0 || got[1].Questions == 0 {
			t.Errorf("%v: got %d comparisons (%+v), want two of the shared questions", names, len(got), got)
		}
		if again := tab.paired(names); !cmp.Equal(again, got) {
			t.Errorf("%v: paired a second time differs:\n%s", names, cmp.Diff(got, again))
		}
	}
	if got := newScoreTable().paired([]string{Baseline, "no-sft"}); got != nil {
		t.Errorf("no rows: got %+v, want no comparison", got)
	}
}

// TestPairedOrderFree: the statistics of the same questions are the same,
// to the bit, whatever order their rows come in (a resumed benchmark reads
// its trajectories in another order).
func TestPairedOrderFree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var base, v []ScoreRow
	for i := range 400 {
		id := fmt.Sprintf("q%03d", i)
		base = append(base, ScoreRow{Variant: Baseline, ID: id, EM: float64(rng.IntN(2)), F1: rng.Float64(),
			Calibration: Confusion{TP: rng.IntN(3), FP: rng.IntN(2), FN: rng.IntN(2), TN: rng.IntN(3)}})
		v = append(v, ScoreRow{Variant: "v", ID: id, EM: float64(rng.IntN(2)), F1: rng.Float64(),
			Calibration: Confusion{TP: rng.IntN(3), FP: rng.IntN(2), FN: rng.IntN(2), TN: rng.IntN(3)}})
	}
	want := ComparePaired(base, v)
	for range 3 {
		b2, v2 := slices.Clone(base), slices.Clone(v)
		rng.Shuffle(len(b2), func(i, j int) { b2[i], b2[j] = b2[j], b2[i] })
		rng.Shuffle(len(v2), func(i, j int) { v2[i], v2[j] = v2[j], v2[i] })
		if got := ComparePaired(b2, v2); !cmp.Equal(got, want) {
			t.Fatalf("shuffled rows give other statistics:\n%s", cmp.Diff(want, got))
		}
	}
	if want.FalsePositiveRate == nil || want.CompleteJudgedInsufficient == nil {
		t.Errorf("calibration differences missing: %+v", want)
	}
}

// TestPoissonStream: the resampling weights are Poisson of mean 1 (mean
// and variance 1, P(0) = 1/e), and a question's weights are its own.
func TestPoissonStream(t *testing.T) {
	var n, sum, sq, zeros float64
	for q := range 200 {
		g := newPoissonStream(fmt.Sprintf("question-%d", q))
		for range BootstrapResamples {
			k := float64(g.next())
			n++
			sum += k
			sq += k * k
			if k == 0 {
				zeros++
			}
		}
	}
	mean := sum / n
	variance := sq/n - mean*mean
	if math.Abs(mean-1) > 0.01 || math.Abs(variance-1) > 0.02 || math.Abs(zeros/n-math.Exp(-1)) > 0.003 {
		t.Errorf("weights: mean %.4f, variance %.4f, P(0) %.4f; want 1, 1, %.4f", mean, variance, zeros/n, math.Exp(-1))
	}
	a, b := newPoissonStream("q1"), newPoissonStream("q1")
	c := newPoissonStream("q2")
	same, differ := true, false
	for range 100 {
		x, y, z := a.next(), b.next(), c.next()
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("a question's weights: the same id repeats them %v, another id differs %v; want both", same, differ)
	}
}

func TestReadScoresRange(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{`{"variant":"full","id":"a","em":2,"f1":0.5}`, `line 2: question "a": em 2 and f1 0.5 must be within [0, 1]`},
		{`{"variant":"full","id":"a","em":1,"f1":-0.1}`, `line 2: question "a": em 1 and f1 -0.1 must be within [0, 1]`},
		{`{"variant":"full","id":"a","em":1,"f1":1,"calibration":{"fp":-1}}`, `line 2: question "a": calibration count -1 out of range`},
	} {
		path := filepath.Join(t.TempDir(), ScoresFile)
		body := `{"variant":"full","id":"b","em":1,"f1":1}` + "\n" + tt.line + "\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadScores(path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.line, err, tt.want)
		}
	}
}

// BenchmarkPairedAcc: one comparison of 10,000 questions (the bootstrap's
// work is questions x BootstrapResamples).
func BenchmarkPairedAcc(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	ids := make([]string, 10000)
	base, v := make([]pairScores, len(ids)), make([]pairScores, len(ids))
	for i := range ids {
		ids[i] = fmt.Sprintf("q%06d", i)
		base[i] = pairScores{em: float64(rng.IntN(2)), f1: rng.Float64(), cal: [4]int32{1, 0, 1, 2}}
		v[i] = pairScores{em: float64(rng.IntN(2)), f1: rng.Float64()}
	}
	for b.Loop() {
		var a pairedAcc
		for i, id := range ids {
			a.add(id, base[i], v[i])
		}
		a.paired()
	}
}
