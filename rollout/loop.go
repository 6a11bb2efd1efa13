package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/retrieve"
)

// The method's defaults.
const (
	// DefaultMaxRetrievals bounds the retrievals per question, so a question
	// has at most DefaultMaxRetrievals+1 judge calls.
	DefaultMaxRetrievals = 4
	// DefaultTopK is the number of new documents retrieved per round.
	DefaultTopK = 6
	// DefaultMaxEvidence (K) bounds the sentences chosen per round.
	DefaultMaxEvidence = 6
	// DefaultMaxSentences bounds the sentences shown per document.
	DefaultMaxSentences = 40
	// QueryGaps is how many gap items the query is built from.
	QueryGaps = 3
	// ExtractorGaps is how many current gap items the extractor sees.
	ExtractorGaps = 3
	// TitleFetch is how many documents a round asks the retriever for when
	// documents are deduplicated by title, before dropping the titles seen
	// (the reference code asks for 50 and filters down to k).
	TitleFetch = 50
)

// RoleError reports that a role failed on one question: the question is
// lost, the run is not. Callers record it (FailedState) and go on.
type RoleError struct {
	// Role is "judge", "extractor" or "reader".
	Role string
	// Round is the round the call belonged to.
	Round int
	Err   error
}

func (e *RoleError) Error() string {
	return fmt.Sprintf("%s at round %d: %v", e.Role, e.Round, e.Err)
}

func (e *RoleError) Unwrap() error { return e.Err }

// Trajectory is the record of one question's run through the loop.
type Trajectory struct {
	// States holds one row per judge call; the last one is final and
	// carries the answer. After an error it holds the states completed
	// before it, none final.
	States []data.State
	// Answer is the reader's answer; Context the final evidence context.
	Answer  string
	Context data.Context
	Counts  Counts
	// Time spent in each stage, in total.
	Judge, Retrieve, Extract, Read time.Duration
	// Tokens used by each role, in total.
	JudgeUsage, ExtractorUsage, ReaderUsage data.Usage
}

// Counts are the loop's tallies for one question.
type Counts struct {
	JudgeCalls, Retrievals, ExtractorCalls int
	// Parse failures of each role, each handled by the method's fallback.
	JudgeParseFailures, ExtractorParseFailures, ReaderParseFailures int
	// Override is set when the t = 0 override applied.
	Override bool
	// Retrieved documents and the numbered sentences shown of them.
	Documents, Candidates int
	// Chosen sentence ids kept, and those dropped by reason.
	Chosen, DroppedOutOfRange, DroppedRepeated, DroppedOverLimit int
	// Title blocks appended to the context and those already in it.
	BlocksAdded, BlocksSkipped int
	// Sentences left out to fit the token budgets of Options.
	CandidatesTrimmed, EvidenceTrimmed int
	// Calls whose first answer was unusable and were asked once more.
	JudgeRepairs, ExtractorRepairs, ReaderRepairs int
}

// Run runs the loop of the method on one question and records every state.
//
// Errors: a *RoleError means the question failed (a role could not answer
// it); record it and go on. Any other error is systemic and should end the
// run: the context was cancelled (the error wraps ctx.Err(), even when a
// role noticed first), the retriever failed (per the retrieve contract, a
// broken backend), or the options or roles are invalid (ErrOptions,
// ErrMissingRole).
func Run(ctx context.Context, q data.Question, roles Roles, opts Options) (Trajectory, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Trajectory{}, err
	}
	switch {
	case roles.Judge == nil:
		return Trajectory{}, fmt.Errorf("judge: %w", ErrMissingRole)
	case roles.Extractor == nil && roles.Compressor == nil:
		return Trajectory{}, fmt.Errorf("extractor: %w", ErrMissingRole)
	case roles.Reader == nil:
		return Trajectory{}, fmt.Errorf("reader: %w", ErrMissingRole)
	case roles.Retriever == nil:
		return Trajectory{}, fmt.Errorf("retriever: %w", ErrMissingRole)
	}
	l := loop{q: q, roles: roles, opts: opts, seenIDs: make(map[string]struct{}, opts.TopK*(opts.MaxRetrievals)), c: data.NewContext(opts.Evidence)}
	if opts.Dedup == DedupTitle {
		l.seenTitles = make(map[string]struct{})
	}
	err = l.run(ctx)
	l.tr.Context = l.c
	return l.tr, err
}

// FailedState is the row that records a failed question: final, with the
// error as its failure reason.
func FailedState(q data.Question, err error) data.State {
	return data.State{QuestionID: q.ID, Dataset: q.Dataset, Question: q.Text, IsFinal: true, Failure: err.Error()}
}

// loop is the state of one question's run.
type loop struct {
	q     data.Question
	roles Roles
	opts  Options
	tr    Trajectory
	c     data.Context

	queries    []string
	retrieved  []data.RetrievedDoc
	exclude    []string
	seenIDs    map[string]struct{}
	seenTitles map[string]struct{}
	// next holds what the last extraction round recorded, for the state
	// whose context it produced.
	next data.State
}

func (l *loop) run(ctx context.Context) error {
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		st := l.next
		l.next = data.State{}
		st.QuestionID, st.Dataset, st.Round, st.Question = l.q.ID, l.q.Dataset, int32(round), l.q.Text
		st.Context, st.Evidence = l.c.Render(), l.c.Evidence()
		st.Queries, st.Retrieved = slices.Clone(l.queries), slices.Clone(l.retrieved)

		verdict, err := l.judge(ctx, round, &st)
		if err != nil {
			return err
		}
		override := round == 0 && verdict.Sufficient && l.opts.Policy == EarlyStop
		if override {
			st.Override = true
			l.tr.Counts.Override = true
		}
		if round == l.opts.MaxRetrievals || (l.opts.Policy == EarlyStop && verdict.Sufficient && !override) {
			if err := l.read(ctx, round, &st); err != nil {
				return err
			}
			l.tr.States = append(l.tr.States, st)
			return nil
		}
		l.tr.States = append(l.tr.States, st)
		if err := l.step(ctx, round, verdict.GapItems); err != nil {
			return err
		}
	}
}

// judge runs the judge on the current context and records its output in st.
func (l *loop) judge(ctx context.Context, round int, st *data.State) (data.Verdict, error) {
	start := time.Now()
	var res judge.Result
	var err error
	if qj, ok := l.roles.Judge.(judge.QuestionJudge); ok {
		res, err = qj.JudgeQuestion(ctx, l.q, l.c)
	} else {
		res, err = l.roles.Judge.Judge(ctx, l.q.Text, l.c)
	}
	d := time.Since(start)
	l.tr.Judge += d
	if err != nil {
		return data.Verdict{}, roleError(ctx, "judge", round, err)
	}
	l.tr.Counts.JudgeCalls++
	l.tr.JudgeUsage = l.tr.JudgeUsage.Add(res.Usage)
	verdict := res.Verdict
	if res.ParseError != "" {
		verdict = data.Verdict{}
		l.tr.Counts.JudgeParseFailures++
	}
	if verdict.Sufficient {
		verdict.GapItems = nil
	}
	if res.Repaired {
		l.tr.Counts.JudgeRepairs++
	}
	st.JudgeOutput, st.JudgeParseError, st.JudgeRepaired = res.Raw, res.ParseError, res.Repaired
	st.Sufficient, st.GapItems = verdict.Sufficient, slices.Clone(verdict.GapItems)
	st.JudgeMS = ms(d)
	st.JudgeModel, st.JudgeTemplate = res.Model, res.TemplateHash
	st.JudgePromptTokens, st.JudgeCompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	return verdict, nil
}

// read runs the reader on the final context and records its answer in st.
func (l *loop) read(ctx context.Context, round int, st *data.State) error {
	start := time.Now()
	res, err := l.roles.Reader.Answer(ctx, l.q.Text, l.c)
	d := time.Since(start)
	l.tr.Read += d
	if err != nil {
		return roleError(ctx, "reader", round, err)
	}
	l.tr.ReaderUsage = l.tr.ReaderUsage.Add(res.Usage)
	answer := res.Answer
	if res.ParseError != "" {
		l.tr.Counts.ReaderParseFailures++
	}
	l.tr.Answer = answer
	st.IsFinal = true
	if res.Repaired {
		l.tr.Counts.ReaderRepairs++
	}
	st.Answer, st.ReaderOutput, st.ReaderParseError, st.ReaderRepaired = answer, res.Raw, res.ParseError, res.Repaired
	st.ReadMS = ms(d)
	st.ReaderModel, st.ReaderTemplate = res.Model, res.TemplateHash
	st.ReaderPromptTokens, st.ReaderCompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	return nil
}

// step runs one retrieval round: query, retrieve, number, extract, append.
// What it records goes to l.next, the state of the context it produces.
func (l *loop) step(ctx context.Context, round int, gaps []data.GapItem) error {
	firstGap := l.opts.FirstGapOnly || (l.opts.QueryRule == QueryReference && l.q.Dataset == data.DatasetTriviaQA)
	query := BuildQuery(l.q.Text, gaps, firstGap, l.opts.QueryRule)
	l.queries = append(l.queries, query)
	l.c.StartRound(query)

	start := time.Now()
	hits, err := l.search(ctx, query)
	d := time.Since(start)
	l.tr.Retrieve += d
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("retrieve at round %d: %w", round, cerr)
		}
		return fmt.Errorf("retrieve at round %d: %w", round, err)
	}
	l.tr.Counts.Retrievals++
	l.tr.Counts.Documents += len(hits)
	for i, h := range hits {
		l.retrieved = append(l.retrieved, data.RetrievedDoc{Round: int32(round), Rank: int32(i + 1), DocID: h.ID, Title: h.Title, Score: h.Score, Chars: int32(len(h.Text))})
	}
	next := &l.next
	next.RetrieveMS = ms(d)

	numbered, err := number(hits, l.opts.MaxSentences, l.opts.Splitter)
	if err != nil {
		// As a model role's: a splitter that fails on every question (its
		// process gone) stops the run after a few in a row.
		return roleError(ctx, "splitter", round, err)
	}
	sentences := fitCandidates(l.q.Text, numbered, l.opts.CandidateTokens)
	next.Candidates = int32(len(sentences))
	next.CandidatesTrimmed = int32(len(numbered) - len(sentences))
	l.tr.Counts.Candidates += len(sentences)
	l.tr.Counts.CandidatesTrimmed += len(numbered) - len(sentences)
	if len(sentences) == 0 {
		return nil // nothing new to point at: no extractor call
	}
	shown := gaps[:min(len(gaps), ExtractorGaps)]
	if l.roles.Compressor != nil {
		return l.compress(ctx, round, shown, sentences)
	}
	start = time.Now()
	res, err := l.roles.Extractor.Extract(ctx, l.q.Text, slices.Clone(shown), sentences, l.opts.MaxEvidence)
	d = time.Since(start)
	l.tr.Extract += d
	if err != nil {
		return roleError(ctx, "extractor", round, err)
	}
	l.recordExtraction(res.Call, d)
	ids := res.IDs
	if res.ParseError != "" {
		ids = nil
	}

	chosen := make([]data.Evidence, 0, l.opts.MaxEvidence)
	for _, id := range ids {
		switch {
		case id < 1 || id > len(sentences):
			next.DroppedOutOfRange++
		case slices.Contains(next.ChosenIDs, int32(id)):
			next.DroppedRepeated++
		case len(chosen) == l.opts.MaxEvidence:
			next.DroppedOverLimit++
		default:
			next.ChosenIDs = append(next.ChosenIDs, int32(id))
			chosen = append(chosen, sentences[id-1].Evidence)
			continue
		}
		next.DroppedIDs = append(next.DroppedIDs, clampID(id))
	}
	l.tr.Counts.Chosen += len(next.ChosenIDs)
	l.tr.Counts.DroppedOutOfRange += int(next.DroppedOutOfRange)
	l.tr.Counts.DroppedRepeated += int(next.DroppedRepeated)
	l.tr.Counts.DroppedOverLimit += int(next.DroppedOverLimit)

	if l.c.Layout() == data.LayoutReference {
		// Retrieval order, each document's sentences in order: the order
		// of their global ids.
		order := slices.Clone(next.ChosenIDs)
		slices.Sort(order)
		for i, id := range order {
			chosen[i] = sentences[id-1].Evidence
		}
	}
	l.appendEvidence(chosen)
	return nil
}

// appendEvidence appends a round's evidence to the context, within the
// evidence budget, and records the blocks added, those already there and
// the sentences left out.
func (l *loop) appendEvidence(ev []data.Evidence) {
	added, left := fitEvidence(&l.c, l.q.Text, ev, l.opts.EvidenceTokens)
	skipped := l.c.BlocksOf(ev[:len(ev)-left]) - added
	next := &l.next
	next.BlocksAdded, next.BlocksSkipped, next.EvidenceTrimmed = int32(added), int32(skipped), int32(left)
	l.tr.Counts.BlocksAdded += added
	l.tr.Counts.BlocksSkipped += skipped
	l.tr.Counts.EvidenceTrimmed += left
}

// recordExtraction records an extraction (or compression) call that took
// d in the trajectory's counts and in the state it produces.
func (l *loop) recordExtraction(res data.Call, d time.Duration) {
	next := &l.next
	l.tr.Counts.ExtractorCalls++
	l.tr.ExtractorUsage = l.tr.ExtractorUsage.Add(res.Usage)
	next.ExtractMS = ms(d)
	next.ExtractorOutput, next.ExtractorParseError, next.ExtractorRepaired = res.Raw, res.ParseError, res.Repaired
	if res.Repaired {
		l.tr.Counts.ExtractorRepairs++
	}
	next.ExtractorModel, next.ExtractorTemplate = res.Model, res.TemplateHash
	next.ExtractorPromptTokens, next.ExtractorCompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	if res.ParseError != "" {
		l.tr.Counts.ExtractorParseFailures++
	}
}

// compress has the Compressor write the round's evidence and appends it;
// it is recorded in the extractor's fields (output, model, tokens, time).
func (l *loop) compress(ctx context.Context, round int, gaps []data.GapItem, sentences []Numbered) error {
	start := time.Now()
	res, err := l.roles.Compressor.Compress(ctx, l.q.Text, slices.Clone(gaps), sentences)
	d := time.Since(start)
	l.tr.Extract += d
	if err != nil {
		return roleError(ctx, "compressor", round, err)
	}
	l.recordExtraction(res.Call, d)
	ev := res.Evidence
	if res.ParseError != "" {
		ev = nil
	}
	l.appendEvidence(ev)
	return nil
}

// search retrieves the round's new documents, best first.
func (l *loop) search(ctx context.Context, query string) ([]retrieve.Hit, error) {
	k := l.opts.TopK
	if l.opts.Dedup == DedupTitle {
		k = max(k, TitleFetch)
	}
	hits, err := l.roles.Retriever.Search(ctx, retrieve.Query{Text: query, K: k, Exclude: l.exclude})
	if err != nil {
		return nil, err
	}
	kept := hits[:0]
	for _, h := range hits {
		if len(kept) == l.opts.TopK {
			break
		}
		// A retriever that honours Exclude never returns a seen id; this
		// also drops an id repeated within the round.
		if _, seen := l.seenIDs[h.ID]; seen {
			continue
		}
		if l.seenTitles != nil {
			if _, seen := l.seenTitles[h.Title]; seen {
				continue
			}
			l.seenTitles[h.Title] = struct{}{}
		}
		l.seenIDs[h.ID] = struct{}{}
		l.exclude = append(l.exclude, h.ID)
		kept = append(kept, h)
	}
	return kept, nil
}

// BuildQuery writes the query of a round (METHOD step 3): the question, then
// for each of the first QueryGaps gap items a phrase (gapPhrase), items
// with nothing to add skipped. With firstGapOnly only the first item is
// used: under QueryDistill the first that adds something, under
// QueryReference the first whatever it adds. No gaps means the bare
// question. Parts are joined by single spaces and trimmed, and line
// breaks become spaces.
func BuildQuery(question string, gaps []data.GapItem, firstGapOnly bool, rule QueryRule) string {
	parts := []string{data.OneLine(question)}
	switch {
	case !firstGapOnly:
		gaps = gaps[:min(len(gaps), QueryGaps)]
	case rule == QueryReference:
		gaps = gaps[:min(len(gaps), 1)]
	}
	for _, g := range gaps {
		part := gapPhrase(g, rule)
		if part == "" {
			continue
		}
		parts = append(parts, part)
		if firstGapOnly {
			break
		}
	}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// gapPhrase is what a gap item adds to the query: target + " " + slot
// (under QueryDistill whichever of them is set), else the description.
func gapPhrase(g data.GapItem, rule QueryRule) string {
	target, slot := strings.TrimSpace(g.Target), strings.TrimSpace(g.Slot)
	if rule == QueryReference && (target == "" || slot == "") {
		return data.OneLine(g.Description)
	}
	if part := data.OneLine(strings.TrimSpace(target + " " + slot)); part != "" {
		return part
	}
	return data.OneLine(g.Description)
}

// number splits the retrieved documents into sentences, at most maxPerDoc
// per document (the passage's own split when it has one, unless a
// splitter is given: it splits every text), and numbers them globally
// from 1. Blank sentences are not shown; indexes stay those of the
// document.
func number(hits []retrieve.Hit, maxPerDoc int, splitter Splitter) ([]Numbered, error) {
	var split [][]string
	if splitter != nil && len(hits) > 0 {
		texts := make([]string, len(hits))
		for i, h := range hits {
			texts[i] = h.Text
		}
		var err error
		if split, err = splitter.Split(texts); err != nil {
			return nil, err
		}
		if len(split) != len(hits) {
			return nil, fmt.Errorf("%s split %d texts into %d", splitter.Name(), len(hits), len(split))
		}
	}
	var out []Numbered
	for d, h := range hits {
		sentences := h.Sentences
		switch {
		case split != nil:
			sentences = split[d]
		case len(sentences) == 0:
			sentences = data.Sentences(h.Text)
		}
		for i, s := range sentences[:min(len(sentences), maxPerDoc)] {
			if strings.TrimSpace(s) == "" {
				continue
			}
			e := data.Evidence{DocID: h.ID, Title: h.Title, Index: int32(i), Text: s}
			id := len(out) + 1
			out = append(out, Numbered{ID: id, Evidence: e, Line: NumberedLine(id, e)})
		}
	}
	return out, nil
}

// clampID fits an id given by a model into an int32 column.
func clampID(id int) int32 {
	const lo, hi = -1 << 31, 1<<31 - 1
	return int32(min(max(id, lo), hi))
}

// roleError wraps a role's error: a *RoleError for the question, or the
// context's error when the run is being cancelled.
func roleError(ctx context.Context, role string, round int, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s at round %d: %w", role, round, cerr)
	}
	return &RoleError{Role: role, Round: round, Err: err}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
