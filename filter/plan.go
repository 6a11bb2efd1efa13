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
	bal    balance
}

// inVal says whether row i, of question q, goes to val.
func (p *decisions) inVal(i int, q int32) bool {
	if p.valRow != nil {
		return p.valRow[i]
	}
	return p.val[q]
}

// balance describes the balancing of train.
type balance struct {
	majoritySufficient bool
	majority, minority int
	kept               int // rows of the majority class kept
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
		p.balance(sc, s.BalanceRatio, s.seed)
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

// balance drops rows of the majority class of train, chosen at random, so
// that it keeps at most ratio times the size of the minority. Rows are
// shuffled in the order of their states, so that the choice does not
// depend on the order of the input.
func (p *decisions) balance(sc *scanned, ratio float64, seed int64) {
	var suff, insuff []int
	for i, f := range sc.rows {
		if p.rule[i] != ruleNone || p.inVal(i, f.q) {
			continue
		}
		if f.sufficient {
			suff = append(suff, i)
		} else {
			insuff = append(insuff, i)
		}
	}
	major, minor := suff, insuff
	p.bal.majoritySufficient = true
	if len(insuff) > len(suff) {
		major, minor = insuff, suff
		p.bal.majoritySufficient = false
	}
	p.bal.majority, p.bal.minority = len(major), len(minor)
	p.bal.kept = min(len(major), int(math.Round(ratio*float64(len(minor)))))
	slices.SortFunc(major, func(a, b int) int {
		fa, fb := sc.rows[a], sc.rows[b]
		return cmp.Or(cmp.Compare(fa.q, fb.q), cmp.Compare(fa.round, fb.round))
	})
	r := rand.New(rand.NewPCG(uint64(seed), streamBalance))
	r.Shuffle(len(major), func(i, j int) { major[i], major[j] = major[j], major[i] })
	for _, i := range major[:len(major)-p.bal.kept] {
		p.rule[i] = ruleBalance
	}
}
