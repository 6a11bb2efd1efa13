package eval

import (
	"bytes"
	"strings"
	"testing"

	"github.com/distill-rag/distill/internal/testkit"
)

func TestCompare(t *testing.T) {
	a := testReport(t)
	b := testReport(t)
	b.Version = "v0.0.1-test"
	b.Variants[0].Metrics.EM = 45
	b.Variants[0].Metrics.Latency.Question.Median = 0.24
	b.Variants[1].Name = "summarize"
	var out bytes.Buffer
	if err := Compare(&out, Benchmark{Report: a}, Benchmark{Report: b}); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "compare.txt.golden", out.String())

	fields := func(metric string) []string {
		t.Helper()
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), metric+"  ") {
				return strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), metric))
			}
		}
		t.Fatalf("no line for %s in\n%s", metric, out.String())
		return nil
	}
	for _, tt := range []struct {
		metric string
		want   []string
	}{
		{"EM", []string{"40.0", "45.0", "+5.0"}},
		{"F1", []string{"50.0", "50.0", "0.0"}},
		{"latency median (s)", []string{"0.25", "0.24", "-0.01"}},
		{"FP rate (%)", []string{"20.00", "20.00", "0.00"}},
		{"questions", []string{"5", "5", "0"}},
	} {
		if got := fields(tt.metric); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%s: got %q, want %q", tt.metric, got, tt.want)
		}
	}
	for _, want := range []string{"only in A: no-judge", "only in B: summarize", "variant full"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Compare output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "variant no-judge") || strings.Contains(out.String(), "variant summarize") {
		t.Errorf("Compare compared a variant that only one report has:\n%s", out.String())
	}
	// The columns line up: in the block, every value of A starts where the
	// header's "A" does.
	col := -1
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "  metric"):
			col = strings.Index(line, " A ") + 1
		case col > 0 && strings.HasPrefix(line, "  "):
			if len(line) <= col || line[col-1] != ' ' || line[col] == ' ' {
				t.Errorf("line %q: the A value does not start at column %d", line, col)
			}
		}
	}
	if col <= 0 {
		t.Errorf("no header line in\n%s", out.String())
	}
}

func TestCompareDifferentDatasets(t *testing.T) {
	a, b := Report{Dataset: "hotpotqa"}, Report{Dataset: "2wikimultihopqa"}
	var out bytes.Buffer
	if err := Compare(&out, Benchmark{Report: a}, Benchmark{Report: b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "different datasets") {
		t.Errorf("Compare of two datasets does not say so:\n%s", out.String())
	}
}

func TestDifference(t *testing.T) {
	tests := []struct {
		x, y string
		prec int
		want string
	}{
		{"40.0", "45.0", 1, "+5.0"},
		{"45.0", "40.0", 1, "-5.0"},
		{"0.25", "0.24", 2, "-0.01"},
		{"1.0", "1.0", 1, "0.0"},
		{"3", "7", 0, "+4"},
		{"0.3461", "0.3500", 4, "+0.0039"},
	}
	for _, tt := range tests {
		if got := difference(tt.x, tt.y, tt.prec); got != tt.want {
			t.Errorf("difference(%s, %s, %d) = %q, want %q", tt.x, tt.y, tt.prec, got, tt.want)
		}
	}
}

func TestComparePairedScores(t *testing.T) {
	a, b := testReport(t), testReport(t)
	sa := map[string][]ScoreRow{"full": rows("full", []float64{1, 0, 0}, []float64{1, 0, 0.5})}
	sb := map[string][]ScoreRow{"full": rows("full", []float64{1, 1, 0, 1}, []float64{1, 1, 0.5, 1})}
	var out bytes.Buffer
	if err := Compare(&out, Benchmark{Report: a, Scores: sa}, Benchmark{Report: b, Scores: sb}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"paired, B-A over the 3 questions both ran (A ran 3, B 4):",
		"EM +33.3 [95% CI 0.0, +100.0], McNemar p = 1.000: not significant at the 5% level",
		"B better on 1 questions, worse on 0, the same on 2 (F1); exact answers won 1, lost 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "variant no-judge\n") && strings.Count(out.String(), "paired,") != 1 {
		t.Errorf("only full has scores in both, want one paired block:\n%s", out.String())
	}
}

// TestComparePairs: a pair compares a variant of A with another of B,
// paired by question, and a variant a report lacks is an error.
func TestComparePairs(t *testing.T) {
	a, b := testReport(t), testReport(t)
	sa := map[string][]ScoreRow{"full": rows("full", []float64{1, 1, 0}, []float64{1, 1, 0.5})}
	sb := map[string][]ScoreRow{"no-judge": rows("no-judge", []float64{0, 1, 0}, []float64{0, 1, 0.5})}
	var out bytes.Buffer
	if err := Compare(&out, Benchmark{Report: a, Scores: sa}, Benchmark{Report: b, Scores: sb}, [2]string{"full", "no-judge"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"variant full of A, no-judge of B\n", "paired, B-A over the 3 questions both ran:", "B better on 0 questions, worse on 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "only in") || strings.Count(out.String(), "\nvariant ") != 1 {
		t.Errorf("with a pair, only that pair is compared:\n%s", out.String())
	}
	if err := Compare(&out, Benchmark{Report: a}, Benchmark{Report: b}, [2]string{"full", "no-such"}); err == nil || !strings.Contains(err.Error(), "B has no variant no-such") {
		t.Errorf("a missing variant: %v", err)
	}
}
