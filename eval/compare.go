package eval

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Benchmark is a benchmark's report and, when its directory has them, the
// per-question scores (ScoresFile) that paired comparisons need.
type Benchmark struct {
	Report Report
	// Scores are grouped by variant; nil without a scores file.
	Scores map[string][]ScoreRow
}

// OpenBenchmark reads a benchmark from its directory, or from its
// report.json with the scores file beside it when there is one.
func OpenBenchmark(path string) (Benchmark, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ReportJSON)
	}
	r, err := ReadReport(path)
	if err != nil {
		return Benchmark{}, err
	}
	bm := Benchmark{Report: r}
	scores := filepath.Join(filepath.Dir(path), ScoresFile)
	if _, err := os.Stat(scores); err == nil {
		if bm.Scores, err = ReadScores(scores); err != nil {
			return Benchmark{}, err
		}
	}
	return bm, nil
}

// Compare writes the difference between two benchmarks: for every variant
// present in both (matched by name, in a's order), or for each pair given
// (a variant of a, a variant of b: the trained judge of one run against
// the untuned one of another, say), each metric of a, of b, and b - a, in
// aligned columns, and, when both have per-question scores, the paired
// comparison of b's variant with a's over the questions both ran
// (ComparePaired); then the variants only one report has (without pairs).
// Numbers are shown at report.md's precision, and the difference is that
// of the numbers shown.
func Compare(w io.Writer, ba, bb Benchmark, pairs ...[2]string) error {
	a, b := ba.Report, bb.Report
	names := func(r Report) []string {
		out := make([]string, len(r.Variants))
		for i, v := range r.Variants {
			out[i] = v.Name
		}
		return out
	}
	an, bn := names(a), names(b)
	for _, pr := range pairs {
		switch {
		case !slices.Contains(an, pr[0]):
			return fmt.Errorf("compare reports: A has no variant %s (it has %s)", pr[0], strings.Join(an, ", "))
		case !slices.Contains(bn, pr[1]):
			return fmt.Errorf("compare reports: B has no variant %s (it has %s)", pr[1], strings.Join(bn, ", "))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "A: %s\n", describe(a))
	fmt.Fprintf(tw, "B: %s\n", describe(b))
	if a.Dataset != b.Dataset {
		fmt.Fprintf(tw, "note: the reports are on different datasets (%q, %q)\n", a.Dataset, b.Dataset)
	}
	var onlyA, onlyB []string
	byName := len(pairs) == 0
	if byName {
		for i, n := range an {
			switch {
			case !slices.Contains(bn, n):
				onlyA = append(onlyA, n)
			case slices.Index(an, n) == i: // a repeated name: the first one counts
				pairs = append(pairs, [2]string{n, n})
			}
		}
		for _, n := range bn {
			if !slices.Contains(an, n) && !slices.Contains(onlyB, n) {
				onlyB = append(onlyB, n)
			}
		}
	}
	for _, pr := range pairs {
		va, vb := a.Variants[slices.Index(an, pr[0])], b.Variants[slices.Index(bn, pr[1])]
		if pr[0] == pr[1] {
			fmt.Fprintf(tw, "\nvariant %s\n", va.Name)
		} else {
			fmt.Fprintf(tw, "\nvariant %s of A, %s of B\n", va.Name, vb.Name)
		}
		fmt.Fprintf(tw, "  metric\tA\tB\tB-A\n")
		for _, m := range scalarMetrics() {
			x, y := num(m.get(va.Metrics), m.prec), num(m.get(vb.Metrics), m.prec)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.name, x, y, difference(x, y, m.prec))
		}
		sa, sb := ba.Scores[va.Name], bb.Scores[vb.Name]
		if len(sa) > 0 && len(sb) > 0 {
			writePairedLines(tw, ComparePaired(sa, sb), len(sa), len(sb))
		}
	}
	if len(onlyA) > 0 {
		fmt.Fprintf(tw, "\nonly in A: %s\n", strings.Join(onlyA, ", "))
	}
	if len(onlyB) > 0 {
		fmt.Fprintf(tw, "\nonly in B: %s\n", strings.Join(onlyB, ", "))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("compare reports: %w", err)
	}
	return nil
}

// writePairedLines shows a paired comparison of B with A in words.
func writePairedLines(w io.Writer, p Paired, na, nb int) {
	level := num(100*(1-Confidence), 0) + "%"
	fmt.Fprintf(w, "  paired, B-A over the %d questions both ran", p.Questions)
	if p.Questions < na || p.Questions < nb {
		fmt.Fprintf(w, " (A ran %d, B %d)", na, nb)
	}
	fmt.Fprintf(w, ":\n    EM %s [95%% CI %s, %s], McNemar %s: %s\n", signed(p.EM.Diff, precPercent),
		signed(p.EM.Low, precPercent), signed(p.EM.High, precPercent), pWords(p.McNemarP), significance(p.EM.Significant, level))
	fmt.Fprintf(w, "    F1 %s [95%% CI %s, %s]: %s\n", signed(p.F1.Diff, precPercent),
		signed(p.F1.Low, precPercent), signed(p.F1.High, precPercent), significance(p.F1.Significant, level))
	fmt.Fprintf(w, "    B better on %d questions, worse on %d, the same on %d (F1); exact answers won %d, lost %d\n",
		p.Won, p.Lost, p.Tied, p.EMWon, p.EMLost)
	for _, d := range []struct {
		name string
		d    *Difference
	}{{"FP rate", p.FalsePositiveRate}, {"complete judged insufficient", p.CompleteJudgedInsufficient}} {
		if d.d != nil {
			fmt.Fprintf(w, "    %s %s [95%% CI %s, %s]: %s\n", d.name, signed(d.d.Diff, precRate),
				signed(d.d.Low, precRate), signed(d.d.High, precRate), significance(d.d.Significant, level))
		}
	}
}

// describe is the one-line summary of a report Compare starts with.
func describe(r Report) string {
	parts := []string{questions(r.Questions)}
	if !r.CreatedAt.IsZero() {
		parts = append(parts, r.CreatedAt.UTC().Format(time.RFC3339))
	}
	if r.Version != "" {
		parts = append(parts, r.Version)
	}
	dataset := r.Dataset
	if dataset == "" {
		dataset = "(unnamed dataset)"
	}
	return fmt.Sprintf("%s (%s)", dataset, strings.Join(parts, ", "))
}

// difference returns y - x of two numbers shown with prec digits, signed,
// with no sign for zero.
func difference(x, y string, prec int) string {
	fx, errx := strconv.ParseFloat(x, 64)
	fy, erry := strconv.ParseFloat(y, 64)
	if errx != nil || erry != nil {
		return "?"
	}
	return signed(fy-fx, prec)
}
