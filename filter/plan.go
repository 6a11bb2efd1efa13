package filter

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// decisions says what becomes of each row of the input.
type decisions struct {
	rule   []rule // ruleNone for kept rows
	val    []bool // by question
	valRow []bool // by row, when rows are split (then val is unused)
	// copies are the extra times a train row is written (upsampling);
	// nil when none is.
	copies []int32
	// bal describes balancing by group: the round with BalancePerRound,
	// else allRounds.
	bal map[int32]balance
}

// allRounds is the key of bal when rounds are balanced together.
const allRounds = -1

// balOf returns the balancing of the group of a row of round r.
func (p *decisions) balOf(round int32) balance {
	if b, ok := p.bal[round]; ok {
		return b
	}
	return p.bal[allRounds]
}

// extra is how many more times than once row i is written.
func (p *decisions) extra(i int) int32 {
	if p.copies == nil {
		return 0
	}
	return p.copies[i]
}

// inVal says whether row i, of question q, goes to val.
func (p *decisions) inVal(i int, q int32) bool {
	if p.valRow != nil {
		return p.valRow[i]
	}
	return p.val[q]
}

// balance describes the balancing of one group of train's rows.
type balance struct {
	majoritySufficient bool
	majority, minority int
	kept               int // rows of the majority class kept
	added              int // copies of minority rows written (upsampling)
	upsample           bool
}

// plan applies rules 1 to 6 to every row, splits the questions of the rows
// kept and balances train.
func plan(sc *scanned, rs rules, s settings) decisions {
	p := decisions{rule: make([]rule, len(sc.rows)), val: make([]bool, len(sc.qids))}
	kept := make([]bool, len(sc.qids)) // questions with a kept row
	for i, f := range sc.rows {
		p.rule[i] = rs.apply(f)
		if p.rule[i] == ruleNone {
			kept[f.q] = true
		}
	}

	if s.ValByRow {
		p.splitRows(sc, s)
	} else {
		p.splitQuestions(kept, s)
	}
	if s.Balance {
		p.balance(sc, s)
	}
	return p
}

// splitQuestions shuffles the kept questions (sorted) and sends the first
// to val.
func (p *decisions) splitQuestions(kept []bool, s settings) {
	var qs []int32
	for q, k := range kept {
		if k {
			qs = append(qs, int32(q))
		}
	}
	split := rand.New(rand.NewPCG(uint64(s.seed), streamSplit))
	split.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	for _, q := range qs[:valQuestions(s.valFraction, len(qs))] {
		p.val[q] = true
	}
}

// splitRows shuffles the kept rows, in the order of their states, and
// sends the first to val.
func (p *decisions) splitRows(sc *scanned, s settings) {
	p.valRow = make([]bool, len(sc.rows))
	var rows []int
	for i, r := range p.rule {
		if r == ruleNone {
			rows = append(rows, i)
		}
	}
	slices.SortFunc(rows, func(a, b int) int {
		fa, fb := sc.rows[a], sc.rows[b]
		return cmp.Or(cmp.Compare(fa.q, fb.q), cmp.Compare(fa.round, fb.round))
	})
	split := rand.New(rand.NewPCG(uint64(s.seed), streamSplit))
	split.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	for _, i := range rows[:valQuestions(s.valFraction, len(rows))] {
		p.valRow[i] = true
	}
}

// valQuestions returns how many of n questions go to val: round(frac * n),
// at least one when frac > 0 and n >= 2, and never all of them.
func valQuestions(frac float64, n int) int {
	if frac <= 0 || n < 2 {
		return 0
	}
	return min(max(int(math.Round(frac*float64(n))), 1), n-1)
}

// balance evens out the classes of train's rows: in each group (a round
// with BalancePerRound, else all rows), among the rows it may touch (with
// BalanceHardOnly those retrieval truth does not settle), it drops rows of
// the majority class, chosen at random, until it holds at most
// BalanceRatio times the minority's; or, with BalanceUpsample, it writes
// rows of the minority class again, in a random order, until the minority
// reaches the majority's size divided by BalanceRatio. Rows are shuffled in
// the order of their states, so that the choice does not depend on the
// order of the input.
func (p *decisions) balance(sc *scanned, s settings) {
	groups := map[int32][2][]int{} // by group: sufficient rows, insufficient rows
	for i, f := range sc.rows {
		if p.rule[i] != ruleNone || p.inVal(i, f.q) || s.BalanceHardOnly && f.strength != neither {
			continue
		}
		g := int32(allRounds)
		if s.BalancePerRound {
			g = f.round
		}
		c := groups[g]
		if f.sufficient {
			c[0] = append(c[0], i)
		} else {
			c[1] = append(c[1], i)
		}
		groups[g] = c
	}
	keys := make([]int32, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	slices.Sort(keys)
	p.bal = make(map[int32]balance, len(keys))
	if s.BalanceUpsample {
		p.copies = make([]int32, len(sc.rows))
	}
	r := rand.New(rand.NewPCG(uint64(s.seed), streamBalance))
	for _, g := range keys {
		p.bal[g] = p.balanceGroup(sc, groups[g][0], groups[g][1], s, r)
	}
}

// balanceGroup balances one group's sufficient and insufficient rows.
func (p *decisions) balanceGroup(sc *scanned, suff, insuff []int, s settings, r *rand.Rand) balance {
	major, minor := suff, insuff
	b := balance{majoritySufficient: true, upsample: s.BalanceUpsample}
	if len(insuff) > len(suff) {
		major, minor = insuff, suff
		b.majoritySufficient = false
	}
	b.majority, b.minority = len(major), len(minor)
	byState := func(a, b int) int {
		fa, fb := sc.rows[a], sc.rows[b]
		return cmp.Or(cmp.Compare(fa.q, fb.q), cmp.Compare(fa.round, fb.round))
	}
	if s.BalanceUpsample {
		b.kept = len(major)
		if len(minor) == 0 {
			return b
		}
		b.added = max(0, int(math.Ceil(float64(len(major))/s.BalanceRatio))-len(minor))
		slices.SortFunc(minor, byState)
		r.Shuffle(len(minor), func(i, j int) { minor[i], minor[j] = minor[j], minor[i] })
		for k := range b.added {
			p.copies[minor[k%len(minor)]]++
		}
		return b
	}
	b.kept = min(len(major), int(math.Round(s.BalanceRatio*float64(len(minor)))))
	slices.SortFunc(major, byState)
	r.Shuffle(len(major), func(i, j int) { major[i], major[j] = major[j], major[i] })
	for _, i := range major[:len(major)-b.kept] {
		p.rule[i] = ruleBalance
	}
	return b
}
