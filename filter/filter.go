package filter

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
)

// Names of the files Run writes in its output directory.
const (
	TrainFile   = "train.parquet"
	ValFile     = "val.parquet"
	DroppedFile = "dropped.parquet"
	SummaryFile = "filter.json"
)

// OutputFiles returns the names of the files Run writes, in the order it
// commits them.
func OutputFiles() []string { return []string{TrainFile, ValFile, DroppedFile, SummaryFile} }

// The splits of kept rows, as data.Label.Split records them.
const (
	SplitTrain = "train"
	SplitVal   = "val"
)

// Defaults of Options.
const (
	// DefaultValFraction is the reference share of validation data.
	DefaultValFraction = 0.1
	// DefaultSeed is the reference seed.
	DefaultSeed = 42
	// DefaultMinAgreement is the threshold used for labels sampled more
	// than once when Options.MinAgreement is negative: every sample must
	// agree.
	DefaultMinAgreement = 1.0
)

var (
	// ErrOutExists is the cause of the error of a Run whose output
	// directory is not empty, without Overwrite.
	ErrOutExists = outdir.ErrNotEmpty
	// ErrInput is the cause of the errors about an input that cannot be
	// filtered: not a labels file, or a state labelled twice.
	ErrInput = errors.New("bad input")
)

// Options configure Run. The zero value of each field but In and Out is
// usable; MinAgreement's is no threshold.
type Options struct {
	// In are the labels files (distill label's labels.parquet), filtered
	// as one: the labels of several runs (datasets, settings) become one
	// training set, each row keeping its dataset. A state (question id,
	// round) must appear once in all of them. Out is the directory to
	// write to, created if missing.
	In  []string
	Out string
	// MinAgreement: rows whose Agreement is below it are dropped. Negative
	// means the default: DefaultMinAgreement when the labels were sampled
	// more than once (the most samples of a row of the input is over 1),
	// else 0 (no threshold). It must not be over 1.
	MinAgreement float64
	// KeepEmptyGaps keeps insufficient labels with no gap items, which the
	// reference rules drop.
	KeepEmptyGaps bool
	// DropSelfContradictory drops rows where a sample contradicted itself
	// (data.Label.Contradiction). It is off by default since the reference
	// rules only strip the gap items of sufficient verdicts, which
	// normalisation does.
	DropSelfContradictory bool
	// Balance downsamples the majority class (sufficient or insufficient)
	// of train to BalanceRatio times the size of the minority class,
	// choosing the rows at random (seeded); val keeps its natural
	// distribution.
	Balance bool
	// BalanceRatio is the most rows of the majority class that Balance
	// keeps per row of the minority class; 0 means 1 (as many). It must
	// be at least 1.
	BalanceRatio float64
	// ValFraction is the share of questions whose rows go to val (of
	// rows, with ValByRow); 0 means DefaultValFraction, negative means no
	// val. It must be below 1.
	ValFraction float64
	// ReferenceTruth classifies the rows for the strong-positive and
	// strong-negative rules by the authors' code's retrieval truth
	// (data.ReferenceStrength over the label's context, gold titles and
	// answers) instead of the label's own (distill's).
	ReferenceTruth bool
	// BalanceUpsample balances by writing rows of the minority class again
	// (at random, each once before any twice) instead of dropping rows of
	// the majority; BalanceHardOnly touches only the rows retrieval truth
	// does not settle (neither strong positive nor strong negative);
	// BalancePerRound balances each round's rows apart. The authors' code
	// offers all three.
	BalanceUpsample, BalanceHardOnly, BalancePerRound bool
	// ValByRow splits rows, not questions, as the reference code does: a
	// question's states may then be on both sides, and the validation
	// loss measures states of questions the judge trained on.
	ValByRow bool
	// Seed seeds the split and the balancing; 0 means DefaultSeed.
	Seed int64
	// Overwrite empties Out first; without it, an Out that is not empty
	// is an error (ErrOutExists). Another writer in Out is an error
	// either way (outdir.ErrBusy).
	Overwrite bool
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// settings are Options with the defaults filled in.
type settings struct {
	Options
	valFraction float64
	seed        int64
	log         *slog.Logger
}

func (o Options) settings() (settings, error) {
	s := settings{Options: o, valFraction: o.ValFraction, seed: o.Seed, log: o.Logger}
	switch {
	case len(o.In) == 0 || slices.Contains(o.In, ""):
		return s, errors.New("no input file")
	case o.Out == "":
		return s, errors.New("no output directory")
	case math.IsNaN(o.MinAgreement) || o.MinAgreement > 1:
		return s, fmt.Errorf("min agreement %v is not at most 1", o.MinAgreement)
	case math.IsNaN(o.ValFraction) || o.ValFraction >= 1:
		return s, fmt.Errorf("val fraction %v is not below 1", o.ValFraction)
	case o.BalanceRatio != 0 && !(o.BalanceRatio >= 1 && o.BalanceRatio <= math.MaxInt32):
		return s, fmt.Errorf("balance ratio %v is not at least 1", o.BalanceRatio)
	}
	if s.BalanceRatio == 0 {
		s.BalanceRatio = 1
	}
	if s.valFraction == 0 {
		s.valFraction = DefaultValFraction
	}
	s.valFraction = max(s.valFraction, 0)
	if s.seed == 0 {
		s.seed = DefaultSeed
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Streams of the seeded random sources, so that the split does not depend
// on whether train is balanced.
const (
	streamSplit   = 1
	streamBalance = 2
)

// Run filters the labels of opts.In into train, val and dropped rows and
// writes them, with the summary, in opts.Out. See the package comment.
func Run(ctx context.Context, opts Options) (Summary, error) {
	s, err := opts.settings()
	if err != nil {
		return Summary{}, fmt.Errorf("filter: %w", err)
	}
	for _, in := range s.In {
		if err := checkInput(in); err != nil {
			return Summary{}, fmt.Errorf("filter: %w", err)
		}
		if inside, err := outdir.Inside(in, s.Out); err != nil || inside {
			if err == nil {
				err = fmt.Errorf("input %s is inside the output directory %s: %w", in, s.Out, ErrInput)
			}
			return Summary{}, fmt.Errorf("filter: %w", err)
		}
	}
	mode := outdir.New
	if s.Overwrite {
		mode = outdir.Overwrite
	}
	var sum Summary
	err = outdir.Write(ctx, s.Out, mode, func(*outdir.Dir) error {
		var err error
		sum, err = filterInto(ctx, s)
		return err
	})
	if err != nil {
		return Summary{}, fmt.Errorf("filter: %w", err)
	}
	return sum, nil
}

// filterInto filters into the output directory that Run holds.
func filterInto(ctx context.Context, s settings) (sum Summary, err error) {
	var strengths map[data.StateKey]strength
	if s.ReferenceTruth {
		if strengths, err = referenceStrengths(ctx, s.In); err != nil {
			return Summary{}, err
		}
	}
	sc, err := scan(ctx, s.In, strengths)
	if err != nil {
		return Summary{}, err
	}
	sum = sc.summary
	sum.Output = s.Out
	minAgreement, isDefault := s.MinAgreement, s.MinAgreement < 0
	if isDefault {
		minAgreement = 0
		if sc.maxSamples > 1 {
			minAgreement = DefaultMinAgreement
		}
	}
	sum.Options = UsedOptions{
		MinAgreement: minAgreement, MinAgreementDefault: isDefault, MaxSamples: sc.maxSamples,
		KeepEmptyGaps: s.KeepEmptyGaps, DropSelfContradictory: s.DropSelfContradictory,
		Balance: s.Balance, ValFraction: s.valFraction, ValByRow: s.ValByRow, Seed: s.seed,
		ReferenceTruth: s.ReferenceTruth,
	}
	if s.Balance {
		sum.Options.BalanceRatio = s.BalanceRatio
		sum.Options.BalanceUpsample, sum.Options.BalanceHardOnly, sum.Options.BalancePerRound = s.BalanceUpsample, s.BalanceHardOnly, s.BalancePerRound
	}
	rs := rules{minAgreement: minAgreement, dropSelfContradictory: s.DropSelfContradictory, keepEmptyGaps: s.KeepEmptyGaps}
	s.log.Info("filter: read labels", "files", s.In, "rows", len(sc.rows), "questions", len(sc.qids),
		"max_samples", sc.maxSamples, "min_agreement", minAgreement)

	p := plan(sc, rs, s)
	for g, b := range p.bal {
		if b.minority == 0 && b.majority > 0 {
			s.log.Warn("filter: balance finds no row of one class", "round", g,
				"sufficient", b.majoritySufficient, "rows", b.majority, "upsample", b.upsample)
		}
	}
	p.count(sc, &sum)
	if err := sum.check(); err != nil {
		return Summary{}, err
	}
	// write checks that each file got the rows counted here.
	if err := write(ctx, s, sc, p, rs, &sum); err != nil {
		return Summary{}, err
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return Summary{}, err
	}
	if err := data.WriteFileAtomic(filepath.Join(s.Out, SummaryFile), append(b, '\n')); err != nil {
		return Summary{}, err
	}
	s.log.Info("filter: done", "out", s.Out, "train", sum.Rows.Train, "val", sum.Rows.Val, "dropped", sum.Rows.Dropped)
	return sum, nil
}

// checkInput refuses a file that is not a labels file.
func checkInput(path string) error {
	kind, err := data.ParquetKind(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInput, err)
	}
	if kind != data.KindLabels {
		return fmt.Errorf("%s holds %s rows, not %s (the output of distill label): %w", path, kind, data.KindLabels, ErrInput)
	}
	return nil
}

// scanned is what the first pass keeps of the input: the facts of every
// row, in input order, the question ids, and the statistics of the input.
type scanned struct {
	rows []facts
	// qids are the unique question ids, sorted; facts.q indexes them.
	qids       []string
	maxSamples int
	summary    Summary
}

// scan reads the inputs once, in order: it checks that no state appears
// twice, keeps the facts the rules need and counts what the summary says
// of the input. strengths, when not nil, replace the labels' own retrieval
// truth (Options.ReferenceTruth).
func scan(ctx context.Context, paths []string, strengths map[data.StateKey]strength) (*scanned, error) {
	sc := &scanned{}
	var seen stateSet
	qindex := make(map[string]int32)
	var (
		hist     = make(map[string]int64)
		teachers = make(map[Teacher]int64)
		truth    TruthAgreement
	)
	for _, path := range paths {
		first := len(sc.rows)
		if err := scanFile(ctx, path, sc, &seen, qindex, strengths, func(l *scanRow, f facts) {
			hist[fmt.Sprintf("%.2f", l.Agreement)]++
			teachers[Teacher{Teacher: l.Teacher, Model: l.TeacherModel}]++
			if !f.failed {
				truth.add(l, f)
			}
		}); err != nil {
			return nil, err
		}
		sc.summary.Inputs = append(sc.summary.Inputs, Input{File: path, Rows: int64(len(sc.rows) - first)})
	}
	seen = stateSet{}

	// Number the questions in sorted order, so that what follows does not
	// depend on the order of the input.
	sc.qids = make([]string, 0, len(qindex))
	for id := range qindex {
		sc.qids = append(sc.qids, id)
	}
	slices.Sort(sc.qids)
	renumber := make([]int32, len(sc.qids))
	for i, id := range sc.qids {
		renumber[qindex[id]] = int32(i)
	}
	for i := range sc.rows {
		sc.rows[i].q = renumber[sc.rows[i].q]
	}

	sum := &sc.summary
	sum.Rows.In = int64(len(sc.rows))
	sum.Questions.In = len(sc.qids)
	for a, n := range hist {
		sum.Agreement = append(sum.Agreement, AgreementBucket{Agreement: a, Rows: n})
	}
	slices.SortFunc(sum.Agreement, func(a, b AgreementBucket) int {
		return cmp.Or(cmp.Compare(parseFloat(a.Agreement), parseFloat(b.Agreement)), strings.Compare(a.Agreement, b.Agreement))
	})
	for t, n := range teachers {
		t.Rows = n
		sum.Teachers = append(sum.Teachers, t)
	}
	slices.SortFunc(sum.Teachers, func(a, b Teacher) int {
		return cmp.Or(strings.Compare(a.Teacher, b.Teacher), strings.Compare(a.Model, b.Model))
	})
	truth.finish()
	sum.Truth = truth
	return sc, nil
}

// scanFile adds the rows of one input file to sc, each also passed to
// each for the summary's statistics.
func scanFile(ctx context.Context, path string, sc *scanned, seen *stateSet, qindex map[string]int32,
	strengths map[data.StateKey]strength, each func(*scanRow, facts)) error {
	return data.EachRow(ctx, path, data.KindLabels, func(rows []scanRow) error {
		for i := range rows {
			l := &rows[i]
			n := len(sc.rows)
			q, ok := qindex[l.QuestionID]
			if !ok {
				q = int32(len(qindex))
				qindex[l.QuestionID] = q
			}
			if !seen.add(q, l.Round) {
				j := slices.IndexFunc(sc.rows, func(f facts) bool { return f.q == q && f.round == l.Round })
				return fmt.Errorf("%s: state (question %q, round %d) labelled twice, rows %d and %d of the input: %w",
					path, l.QuestionID, l.Round, j+1, n+1, ErrInput)
			}
			f := factsOf(l)
			f.q = q
			if strengths != nil {
				f.strength = strengths[data.StateKey{QuestionID: l.QuestionID, Round: l.Round}]
			}
			sc.rows = append(sc.rows, f)
			sc.maxSamples = max(sc.maxSamples, len(l.Samples))
			each(l, f)
		}
		return nil
	})
}

// stateSet is the set of states (question, round) a scan has seen, with
// the question as its index in the scan's order: a bit a round for rounds
// 0 to 63, by question (8 bytes a question; the loop's rounds are a
// handful), and a map for any other round. Labels come in the order their
// states were labelled, so the rounds of a question are not adjacent and
// every state must be remembered; this way it costs a bit, not the
// question's id again.
type stateSet struct {
	rounds []uint64 // by question
	other  map[[2]int32]struct{}
}

// add adds the state and reports whether it was not in the set yet. The
// questions are numbered from 0 in the order they first appear, so q is
// at most the number of questions seen so far.
func (s *stateSet) add(q, round int32) bool {
	if round < 0 || round >= 64 {
		k := [2]int32{q, round}
		if _, ok := s.other[k]; ok {
			return false
		}
		if s.other == nil {
			s.other = make(map[[2]int32]struct{})
		}
		s.other[k] = struct{}{}
		return true
	}
	for int(q) >= len(s.rounds) {
		s.rounds = append(s.rounds, 0)
	}
	bit := uint64(1) << round
	if s.rounds[q]&bit != 0 {
		return false
	}
	s.rounds[q] |= bit
	return true
}

// count fills in the counts of rows, questions and classes that the
// decisions make.
func (p *decisions) count(sc *scanned, sum *Summary) {
	sum.Dropped = make([]RuleCount, 0, numRules-1)
	var dropped [numRules]int64
	var trainQ, valQ = make(map[int32]bool), make(map[int32]bool)
	for i, f := range sc.rows {
		r := p.rule[i]
		if r != ruleNone {
			dropped[r]++
			sum.Rows.Dropped++
			continue
		}
		c := &sum.Classes.Train
		if p.inVal(i, f.q) {
			sum.Rows.Val++
			valQ[f.q] = true
			c = &sum.Classes.Val
		} else {
			n := 1 + int64(p.extra(i))
			sum.Rows.Train += n
			sum.Rows.Upsampled += n - 1
			trainQ[f.q] = true
			if f.sufficient {
				c.Sufficient += n - 1
			} else {
				c.Insufficient += n - 1
			}
		}
		if f.sufficient {
			c.Sufficient++
		} else {
			c.Insufficient++
		}
	}
	for r := ruleNone + 1; r < numRules; r++ {
		sum.Dropped = append(sum.Dropped, RuleCount{Rule: r.String(), Rows: dropped[r]})
	}
	sum.Questions.Train, sum.Questions.Val = len(trainQ), len(valQ)
}

// write reads the input a second time and writes each row where the
// decisions send it, normalised if it reached normalisation, with Split or
// the Drop fields set. It adds the normalisation counts and the gap
// categories of the kept rows to sum.
func write(ctx context.Context, s settings, sc *scanned, p decisions, rs rules, sum *Summary) error {
	sw := splitWriter{sc: sc, p: p, rs: rs, sum: sum, categories: make(map[string]int64)}
	ws := &sw.ws
	for i, name := range []string{TrainFile, ValFile, DroppedFile} {
		w, err := data.CreateParquet[data.Label](filepath.Join(s.Out, name), data.KindLabels, data.SpillPages())
		if err != nil {
			return err
		}
		defer w.Abort()
		ws[i] = w
	}
	for _, in := range s.In {
		if err := sw.file(ctx, in); err != nil {
			return err
		}
	}
	if sw.n != len(sc.rows) {
		return fmt.Errorf("the inputs changed while they were read: %d rows, then %d", len(sc.rows), sw.n)
	}
	categories := sw.categories
	for i, want := range []int64{sum.Rows.Train, sum.Rows.Val, sum.Rows.Dropped} {
		if got := ws[i].Rows(); got != want {
			return fmt.Errorf("wrote %d rows to %s, want %d", got, []string{TrainFile, ValFile, DroppedFile}[i], want)
		}
	}
	// An older summary must not describe the new files, should committing
	// them fail half-way.
	if err := os.Remove(filepath.Join(s.Out, SummaryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			return err
		}
	}

	sum.GapCategories = make([]CategoryCount, 0, len(data.GapCategories()))
	for _, c := range data.GapCategories() {
		sum.GapCategories = append(sum.GapCategories, CategoryCount{Category: c, Items: categories[c]})
		delete(categories, c)
	}
	if len(categories) > 0 { // cannot happen: NormalizeCategory returns one of them
		return fmt.Errorf("gap categories outside %v after normalisation: %v", data.GapCategories(), categories)
	}
	return nil
}

// The files of kept and dropped rows, as indexes of splitWriter.ws.
const (
	outTrain = iota
	outVal
	outDropped
)

// splitWriter writes the rows of the inputs, in the order scan read them,
// where the decisions send them.
type splitWriter struct {
	sc  *scanned
	p   decisions
	rs  rules
	sum *Summary
	ws  [3]*data.ParquetWriter[data.Label]
	// batches are the rows of a read batch by file; categories counts the
	// kept gap items by category; n the rows written so far.
	batches    [3][]data.Label
	categories map[string]int64
	n          int
}

// file writes the rows of one input.
func (w *splitWriter) file(ctx context.Context, in string) error {
	sc, p := w.sc, w.p
	return data.EachRow(ctx, in, data.KindLabels, func(rows []data.Label) error {
		for i := range w.batches {
			w.batches[i] = w.batches[i][:0]
		}
		for i := range rows {
			l := &rows[i]
			if w.n >= len(sc.rows) || l.Round != sc.rows[w.n].round || l.QuestionID != sc.qids[sc.rows[w.n].q] {
				return fmt.Errorf("%s changed while it was read: row %d of the inputs is not the state read before", in, w.n+1)
			}
			r, inVal, extra := p.rule[w.n], p.inVal(w.n, sc.rows[w.n].q), p.extra(w.n)
			round := sc.rows[w.n].round
			w.n++
			l.Split, l.DropRule, l.DropReason = "", "", ""
			if r.normalized() {
				w.sum.Normalization.add(normalize(l))
			}
			if r != ruleNone {
				l.DropRule, l.DropReason = r.String(), w.rs.reason(r, l, p.balOf(round))
				w.batches[outDropped] = append(w.batches[outDropped], *l)
				continue
			}
			for _, g := range l.GapItems {
				w.categories[g.Category]++
			}
			if inVal {
				l.Split = SplitVal
				w.batches[outVal] = append(w.batches[outVal], *l)
			} else {
				l.Split = SplitTrain
				for range 1 + extra {
					w.batches[outTrain] = append(w.batches[outTrain], *l)
				}
			}
		}
		for i, b := range w.batches {
			if len(b) > 0 {
				if err := w.ws[i].Write(b); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
