package eval

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Compare writes the difference between two reports: for every variant
// present in both (matched by name, in a's order), each metric of a, of b,
// and b - a, in aligned columns; then the variants only one report has.
// Numbers are shown at report.md's precision, and the difference is that of
// the numbers shown.
func Compare(w io.Writer, a, b Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "A: %s\n", describe(a))
	fmt.Fprintf(tw, "B: %s\n", describe(b))
	if a.Dataset != b.Dataset {
		fmt.Fprintf(tw, "note: the reports are on different datasets (%q, %q)\n", a.Dataset, b.Dataset)
	}
	names := func(r Report) []string {
		out := make([]string, len(r.Variants))
		for i, v := range r.Variants {
			out[i] = v.Name
		}
		return out
	}
	an, bn := names(a), names(b)
	var onlyA, onlyB []string
	for i, va := range a.Variants {
		j := slices.Index(bn, va.Name)
		if j < 0 {
			onlyA = append(onlyA, va.Name)
			continue
		}
		if slices.Index(an, va.Name) != i {
			continue // a repeated name: the first one counts
		}
		vb := b.Variants[j]
		fmt.Fprintf(tw, "\nvariant %s\n", va.Name)
		fmt.Fprintf(tw, "  metric\tA\tB\tB-A\n")
		for _, m := range scalarMetrics() {
			x, y := num(m.get(va.Metrics), m.prec), num(m.get(vb.Metrics), m.prec)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.name, x, y, difference(x, y, m.prec))
		}
	}
	for _, n := range bn {
		if !slices.Contains(an, n) && !slices.Contains(onlyB, n) {
			onlyB = append(onlyB, n)
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

// describe is the one-line summary of a report Compare starts with.
func describe(r Report) string {
	parts := []string{fmt.Sprintf("%d questions", r.Questions)}
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
	d := num(fy-fx, prec)
	if f, _ := strconv.ParseFloat(d, 64); f == 0 {
		return num(0, prec)
	}
	if !strings.HasPrefix(d, "-") {
		d = "+" + d
	}
	return d
}
