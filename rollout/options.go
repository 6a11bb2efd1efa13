package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/distill-rag/distill/data"
)

// Policy says when the loop stops.
type Policy int

const (
	// EarlyStop stops as soon as the judge calls the evidence sufficient
	// (after the forced first retrieval), or when the budget is spent.
	EarlyStop Policy = iota
	// Fixed always spends the whole retrieval budget, recording the judge's
	// verdict at every state, as the reference traces were collected.
	Fixed
)

var policyNames = []string{EarlyStop: "early-stop", Fixed: "fixed"}

func (p Policy) String() string { return enumString(p, "Policy", policyNames) }

// ParsePolicy parses "early-stop" or "fixed".
func ParsePolicy(s string) (Policy, error) { return parseEnum[Policy]("policy", s, policyNames) }

// Dedup says when a retrieved document counts as already seen.
type Dedup int

const (
	// DedupDocID skips documents whose id was retrieved before.
	DedupDocID Dedup = iota
	// DedupTitle skips documents whose title was retrieved before, as
	// SIM-RAG does; it also keeps one document per title within a round.
	DedupTitle
)

var dedupNames = []string{DedupDocID: "doc-id", DedupTitle: "title"}

func (d Dedup) String() string { return enumString(d, "Dedup", dedupNames) }

// ParseDedup parses "doc-id" or "title".
func ParseDedup(s string) (Dedup, error) { return parseEnum[Dedup]("dedup", s, dedupNames) }

// QueryRule says how gap items become the next query.
type QueryRule int

const (
	// QueryDistill adds target + " " + slot of each of the first
	// QueryGaps gap items, or whichever of the two is set, or else the
	// description; with FirstGapOnly, the first item that adds anything.
	QueryDistill QueryRule = iota
	// QueryReference is the authors' code: target + " " + slot only when
	// both are set, else the description, else nothing; with
	// FirstGapOnly the first item, whatever it adds. A TriviaQA question
	// (Dataset "triviaqa") always takes the first item only, as their
	// TriviaQA runs did.
	QueryReference
)

var queryRuleNames = []string{QueryDistill: "distill", QueryReference: "reference"}

func (r QueryRule) String() string { return enumString(r, "QueryRule", queryRuleNames) }

// ParseQueryRule parses "distill" or "reference".
func ParseQueryRule(s string) (QueryRule, error) {
	return parseEnum[QueryRule]("query rule", s, queryRuleNames)
}

// The enums of Options (Policy, Dedup, QueryRule) are small ints named by a list
// indexed by value: a value is valid when it has a name.

// enumString returns the name of v, or typ(v) when it has none.
func enumString[T ~int](v T, typ string, names []string) string {
	if validEnum(v, names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// parseEnum returns the value named s; what names the enum in the error.
func parseEnum[T ~int](what, s string, names []string) (T, error) {
	if i := slices.Index(names, s); i >= 0 {
		return T(i), nil
	}
	return 0, fmt.Errorf("%s %q: want %s: %w", what, s, strings.Join(names, " or "), ErrOptions)
}

func validEnum[T ~int](v T, names []string) bool { return v >= 0 && int(v) < len(names) }

// Options configure the loop. The zero value is the method's setting: zero
// numbers mean the defaults above.
type Options struct {
	// MaxRetrievals bounds the retrievals per question (default 4). One
	// retrieval always happens.
	MaxRetrievals int
	// TopK is the number of new documents per retrieval (default 6).
	TopK int
	// MaxEvidence (the method's K) bounds the sentences the extractor may
	// choose per round (default 6).
	MaxEvidence int
	// MaxSentences bounds the sentences shown per document (default 40).
	MaxSentences int
	// FirstGapOnly builds the query from the first valid gap item only
	// (the paper's description) instead of the first three.
	FirstGapOnly bool
	// QueryRule says how gap items become the query (default
	// QueryDistill).
	QueryRule QueryRule
	// Evidence is how the evidence context is laid out (data.Layout;
	// empty: data.LayoutDistill). Under data.LayoutReference the chosen
	// sentences are appended in retrieval order, each document's in
	// sentence order, as the authors' code appends them.
	Evidence data.Layout
	// Splitter, when set, splits every retrieved document's text into
	// sentences in place of the passage's own split and
	// data.SplitSentences (rollout/pysbd: the authors' pysbd).
	Splitter Splitter
	// Dedup says which documents count as seen (default by doc id).
	Dedup Dedup
	// Policy says when to stop (default EarlyStop).
	Policy Policy
	// EvidenceTokens, when positive, bounds the question and the rendered
	// evidence context together, in tokens (EstimateTokens), so that the
	// judge's and the reader's prompts fit their models' context window:
	// chosen sentences that would take the context past it are not
	// appended (the last ones chosen first), and the state records how
	// many (data.State.EvidenceTrimmed). The context every state records is
	// the one the judge saw, so trimmed training data stays exact.
	EvidenceTokens int
	// CandidateTokens, when positive, bounds the question and the numbered
	// sentences shown to the extractor (or compressor) in one round: the
	// sentences past it, the lowest-ranked documents' last, are not shown,
	// and the state records how many (data.State.CandidatesTrimmed).
	// Budgets.Apply sets both from a model's context window.
	CandidateTokens int
}

// Splitter splits documents into sentences (Options.Splitter). Split
// returns the sentences of each text, in order; an error fails the
// question, as a role's does. Name names it in run.json.
// It is called from the loops of every worker at once.
type Splitter interface {
	Split(texts []string) ([][]string, error)
	Name() string
}

// ErrOptions is the cause of errors about bad Options.
var ErrOptions = errors.New("bad loop options")

// ErrMissingRole is returned by Run when a role of Roles is nil.
var ErrMissingRole = errors.New("missing role")

// withDefaults checks o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"max retrievals", &o.MaxRetrievals, DefaultMaxRetrievals},
		{"top-k", &o.TopK, DefaultTopK},
		{"max evidence", &o.MaxEvidence, DefaultMaxEvidence},
		{"max sentences", &o.MaxSentences, DefaultMaxSentences},
	} {
		if *f.v < 0 {
			return o, fmt.Errorf("%s %d: %w", f.name, *f.v, ErrOptions)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if o.EvidenceTokens < 0 || o.CandidateTokens < 0 {
		return o, fmt.Errorf("token budgets %d and %d: %w", o.EvidenceTokens, o.CandidateTokens, ErrOptions)
	}
	if !validEnum(o.Policy, policyNames) {
		return o, fmt.Errorf("%v: %w", o.Policy, ErrOptions)
	}
	if !validEnum(o.Dedup, dedupNames) {
		return o, fmt.Errorf("%v: %w", o.Dedup, ErrOptions)
	}
	if !validEnum(o.QueryRule, queryRuleNames) {
		return o, fmt.Errorf("%v: %w", o.QueryRule, ErrOptions)
	}
	return o, nil
}
