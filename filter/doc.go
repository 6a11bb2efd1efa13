// Package filter keeps the teacher labels that are fit to train the judge
// on, and splits them into train and validation sets: it is the library
// behind `distill filter --in DIR/labels.parquet --out DIR2`.
//
// It applies the method's reference filtering rules, which use the
// dataset's gold titles and answers as retrieval truth (data.Label's Truth
// fields, set by distill label), plus the rules that sampling the teacher
// several times makes possible (agreement, self-contradiction).
//
// # Rules
//
// Each input row goes through the rules in this order; the first that
// drops it records its name in DropRule and a sentence in DropReason:
//
//  1. teacher-failed: no sample of the teacher was usable (Failure).
//  2. low-agreement: Agreement below MinAgreement (by default 1, every
//     sample agreeing, when the teacher was sampled more than once; no
//     threshold otherwise).
//  3. self-contradictory (only with DropSelfContradictory): a sample
//     contradicted itself.
//  4. contradicts-strong-positive: insufficient, while at least 70% of the
//     gold titles are in the context and it states the answer (the answer
//     string; for yes/no and comparison questions, the supporting sentences
//     or all gold titles: data.Truth, the retrieval truth every stage uses).
//  5. contradicts-strong-negative: sufficient, while at most 10% of the
//     gold titles are in the context and it does not state the answer.
//  6. The verdict is normalised (the gap items of a sufficient verdict
//     cleared; categories mapped by data.NormalizeCategory; an empty target
//     set to "Answer"; repeats on data.GapKey removed, the first kept), then
//     empty-gaps drops an insufficient verdict with no gap item, unless
//     KeepEmptyGaps.
//  7. The questions of the rows left are split: their ids, sorted then
//     shuffled with the seed, go to val for the first round(ValFraction x n)
//     and to train for the rest, so that all states of a question are on
//     one side and the split depends only on the set of ids and the seed.
//  8. balance (only with Balance): rows of the majority class of train,
//     chosen at random with the seed, are dropped until the majority has
//     at most BalanceRatio (default 1) times the minority's size. Val keeps
//     its natural distribution.
//
// # Data flow
//
// Labels files can be large (each row holds a context), so Run reads the
// input twice and holds only keys and decisions in memory:
//
//	labels.parquet ─> pass 1: check kind and unique states, keep each row's
//	                  facts, count the input's statistics
//	               ─> rules 1-6, split, balance (in memory)
//	labels.parquet ─> pass 2: normalise, set Split / DropRule / DropReason ─┬> train.parquet
//	                                                                       ├> val.parquet
//	                                                                       └> dropped.parquet
//	               ─> filter.json (Summary)
//
// The three parquet files hold data.Label rows (kind data.KindLabels) in
// input order; each is written to a temporary name and renamed into place,
// and filter.json, written last, marks a complete output (an older one is
// removed before the new files are committed). Rows dropped by
// rules 1 to 5 are written as they were read; the others went through
// normalisation and are written normalised. Every input row lands in
// exactly one file, which Run checks: rows in = train + val + dropped.
//
// The summary (Summary, printed by WriteTable) gives the rows dropped by
// each rule, the questions and class balance of each split, the gap
// categories of the kept rows, what normalisation changed, the agreement
// histogram and teachers of the input, and how the teacher agrees with
// retrieval truth.
package filter
