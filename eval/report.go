package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
)

// VariantReport is one variant's numbers in a report.
type VariantReport struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Metrics     Metrics `json:"metrics"`
	// Roles maps each role (judge, extractor, reader, ...) to the model
	// that played it.
	Roles map[string]string `json:"roles,omitempty"`
}

// Report is the result of a benchmark on one dataset: what report.json
// holds and report.md shows.
type Report struct {
	Dataset   string          `json:"dataset"`
	Questions int             `json:"questions"`
	Variants  []VariantReport `json:"variants"`
	CreatedAt time.Time       `json:"created_at"`
	// Version is the toolkit's version that made the report.
	Version string `json:"version,omitempty"`
	// Paper holds reference EM and F1 numbers (percent) to show beside the
	// variants', keyed by variant name; see PaperHotpotQABM25.
	Paper map[string][2]float64 `json:"paper,omitempty"`
	// Scoring is how EM and F1 treated empty answers (ScoringReference
	// when empty, as in reports written before it was recorded).
	Scoring Scoring `json:"scoring,omitempty"`
	// TitleMatch is how gold titles were compared ("reference", or empty
	// for exact titles).
	TitleMatch TitleMatch `json:"title_match,omitempty"`
	// Paired compares every variant with full question by question
	// (ComparePaired); Bootstrap says how its intervals were computed.
	Paired    []Paired   `json:"paired,omitempty"`
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
	// Leakage sets the questions against the trained judge's training
	// questions (nil without a trained judge).
	Leakage *Leakage `json:"leakage,omitempty"`
}

// Bootstrap records the settings of a report's bootstrap intervals.
type Bootstrap struct {
	// Method is how the questions are resampled: "poisson" (each question
	// weighed by a Poisson(1) draw of its own, seeded by Seed and its id;
	// see pairedAcc). Reports from before it was recorded resampled n of
	// n questions with replacement.
	Method     string  `json:"method,omitempty"`
	Resamples  int     `json:"resamples"`
	Seed       uint64  `json:"seed"`
	Confidence float64 `json:"confidence"`
}

// bootstrapSettings are the settings ComparePaired uses.
func bootstrapSettings() *Bootstrap {
	return &Bootstrap{Method: BootstrapMethod, Resamples: BootstrapResamples, Seed: BootstrapSeed, Confidence: Confidence}
}

// pairedOf returns the paired comparison of a variant, nil if it has none.
func (r Report) pairedOf(variant string) *Paired {
	for i := range r.Paired {
		if r.Paired[i].Variant == variant {
			return &r.Paired[i]
		}
	}
	return nil
}

// PaperHotpotQABM25 returns the paper's EM and F1 on HotpotQA with BM25
// for the variants it reports (its ablation and compression tables), keyed
// by variant name. The map is a fresh copy.
func PaperHotpotQABM25() map[string][2]float64 {
	return map[string][2]float64{
		"full":         {43.3, 56.5},
		"no-sft":       {39.2, 50.8},
		"no-judge":     {27.5, 37.6},
		"no-extractor": {39.5, 52.5},
		"summarize":    {36.9, 48.1},
		"extractive":   {41.4, 53.8},
		"abstractive":  {34.9, 46.4},
	}
}

// WriteJSON writes r as indented JSON (report.json).
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report json: %w", err)
	}
	return nil
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, fmt.Errorf("read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("read report %s: %w", path, err)
	}
	return r, nil
}

// The precision each kind of number is shown with, in report.md and by
// Compare. EM and F1 have one decimal like the paper's tables; the
// calibration rates two, like its 6.44%; ratios four, like its 0.3461.
const (
	precPercent = 1
	precRate    = 2
	precRatio   = 4
	precMean    = 2
	precSeconds = 2
	precUSD     = 4
	precP       = 3
)

// metric is one scalar of Metrics, with how to show it.
type metric struct {
	name string
	prec int // digits after the point; 0 for counts
	get  func(Metrics) float64
}

// scalarMetrics lists the scalars of Metrics that Compare shows.
func scalarMetrics() []metric {
	return []metric{
		{"questions", 0, func(m Metrics) float64 { return float64(m.Questions) }},
		{"failed", 0, func(m Metrics) float64 { return float64(m.Failed) }},
		{"EM", precPercent, func(m Metrics) float64 { return m.EM }},
		{"F1", precPercent, func(m Metrics) float64 { return m.F1 }},
		{"correct retrieval (%)", precPercent, func(m Metrics) float64 { return m.CorrectRetrieval }},
		{"gold-title recall (%)", precPercent, func(m Metrics) float64 { return m.GoldTitleRecall }},
		{"answer in evidence (%)", precPercent, func(m Metrics) float64 { return m.AnswerInEvidence }},
		{"premature stops (%)", precPercent, func(m Metrics) float64 { return m.Premature }},
		{"judged states", 0, func(m Metrics) float64 { return float64(m.Calibration.States) }},
		{"FP rate (%)", precRate, func(m Metrics) float64 { return m.Calibration.FalsePositiveRate }},
		{"complete judged insufficient (%)", precRate, func(m Metrics) float64 { return m.Calibration.CompleteJudgedInsufficient }},
		{"mean rounds", precMean, func(m Metrics) float64 { return m.MeanRounds }},
		{"compression ratio", precRatio, func(m Metrics) float64 { return m.Compression.Ratio }},
		{"mean compression ratio", precRatio, func(m Metrics) float64 { return m.Compression.MeanRatio }},
		{"mean evidence tokens", precMean, func(m Metrics) float64 { return m.Compression.MeanEvidenceTokens }},
		{"latency median (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Question.Median }},
		{"latency p90 (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Question.P90 }},
		{"latency mean (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Question.Mean }},
		{"judge median (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Judge.Median }},
		{"retrieve median (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Retrieve.Median }},
		{"extract median (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Extract.Median }},
		{"read median (s)", precSeconds, func(m Metrics) float64 { return m.Latency.Read.Median }},
		{"cost (USD)", precUSD, func(m Metrics) float64 { return m.CostUSD }},
	}
}

// num formats x with prec digits after the point.
func num(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

// WriteMarkdown writes r as report.md: the headline table in the shape of
// the paper's (variants by EM, F1, correct retrieval, rounds, compression,
// latency and cost), then retrieval and evidence, sufficiency calibration,
// rounds, end reasons, gap categories, latency per stage and usage. Every
// number is a number of report.json rounded to the precision shown.
func WriteMarkdown(w io.Writer, r Report) error {
	var b bytes.Buffer
	dataset := r.Dataset
	if dataset == "" {
		dataset = "(unnamed dataset)"
	}
	fmt.Fprintf(&b, "# Benchmark: %s\n\n", mdEscape(dataset))
	b.WriteString(questions(r.Questions))
	if !r.CreatedAt.IsZero() {
		fmt.Fprintf(&b, ", %s", r.CreatedAt.UTC().Format(time.RFC3339))
	}
	if r.Version != "" {
		fmt.Fprintf(&b, ", distill %s", mdEscape(r.Version))
	}
	b.WriteString(".\n\n")
	b.WriteString(r.Leakage.words())

	writeHeadline(&b, r)
	writeVariants(&b, r)
	writeEvidence(&b, r)
	writeCalibration(&b, r)
	writeRounds(&b, r)
	writeEndReasons(&b, r)
	writeGaps(&b, r)
	writeStages(&b, r)
	writeUsage(&b, r)

	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write report markdown: %w", err)
	}
	return nil
}

func writeHeadline(b *bytes.Buffer, r Report) {
	b.WriteString("## Results\n\n")
	withPaper := false
	for _, v := range r.Variants {
		if _, ok := r.Paper[v.Name]; ok {
			withPaper = true
		}
	}
	t := table{header: []string{"variant", "EM", "F1"}}
	if withPaper {
		t.header = append(t.header, "paper EM", "paper F1")
	}
	if len(r.Paired) > 0 {
		t.header = append(t.header, "EM Δ vs full [95% CI]", "McNemar p", "F1 Δ vs full [95% CI]", "won / lost / tied")
	}
	t.header = append(t.header, "correct retrieval (%)", "mean rounds", "compression ratio",
		"latency median (s)", "latency p90 (s)", "cost (USD)")
	for _, v := range r.Variants {
		m := v.Metrics
		row := []string{v.Name, num(m.EM, precPercent), num(m.F1, precPercent)}
		if withPaper {
			if p, ok := r.Paper[v.Name]; ok {
				row = append(row, num(p[0], precPercent), num(p[1], precPercent))
			} else {
				row = append(row, "-", "-")
			}
		}
		if len(r.Paired) > 0 {
			if p := r.pairedOf(v.Name); p != nil {
				row = append(row, diffCell(p.EM, precPercent), pValue(p.McNemarP), diffCell(p.F1, precPercent),
					fmt.Sprintf("%d / %d / %d", p.Won, p.Lost, p.Tied))
			} else {
				row = append(row, "-", "-", "-", "-")
			}
		}
		row = append(row, num(m.CorrectRetrieval, precPercent), num(m.MeanRounds, precMean),
			num(m.Compression.Ratio, precRatio), num(m.Latency.Question.Median, precSeconds),
			num(m.Latency.Question.P90, precSeconds), num(m.CostUSD, precUSD))
		t.rows = append(t.rows, row)
	}
	t.write(b)
	fmt.Fprintf(b, "EM and F1: SQuAD normalisation, best over the gold answers, in percent; a failed question scores 0; %s. ", scoringNote(r.Scoring))
	b.WriteString(
		"Correct retrieval: every gold title retrieved. Compression ratio: evidence context characters over raw retrieved document characters. " +
			"Latency: wall time per question.\n\n")
	writePairedWords(b, r)
}

// writePairedWords says in words what the paired comparisons with full
// show, and how they were computed.
func writePairedWords(b *bytes.Buffer, r Report) {
	if len(r.Paired) == 0 {
		return
	}
	bs := r.Bootstrap
	if bs == nil {
		bs = bootstrapSettings()
	}
	method := ""
	if bs.Method != "" {
		method = strings.ToUpper(bs.Method[:1]) + bs.Method[1:] + " "
	}
	fmt.Fprintf(b, "Against %s, question by question (Δ: the variant minus %s, in points; %.0f%% intervals from %d %sbootstrap resamples of the questions, seed %d; "+
		"McNemar's exact test on the questions one variant answers exactly and the other not; won / lost / tied by F1):\n\n",
		Baseline, Baseline, 100*bs.Confidence, bs.Resamples, method, bs.Seed)
	level := num(100*(1-bs.Confidence), 0) + "%"
	ci := num(100*bs.Confidence, 0) + "%"
	for _, p := range r.Paired {
		fmt.Fprintf(b, "- %s (%s): EM %s points (McNemar %s), %s; F1 %s points (%s CI %s to %s), %s; %s won and %d lost on EM, %d won and %d lost on F1.\n",
			mdEscape(p.Variant), questions(p.Questions), signed(p.EM.Diff, precPercent), pWords(p.McNemarP), significance(p.EM.Significant, level),
			signed(p.F1.Diff, precPercent), ci, signed(p.F1.Low, precPercent), signed(p.F1.High, precPercent), significance(p.F1.Significant, level),
			questions(p.EMWon), p.EMLost, p.Won, p.Lost)
	}
	b.WriteString("\nA difference that is not significant is one that these questions cannot tell from chance.\n\n")
}

// questions returns "1 question" or "n questions".
func questions(n int) string {
	if n == 1 {
		return "1 question"
	}
	return fmt.Sprintf("%d questions", n)
}

// significance says in words whether a difference is significant.
func significance(significant bool, level string) string {
	if significant {
		return "significant at the " + level + " level"
	}
	return "not significant at the " + level + " level"
}

// pValue shows a p-value with three digits, "<0.001" below them.
func pValue(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return num(p, precP)
}

// pWords is "p = 0.123", or "p < 0.001".
func pWords(p float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	return "p = " + num(p, precP)
}

// diffCell shows a difference and its interval in one table cell.
func diffCell(d Difference, prec int) string {
	return fmt.Sprintf("%s [%s, %s]", signed(d.Diff, prec), signed(d.Low, prec), signed(d.High, prec))
}

// signed formats x with prec digits and a sign, none for zero.
func signed(x float64, prec int) string {
	s := num(x, prec)
	if f, _ := strconv.ParseFloat(s, 64); f == 0 {
		return num(0, prec)
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

// scoringNote says in words how a report's scoring treated empty answers.
func scoringNote(s Scoring) string {
	if s.orDefault() == ScoringSQuAD {
		return "scoring squad (SQuAD v1.1: two answers that normalise to the empty string score F1 0)"
	}
	return "scoring reference (the method's: two answers that normalise to the empty string score F1 1)"
}

func writeVariants(b *bytes.Buffer, r Report) {
	b.WriteString("## Variants\n\n")
	t := table{header: []string{"variant", "description", "roles"}, left: 3}
	for _, v := range r.Variants {
		var roles []string
		for _, role := range slices.Sorted(maps.Keys(v.Roles)) {
			roles = append(roles, role+": "+v.Roles[role])
		}
		t.rows = append(t.rows, []string{v.Name, v.Description, strings.Join(roles, "; ")})
	}
	t.write(b)
}

func writeEvidence(b *bytes.Buffer, r Report) {
	b.WriteString("## Retrieval and evidence\n\n")
	t := table{header: []string{"variant", "questions", "failed", "gold-title questions", "gold-title recall (%)",
		"answer in evidence (%)", "premature stops (%)", "evidence chars", "raw chars", "mean compression ratio",
		"evidence tokens", "mean evidence tokens"}}
	for _, v := range r.Variants {
		m := v.Metrics
		c := m.Compression
		t.rows = append(t.rows, []string{v.Name, strconv.Itoa(m.Questions), strconv.Itoa(m.Failed),
			strconv.Itoa(m.GoldTitleQuestions), num(m.GoldTitleRecall, precPercent),
			num(m.AnswerInEvidence, precPercent), num(m.Premature, precPercent),
			strconv.FormatInt(c.EvidenceChars, 10), strconv.FormatInt(c.RawChars, 10), num(c.MeanRatio, precRatio),
			strconv.FormatInt(c.EvidenceTokens, 10), num(c.MeanEvidenceTokens, precMean)})
	}
	t.write(b)
	b.WriteString("Premature stops: completed questions that stopped on a sufficient verdict without the gold evidence. " +
		"Evidence tokens: cl100k_base.\n\n")
}

func writeCalibration(b *bytes.Buffer, r Report) {
	b.WriteString("## Sufficiency calibration\n\n")
	t := table{header: []string{"variant", "states", "TP", "FP", "FN", "TN", "FP rate (%)",
		"complete judged insufficient (%)", "unmeasured states"}}
	if len(r.Paired) > 0 {
		t.header = append(t.header, "FP rate Δ vs full [95% CI]", "complete judged insufficient Δ vs full [95% CI]")
	}
	var words []string
	for _, v := range r.Variants {
		c := v.Metrics.Calibration
		row := []string{v.Name, strconv.Itoa(c.States),
			strconv.Itoa(c.Confusion.TP), strconv.Itoa(c.Confusion.FP), strconv.Itoa(c.Confusion.FN), strconv.Itoa(c.Confusion.TN),
			num(c.FalsePositiveRate, precRate), num(c.CompleteJudgedInsufficient, precRate), strconv.Itoa(c.Unmeasured)}
		if len(r.Paired) > 0 {
			p := r.pairedOf(v.Name)
			for _, d := range []struct {
				name string
				get  func(*Paired) *Difference
			}{
				{"FP rate", func(p *Paired) *Difference { return p.FalsePositiveRate }},
				{"complete judged insufficient", func(p *Paired) *Difference { return p.CompleteJudgedInsufficient }},
			} {
				if p == nil || d.get(p) == nil {
					row = append(row, "-")
					continue
				}
				x := d.get(p)
				row = append(row, diffCell(*x, precRate))
				if !x.Significant {
					words = append(words, fmt.Sprintf("%s's %s", v.Name, d.name))
				}
			}
		}
		t.rows = append(t.rows, row)
	}
	t.write(b)
	if len(words) > 0 {
		fmt.Fprintf(b, "Not significant against %s (the interval holds 0): %s.\n\n", Baseline, mdEscape(strings.Join(words, ", ")))
	}
	b.WriteString("Every judge call against retrieval truth, the one the built-in teacher and the filter use (the gold evidence is there: at least 70% of the gold titles, so all of them below four, and the answer; " +
		"for yes/no and comparison questions the supporting sentences, or every gold title, instead of the answer string). " +
		"FP rate: judged sufficient among states without the gold evidence, FP/(FP+TN). " +
		"Complete judged insufficient: FN/(TP+FN). Unmeasured: states of questions without gold titles.\n\n")
}

func writeRounds(b *bytes.Buffer, r Report) {
	b.WriteString("## Rounds\n\n")
	n := 0
	for _, v := range r.Variants {
		n = max(n, len(v.Metrics.Rounds))
	}
	t := table{header: []string{"variant"}}
	for i := range n {
		t.header = append(t.header, strconv.Itoa(i))
	}
	t.header = append(t.header, "mean")
	for _, v := range r.Variants {
		row := []string{v.Name}
		for i := range n {
			c := 0
			if i < len(v.Metrics.Rounds) {
				c = v.Metrics.Rounds[i]
			}
			row = append(row, strconv.Itoa(c))
		}
		t.rows = append(t.rows, append(row, num(v.Metrics.MeanRounds, precMean)))
	}
	t.write(b)
	b.WriteString("Completed questions by the number of retrievals they used.\n\n")
}

func writeEndReasons(b *bytes.Buffer, r Report) {
	b.WriteString("## End reasons\n\n")
	keys := mapKeys(r, EndReasons(), func(m Metrics) map[string]int { return m.EndReasons })
	writeCounts(b, r, keys, func(m Metrics) map[string]int { return m.EndReasons })
}

func writeGaps(b *bytes.Buffer, r Report) {
	b.WriteString("## Gap categories\n\n")
	keys := mapKeys(r, data.GapCategories(), func(m Metrics) map[string]int { return m.GapCategories })
	writeCounts(b, r, keys, func(m Metrics) map[string]int { return m.GapCategories })
}

// mapKeys returns first, then the other keys of every variant's map, sorted.
func mapKeys(r Report, first []string, get func(Metrics) map[string]int) []string {
	var extra []string
	for _, v := range r.Variants {
		for k := range get(v.Metrics) {
			if !slices.Contains(first, k) && !slices.Contains(extra, k) {
				extra = append(extra, k)
			}
		}
	}
	slices.Sort(extra)
	return append(slices.Clone(first), extra...)
}

func writeCounts(b *bytes.Buffer, r Report, keys []string, get func(Metrics) map[string]int) {
	t := table{header: append([]string{"variant"}, keys...)}
	for _, v := range r.Variants {
		row := []string{v.Name}
		for _, k := range keys {
			row = append(row, strconv.Itoa(get(v.Metrics)[k]))
		}
		t.rows = append(t.rows, row)
	}
	t.write(b)
}

func writeStages(b *bytes.Buffer, r Report) {
	b.WriteString("## Latency per stage (s)\n\n")
	t := table{header: []string{"variant"}}
	for _, s := range []string{"question", "judge", "retrieve", "extract", "read"} {
		t.header = append(t.header, s+" median", s+" p90", s+" mean")
	}
	for _, v := range r.Variants {
		l := v.Metrics.Latency
		row := []string{v.Name}
		for _, s := range []Spread{l.Question, l.Judge, l.Retrieve, l.Extract, l.Read} {
			row = append(row, num(s.Median, precSeconds), num(s.P90, precSeconds), num(s.Mean, precSeconds))
		}
		t.rows = append(t.rows, row)
	}
	t.write(b)
	b.WriteString("Per completed question: the time of each stage summed over its rounds.\n\n")
}

func writeUsage(b *bytes.Buffer, r Report) {
	b.WriteString("## Usage\n\n")
	t := table{header: []string{"variant", "role", "model", "requests", "cached", "retries", "failures",
		"prompt tokens", "completion tokens", "cost (USD)"}, left: 3}
	for _, v := range r.Variants {
		for _, u := range v.Metrics.Usage {
			t.rows = append(t.rows, []string{v.Name, u.Role, u.Model, strconv.FormatInt(u.Requests, 10),
				strconv.FormatInt(u.CachedHits, 10), strconv.FormatInt(u.Retries, 10), strconv.FormatInt(u.Failures, 10),
				strconv.FormatInt(u.PromptTokens, 10), strconv.FormatInt(u.CompletionTokens, 10), num(u.CostUSD, precUSD)})
		}
	}
	if len(t.rows) == 0 {
		b.WriteString("No model usage was recorded.\n")
		return
	}
	t.write(b)
}

// table is a Markdown table: the first left columns (at least one) are
// left-aligned, the others, numbers, right-aligned.
type table struct {
	header []string
	rows   [][]string
	left   int
}

func (t table) write(b *bytes.Buffer) {
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteString("\n")
	}
	line(t.header)
	b.WriteString("|")
	for i := range t.header {
		if i < max(t.left, 1) {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		line(r)
	}
	b.WriteString("\n")
}

// mdEscape makes s safe inside a table cell: one line, no bare pipes.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}
