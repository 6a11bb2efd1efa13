package eval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
)

// The settings of the paired statistics. The bootstrap is seeded, so that a
// report is the same every time it is computed from the same scores.
const (
	// BootstrapResamples is the number of bootstrap resamples of the
	// questions behind each interval.
	BootstrapResamples = 10000
	// BootstrapSeed seeds the resampling.
	BootstrapSeed = 42
	// Confidence is the coverage of the intervals, and 1 - Confidence the
	// level below which McNemar's p is called significant.
	Confidence = 0.95
	// Baseline is the variant the others are compared with.
	Baseline = "full"
)

// ScoreRow is one question's scores in one variant: what paired statistics
// need, and what OUT/scores.jsonl holds one line of.
type ScoreRow struct {
	Variant string  `json:"variant"`
	ID      string  `json:"id"`
	EM      float64 `json:"em"`
	F1      float64 `json:"f1"`
	// Calibration counts the question's measured judge calls (see
	// Calibration).
	Calibration Confusion `json:"calibration"`
}

// scoreRow is the ScoreRow of a question's result.
func scoreRow(variant string, r QuestionResult) ScoreRow {
	row := ScoreRow{Variant: variant, ID: r.ID, EM: r.EM, F1: r.F1}
	for _, j := range r.Judgments {
		if j.Measured {
			row.Calibration.add(j)
		}
	}
	return row
}

// add counts one measured judgment.
func (c *Confusion) add(j Judgment) {
	switch {
	case j.JudgedSufficient && j.GoldComplete:
		c.TP++
	case j.JudgedSufficient:
		c.FP++
	case j.GoldComplete:
		c.FN++
	default:
		c.TN++
	}
}

func (c *Confusion) plus(o Confusion) {
	c.TP += o.TP
	c.FP += o.FP
	c.FN += o.FN
	c.TN += o.TN
}

// falsePositiveRate and completeJudgedInsufficient are Calibration's rates
// in percent, NaN when their denominator is 0.
func (c Confusion) falsePositiveRate() float64 {
	return ratio(c.FP, c.FP+c.TN)
}

func (c Confusion) completeJudgedInsufficient() float64 {
	return ratio(c.FN, c.TP+c.FN)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return 100 * float64(a) / float64(b)
}

// Paired compares a variant with a baseline question by question, over the
// questions both ran. Differences are the variant's number minus the
// baseline's, in percentage points.
type Paired struct {
	Variant   string `json:"variant"`
	Baseline  string `json:"baseline"`
	Questions int    `json:"questions"`
	// EM's interval is a bootstrap one; its significance is McNemar's
	// exact test (McNemarP below 1 - Confidence).
	EM       Difference `json:"em"`
	McNemarP float64    `json:"mcnemar_p"`
	F1       Difference `json:"f1"`
	// Won, Lost and Tied count the questions whose F1 is higher, lower or
	// the same in the variant; EMWon and EMLost the questions the variant
	// answers exactly and the baseline not, and the other way round (the
	// discordant pairs of McNemar's test).
	Won    int `json:"won"`
	Lost   int `json:"lost"`
	Tied   int `json:"tied"`
	EMWon  int `json:"em_won"`
	EMLost int `json:"em_lost"`
	// FalsePositiveRate and CompleteJudgedInsufficient compare the
	// calibration rates over the judge calls of the paired questions,
	// resampled by question; nil when a rate has no states in either.
	FalsePositiveRate          *Difference `json:"false_positive_rate,omitempty"`
	CompleteJudgedInsufficient *Difference `json:"complete_judged_insufficient,omitempty"`
}

// Difference is a paired difference with its bootstrap interval.
type Difference struct {
	Diff float64 `json:"diff"`
	Low  float64 `json:"ci_low"`
	High float64 `json:"ci_high"`
	// Significant: the interval excludes 0 (for EM: McNemar's p is below
	// the level).
	Significant bool `json:"significant"`
}

// ComparePaired computes the paired statistics of variant against base
// over the questions (by id) that both have.
func ComparePaired(base, variant []ScoreRow) Paired {
	return comparePaired(slices.Values(base), slices.Values(variant))
}

// comparePaired is ComparePaired over rows as they come.
func comparePaired(base, variant iter.Seq[ScoreRow]) Paired {
	p := Paired{}
	// The baseline's scores by id; for an id given twice, the last.
	index := map[string]int32{}
	var (
		ids    []string
		scores []pairScores
	)
	for r := range base {
		if p.Baseline == "" {
			p.Baseline = r.Variant
		}
		s := scoresOf(r)
		if k, ok := index[r.ID]; ok {
			scores[k] = s
			continue
		}
		index[r.ID] = int32(len(ids))
		ids = append(ids, r.ID)
		scores = append(scores, s)
	}
	pairs := make([]pair, 0, len(ids))
	for v := range variant {
		if p.Variant == "" {
			p.Variant = v.Variant
		}
		if k, ok := index[v.ID]; ok {
			pairs = append(pairs, newPair(k, scores[k], scoresOf(v)))
		}
	}
	pairedStats(&p, pairs, func(a, b int32) int { return strings.Compare(ids[a], ids[b]) })
	return p
}

// pairScores are a question's scores in one variant, as a paired
// comparison holds them.
type pairScores struct {
	em, f1 float64
	cal    [4]int32 // TP, FP, FN, TN
}

// pair is a question that both variants ran: the differences of its
// scores, and its calibration counts in each (base first). key is its
// question's number, which pairedStats orders by id. A comparison holds one
// a question: 56 bytes, no pointer.
type pair struct {
	key      int32
	dEM, dF1 float64
	cal      [2][4]int32
}

func scoresOf(r ScoreRow) pairScores {
	return pairScores{em: r.EM, f1: r.F1, cal: r.Calibration.counts()}
}

func newPair(key int32, b, v pairScores) pair {
	return pair{key: key, dEM: v.em - b.em, dF1: v.f1 - b.f1, cal: [2][4]int32{b.cal, v.cal}}
}

// counts returns c as a pair holds it.
func (c Confusion) counts() [4]int32 {
	return [4]int32{int32(c.TP), int32(c.FP), int32(c.FN), int32(c.TN)}
}

// plusCounts adds counts (as a pair holds them) to c.
func (c *Confusion) plusCounts(v [4]int32) {
	c.TP += int(v[0])
	c.FP += int(v[1])
	c.FN += int(v[2])
	c.TN += int(v[3])
}

// pairedStats fills in p's statistics from the pairs of its questions: the
// wins and losses, the mean differences, McNemar's p and the bootstrap
// intervals. The pairs are resampled in the order of their ids (compare
// orders two keys as their ids), so that the intervals do not depend on the
// order of the rows.
func pairedStats(p *Paired, pairs []pair, compare func(a, b int32) int) {
	var calBase, calVar Confusion
	for i := range pairs {
		pr := &pairs[i]
		calBase.plusCounts(pr.cal[0])
		calVar.plusCounts(pr.cal[1])
		switch {
		case pr.dF1 > 0:
			p.Won++
		case pr.dF1 < 0:
			p.Lost++
		default:
			p.Tied++
		}
		switch {
		case pr.dEM > 0:
			p.EMWon++
		case pr.dEM < 0:
			p.EMLost++
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int { return compare(a.key, b.key) })
	n := len(pairs)
	p.Questions = n
	p.McNemarP = mcNemarExact(p.EMWon, p.EMLost)
	if n == 0 {
		return
	}
	var sEM, sF1 float64
	for _, pr := range pairs {
		sEM += pr.dEM
		sF1 += pr.dF1
	}
	p.EM.Diff, p.F1.Diff = percent(sEM, n), percent(sF1, n)

	fp0 := calVar.falsePositiveRate() - calBase.falsePositiveRate()
	cji0 := calVar.completeJudgedInsufficient() - calBase.completeJudgedInsufficient()

	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed))
	em := make([]float64, 0, BootstrapResamples)
	f1 := make([]float64, 0, BootstrapResamples)
	var fp, cji []float64
	for range BootstrapResamples {
		var sEM, sF1 float64
		var cb, cv Confusion
		for range n {
			pr := &pairs[rng.IntN(n)]
			sEM += pr.dEM
			sF1 += pr.dF1
			cb.plusCounts(pr.cal[0])
			cv.plusCounts(pr.cal[1])
		}
		em = append(em, percent(sEM, n))
		f1 = append(f1, percent(sF1, n))
		if d := cv.falsePositiveRate() - cb.falsePositiveRate(); !math.IsNaN(d) {
			fp = append(fp, d)
		}
		if d := cv.completeJudgedInsufficient() - cb.completeJudgedInsufficient(); !math.IsNaN(d) {
			cji = append(cji, d)
		}
	}
	p.EM.Low, p.EM.High = interval(em)
	p.EM.Significant = p.McNemarP < 1-Confidence
	p.F1.Low, p.F1.High = interval(f1)
	p.F1.Significant = excludesZero(p.F1)
	p.FalsePositiveRate = bootstrapped(fp0, fp)
	p.CompleteJudgedInsufficient = bootstrapped(cji0, cji)
}

// bootstrapped is the difference diff with the interval of its bootstrap
// estimates; nil when diff is not a number or no resample measured it.
func bootstrapped(diff float64, estimates []float64) *Difference {
	if math.IsNaN(diff) || len(estimates) == 0 {
		return nil
	}
	d := Difference{Diff: diff}
	d.Low, d.High = interval(estimates)
	d.Significant = excludesZero(d)
	return &d
}

// interval is the percentile interval of the bootstrap estimates (at
// least one), at Confidence.
func interval(estimates []float64) (low, high float64) {
	slices.Sort(estimates)
	tail := (1 - Confidence) / 2
	return quantile(estimates, tail), quantile(estimates, 1-tail)
}

func excludesZero(d Difference) bool { return d.Low > 0 || d.High < 0 }

// mcNemarExact is the two-sided p-value of McNemar's exact test for b and c
// discordant pairs: twice the binomial(b+c, 1/2) probability of a count at
// most min(b, c), at most 1.
func mcNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	lgN, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for i := 0; i <= k; i++ {
		lgI, _ := math.Lgamma(float64(i + 1))
		lgNI, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgN - lgI - lgNI - float64(n)*math.Ln2)
	}
	return min(1, 2*sum)
}

// PairedAgainstBaseline compares every variant of rows (grouped by
// ScoreRow.Variant, in the order of names) with Baseline; nil when the
// baseline did not run.
func PairedAgainstBaseline(names []string, rows map[string][]ScoreRow) []Paired {
	base, ok := rows[Baseline]
	if !ok {
		return nil
	}
	var out []Paired
	for _, name := range names {
		if name == Baseline {
			continue
		}
		p := comparePaired(slices.Values(base), slices.Values(rows[name]))
		p.Variant, p.Baseline = name, Baseline
		out = append(out, p)
	}
	return out
}

// ScoresFile is the name of the per-question scores a benchmark writes
// beside its report, one JSON line per variant and question (ScoreRow).
const ScoresFile = "scores.jsonl"

// ReadScores reads a benchmark's scores.jsonl, grouped by variant.
func ReadScores(path string) (map[string][]ScoreRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read scores: %w", err)
	}
	defer f.Close()
	out := map[string][]ScoreRow{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var r ScoreRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("read scores %s: line %d: %w", path, line, err)
		}
		out[r.Variant] = append(out[r.Variant], r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read scores %s: %w", path, err)
	}
	return out, nil
}

// scoreTable holds the scores of a benchmark's variants compactly, for its
// report: each question id once (numbered), and a small cell per variant
// and question, so that a benchmark of many questions does not hold their
// ScoreRows.
type scoreTable struct {
	// ids number the questions in the order they first came.
	ids      *questionIDs
	variants []string
	cells    map[string][]scoreCell
	// has marks, for each variant, the questions (by number) it has a row
	// of: one bit a question.
	has map[string][]uint64
}

// scoreCell is a ScoreRow without its strings: the question by its number
// in scoreTable.ids.
type scoreCell struct {
	q int32
	pairScores
}

func newScoreTable() *scoreTable {
	return &scoreTable{ids: newQuestionIDs(), cells: map[string][]scoreCell{}, has: map[string][]uint64{}}
}

// add adds a row and returns its question's number. Rows of a variant come
// together, variants in turn. A question given twice for one variant is an
// error: its rows were not together in the variant's trajectories.
func (t *scoreTable) add(r ScoreRow) (int32, error) {
	q, _, err := t.ids.number(r.ID)
	if err != nil {
		return 0, err
	}
	if _, ok := t.cells[r.Variant]; !ok {
		t.variants = append(t.variants, r.Variant)
	}
	has := t.has[r.Variant]
	if w := int(q / 64); w >= len(has) {
		has = append(has, make([]uint64, w+1-len(has))...)
	}
	if has[q/64]&(1<<(q%64)) != 0 {
		return 0, fmt.Errorf("question %s: its rows are not together", r.ID)
	}
	has[q/64] |= 1 << (q % 64)
	t.has[r.Variant] = has
	t.cells[r.Variant] = append(t.cells[r.Variant], scoreCell{q: q, pairScores: scoresOf(r)})
	return q, nil
}

// rows returns a variant's rows in the order they were added.
func (t *scoreTable) rows(variant string) iter.Seq[ScoreRow] {
	return func(yield func(ScoreRow) bool) {
		for _, c := range t.cells[variant] {
			r := ScoreRow{Variant: variant, ID: t.ids.id(c.q), EM: c.em, F1: c.f1}
			r.Calibration.plusCounts(c.cal)
			if !yield(r) {
				return
			}
		}
	}
}

// write writes every row as scores.jsonl holds them: variant by variant, in
// the order they were added.
func (t *scoreTable) write(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, v := range t.variants {
		for r := range t.rows(v) {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// paired compares every variant of names with Baseline, as
// PairedAgainstBaseline does; nil when the baseline did not run. It finds
// the baseline's cell of a question by its index in the table, not by its
// id, and holds one pair a question of the variant compared.
func (t *scoreTable) paired(names []string) []Paired {
	base, ok := t.cells[Baseline]
	if !ok {
		return nil
	}
	at := make([]int32, t.ids.len()) // the baseline's cell of each question, or -1
	for i := range at {
		at[i] = -1
	}
	for i, c := range base {
		at[c.q] = int32(i)
	}
	var out []Paired
	for _, name := range names {
		if name == Baseline {
			continue
		}
		cells := t.cells[name]
		pairs := make([]pair, 0, len(cells))
		for _, c := range cells {
			if i := at[c.q]; i >= 0 {
				pairs = append(pairs, newPair(c.q, base[i].pairScores, c.pairScores))
			}
		}
		p := Paired{Variant: name, Baseline: Baseline}
		pairedStats(&p, pairs, t.ids.compare)
		out = append(out, p)
	}
	return out
}
