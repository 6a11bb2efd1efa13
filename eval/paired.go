package eval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"os"
	"slices"
)

// The settings of the paired statistics. The bootstrap is seeded, so that a
// report is the same every time it is computed from the same scores.
const (
	// BootstrapResamples is the number of bootstrap resamples of the
	// questions behind each interval.
	BootstrapResamples = 10000
	// BootstrapSeed seeds the resampling.
	BootstrapSeed = 42
	// BootstrapMethod names the resampling (see pairedAcc).
	BootstrapMethod = "poisson"
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

// check reports a row whose scores a benchmark cannot have written: EM
// and F1 are fractions, the calibration counts judge calls.
func (r ScoreRow) check() error {
	if !(r.EM >= 0 && r.EM <= 1) || !(r.F1 >= 0 && r.F1 <= 1) {
		return fmt.Errorf("question %q: em %v and f1 %v must be within [0, 1]", r.ID, r.EM, r.F1)
	}
	c := r.Calibration
	for _, n := range [4]int{c.TP, c.FP, c.FN, c.TN} {
		if n < 0 || n > math.MaxInt32 {
			return fmt.Errorf("question %q: calibration count %d out of range", r.ID, n)
		}
	}
	return nil
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
	// The baseline's scores by id; for an id given twice, the last.
	index := map[string]int32{}
	var (
		baseline string
		scores   []pairScores
	)
	for r := range base {
		if baseline == "" {
			baseline = r.Variant
		}
		s := scoresOf(r)
		if k, ok := index[r.ID]; ok {
			scores[k] = s
			continue
		}
		index[r.ID] = int32(len(scores))
		scores = append(scores, s)
	}
	var acc pairedAcc
	name := ""
	for v := range variant {
		if name == "" {
			name = v.Variant
		}
		if k, ok := index[v.ID]; ok {
			acc.add(v.ID, scores[k], scoresOf(v))
		}
	}
	p := acc.paired()
	p.Variant, p.Baseline = name, baseline
	return p
}

// pairScores are a question's scores in one variant, as a paired
// comparison holds them.
type pairScores struct {
	em, f1 float64
	cal    [4]int32 // TP, FP, FN, TN
}

func scoresOf(r ScoreRow) pairScores {
	return pairScores{em: r.EM, f1: r.F1, cal: r.Calibration.counts()}
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

// pairedAcc computes a paired comparison as its questions come, holding
// no question: counts and sums, and the same for each bootstrap resample.
//
// The bootstrap is Poisson's: each resample weighs each question by a
// draw of a Poisson variable of mean 1 (how many times a resample of n
// questions with replacement takes it, as n grows), drawn from a generator
// seeded with BootstrapSeed and the question's id. A resample's estimate
// is its weighted mean. A question's weights do not depend on the other
// questions or on the order they come in, and the sums are kept in fixed
// point (scores in [0, 1], to 2^-32), so that the statistics are exactly
// the same for the same questions in any order, as a resumed benchmark
// reads them; memory is BootstrapResamples resamples of 88 bytes,
// whatever the number of questions.
type pairedAcc struct {
	p               Paired
	calBase, calVar Confusion
	n               int
	sEM, sF1        int64
	rs              []resample
}

// resample is one bootstrap resample's weighted sums.
type resample struct {
	w, em, f1 int64
	cal       [2][4]int64 // base, variant: TP, FP, FN, TN
}

// fixedOne is 1 in the fixed point of pairedAcc's sums.
const fixedOne = 1 << 32

func fixed(x float64) int64 { return int64(math.Round(x * fixedOne)) }

// add counts one question that both variants ran.
func (a *pairedAcc) add(id string, b, v pairScores) {
	if a.rs == nil {
		a.rs = make([]resample, BootstrapResamples)
	}
	dEM, dF1 := v.em-b.em, v.f1-b.f1
	a.n++
	a.calBase.plusCounts(b.cal)
	a.calVar.plusCounts(v.cal)
	switch {
	case dF1 > 0:
		a.p.Won++
	case dF1 < 0:
		a.p.Lost++
	default:
		a.p.Tied++
	}
	switch {
	case dEM > 0:
		a.p.EMWon++
	case dEM < 0:
		a.p.EMLost++
	}
	em, f1 := fixed(dEM), fixed(dF1)
	a.sEM += em
	a.sF1 += f1
	cal := b.cal != [4]int32{} || v.cal != [4]int32{}
	g := newPoissonStream(id)
	for i := range a.rs {
		k := g.next()
		if k == 0 {
			continue
		}
		r := &a.rs[i]
		r.w += k
		r.em += k * em
		r.f1 += k * f1
		if cal {
			for j := range 4 {
				r.cal[0][j] += k * int64(b.cal[j])
				r.cal[1][j] += k * int64(v.cal[j])
			}
		}
	}
}

// paired returns the comparison of the questions added (Variant and
// Baseline left to the caller).
func (a *pairedAcc) paired() Paired {
	p := a.p
	n := a.n
	p.Questions = n
	p.McNemarP = mcNemarExact(p.EMWon, p.EMLost)
	if n == 0 {
		return p
	}
	p.EM.Diff, p.F1.Diff = percent(float64(a.sEM)/fixedOne, n), percent(float64(a.sF1)/fixedOne, n)
	fp0 := a.calVar.falsePositiveRate() - a.calBase.falsePositiveRate()
	cji0 := a.calVar.completeJudgedInsufficient() - a.calBase.completeJudgedInsufficient()
	em := make([]float64, 0, len(a.rs))
	f1 := make([]float64, 0, len(a.rs))
	var fp, cji []float64
	for i := range a.rs {
		r := &a.rs[i]
		if r.w == 0 {
			continue // a resample that took no question estimates nothing
		}
		w := float64(r.w)
		em = append(em, 100*float64(r.em)/fixedOne/w)
		f1 = append(f1, 100*float64(r.f1)/fixedOne/w)
		cb, cv := confusionOf(r.cal[0]), confusionOf(r.cal[1])
		if d := cv.falsePositiveRate() - cb.falsePositiveRate(); !math.IsNaN(d) {
			fp = append(fp, d)
		}
		if d := cv.completeJudgedInsufficient() - cb.completeJudgedInsufficient(); !math.IsNaN(d) {
			cji = append(cji, d)
		}
	}
	if len(em) > 0 {
		p.EM.Low, p.EM.High = interval(em)
		p.F1.Low, p.F1.High = interval(f1)
	} else {
		p.EM.Low, p.EM.High, p.F1.Low, p.F1.High = p.EM.Diff, p.EM.Diff, p.F1.Diff, p.F1.Diff
	}
	p.EM.Significant = p.McNemarP < 1-Confidence
	p.F1.Significant = excludesZero(p.F1)
	p.FalsePositiveRate = bootstrapped(fp0, fp)
	p.CompleteJudgedInsufficient = bootstrapped(cji0, cji)
	return p
}

func confusionOf(c [4]int64) Confusion {
	return Confusion{TP: int(c[0]), FP: int(c[1]), FN: int(c[2]), TN: int(c[3])}
}

// poissonStream draws the Poisson(1) weights of one question in every
// resample: a splitmix64 sequence seeded from BootstrapSeed and the id
// (FNV-1a), each draw inverted through the distribution's cumulative
// probabilities.
type poissonStream struct{ state uint64 }

func newPoissonStream(id string) poissonStream {
	h := uint64(14695981039346656037) ^ BootstrapSeed
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return poissonStream{state: h}
}

func (g *poissonStream) next() int64 {
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	k := int64(0)
	for k < int64(len(poissonCDF)) && z >= poissonCDF[k] {
		k++
	}
	return k
}

// poissonCDF[k] is P(X <= k) for X ~ Poisson(1), scaled to 2^64: a draw
// u in [0, 2^64) is k for the first k with u < poissonCDF[k], and 20 past
// the last entry (k = 19, held below 2^64): a chance under 2^-50, where
// Poisson(1) is above 19 with a chance under 2^-62.
var poissonCDF = func() []uint64 {
	var out []uint64
	p, cdf := math.Exp(-1), 0.0
	for k := 0; k < 20; k++ {
		if k > 0 {
			p /= float64(k)
		}
		cdf += p
		out = append(out, uint64(min(math.Ldexp(cdf, 64), math.Ldexp(1, 64)-4096)))
	}
	return out
}()

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
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("read scores %s: line %d: %w", path, line, err)
		}
		out[r.Variant] = append(out[r.Variant], r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read scores %s: %w", path, err)
	}
	return out, nil
}

// scoreTable takes the scores of a benchmark's variants as they come, for
// its report: each question id once (numbered), the baseline's scores by
// question number, and each other variant's comparison with the baseline
// as it streams (pairedAcc), so that a benchmark of many questions holds
// neither its ScoreRows nor a pair a question. Variants given before the
// baseline are kept, a small cell a question, until the baseline has come.
type scoreTable struct {
	// ids number the questions in the order they first came.
	ids *questionIDs
	// has marks, for each variant, the questions (by number) it has a row
	// of: one bit a question.
	has map[string][]uint64
	// base holds the baseline's scores by question number, once it came.
	base []pairScores
	// early holds the cells of the variants that came before the baseline.
	early map[string][]scoreCell
	acc   map[string]*pairedAcc
}

// scoreCell is a ScoreRow without its strings: the question by its number
// in scoreTable.ids.
type scoreCell struct {
	q int32
	pairScores
}

func newScoreTable() *scoreTable {
	return &scoreTable{ids: newQuestionIDs(), has: map[string][]uint64{},
		early: map[string][]scoreCell{}, acc: map[string]*pairedAcc{}}
}

// add adds a row and returns its question's number. Rows of a variant come
// together, variants in turn. A question given twice for one variant is an
// error: its rows were not together in the variant's trajectories.
func (t *scoreTable) add(r ScoreRow) (int32, error) {
	q, _, err := t.ids.number(r.ID)
	if err != nil {
		return 0, err
	}
	if t.ran(r.Variant, q) {
		return 0, fmt.Errorf("question %s: its rows are not together", r.ID)
	}
	has := t.has[r.Variant]
	if w := int(q / 64); w >= len(has) {
		has = append(has, make([]uint64, w+1-len(has))...)
	}
	has[q/64] |= 1 << (q % 64)
	t.has[r.Variant] = has
	s := scoresOf(r)
	switch {
	case r.Variant == Baseline:
		if int(q) >= len(t.base) {
			t.base = append(t.base, make([]pairScores, int(q)+1-len(t.base))...)
		}
		t.base[q] = s
	case t.has[Baseline] == nil:
		t.early[r.Variant] = append(t.early[r.Variant], scoreCell{q: q, pairScores: s})
	default:
		t.pair(r.Variant, q, s)
	}
	return q, nil
}

// pair adds question q of variant, whose scores are s, to the variant's
// comparison when the baseline ran it.
func (t *scoreTable) pair(variant string, q int32, s pairScores) {
	if !t.ran(Baseline, q) {
		return
	}
	a := t.acc[variant]
	if a == nil {
		a = &pairedAcc{}
		t.acc[variant] = a
	}
	a.add(t.ids.id(q), t.base[q], s)
}

// ran reports whether variant has a row of question q.
func (t *scoreTable) ran(variant string, q int32) bool {
	has := t.has[variant]
	return int(q/64) < len(has) && has[q/64]&(1<<(q%64)) != 0
}

// paired compares every variant of names with Baseline, as
// PairedAgainstBaseline does; nil when the baseline did not run.
func (t *scoreTable) paired(names []string) []Paired {
	if t.has[Baseline] == nil {
		return nil
	}
	for v, cells := range t.early {
		for _, c := range cells {
			t.pair(v, c.q, c.pairScores)
		}
		delete(t.early, v)
	}
	var out []Paired
	for _, name := range names {
		if name == Baseline {
			continue
		}
		var p Paired
		if a := t.acc[name]; a != nil {
			p = a.paired()
		} else {
			p = (&pairedAcc{}).paired()
		}
		p.Variant, p.Baseline = name, Baseline
		out = append(out, p)
	}
	return out
}
