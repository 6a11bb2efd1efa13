package runner

import (
	"fmt"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/rollout"
)

// Names of what a run writes in its output directory.
const (
	TrajectoriesFile = "trajectories.parquet"
	ReportFile       = "run.json"
	PartsDir         = stage.PartsDir
)

// Statuses of a run, as run.json records them (see package stage).
const (
	StatusRunning     = stage.StatusRunning
	StatusInterrupted = stage.StatusInterrupted
	StatusDone        = stage.StatusDone
)

// Report is the content of run.json: the header every stage's report has
// (status, times, resumes, usage and cost, and for a merge its inputs; see
// package stage), how the run was configured, what produced its rows and
// what it did. Run writes it when it starts and at every checkpoint
// (status running), and when it ends (done, or interrupted with the error).
type Report struct {
	stage.Header
	// QuestionsPerSecond is the questions this invocation ran per second
	// of its wall time.
	QuestionsPerSecond float64 `json:"questions_per_second"`
	Config             Config  `json:"config"`
	Roles              Roles   `json:"roles"`
	Counts             Counts  `json:"counts"`
}

// Config is what decides which rows a run writes. A resumed run must have
// the same Limit, Shard, Loop and role names and models as the run it
// continues; merged runs the same Limit, Loop and roles.
type Config struct {
	// Questions and Retriever name the sources (a path, "sample", ...).
	Questions string `json:"questions"`
	Retriever string `json:"retriever"`
	Limit     int    `json:"limit,omitempty"`
	Shard     string `json:"shard,omitempty"`
	Workers   int    `json:"workers"`
	// CheckpointQuestions and CheckpointSeconds bound the questions and
	// the time between two parts.
	CheckpointQuestions int     `json:"checkpoint_questions"`
	CheckpointSeconds   float64 `json:"checkpoint_seconds"`
	Loop                Loop    `json:"loop"`
}

// Loop is the loop's options with the defaults filled in.
type Loop struct {
	Policy        string `json:"policy"`
	MaxRetrievals int    `json:"max_retrievals"`
	TopK          int    `json:"top_k"`
	MaxEvidence   int    `json:"max_evidence"`
	MaxSentences  int    `json:"max_sentences"`
	FirstGapOnly  bool   `json:"first_gap_only"`
	Dedup         string `json:"dedup"`
	// QueryRule is "reference" for the authors' rule, empty for distill's
	// (as runs before the option recorded it).
	QueryRule string `json:"query_rule,omitempty"`
	// Evidence is "reference" for the authors' evidence layout, empty for
	// distill's (as runs before the option recorded it).
	Evidence string `json:"evidence_layout,omitempty"`
	// Splitter names the sentence splitter when it is not distill's
	// ("pysbd 0.3.4"; rollout.Options.Splitter).
	Splitter string `json:"splitter,omitempty"`
}

func loopConfig(o rollout.Options) Loop {
	orDefault := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	l := Loop{
		Policy:        o.Policy.String(),
		MaxRetrievals: orDefault(o.MaxRetrievals, rollout.DefaultMaxRetrievals),
		TopK:          orDefault(o.TopK, rollout.DefaultTopK),
		MaxEvidence:   orDefault(o.MaxEvidence, rollout.DefaultMaxEvidence),
		MaxSentences:  orDefault(o.MaxSentences, rollout.DefaultMaxSentences),
		FirstGapOnly:  o.FirstGapOnly,
		Dedup:         o.Dedup.String(),
	}
	if o.QueryRule != rollout.QueryDistill {
		l.QueryRule = o.QueryRule.String()
	}
	if o.Evidence != "" && o.Evidence != data.LayoutDistill {
		l.Evidence = string(o.Evidence)
	}
	if o.Splitter != nil {
		l.Splitter = o.Splitter.Name()
	}
	return l
}

// Role describes one role of a run: what the caller configured (Name such
// as "lexical" or "llm", the model and server) and, in Seen, every model
// and prompt-template hash that the rows record for it.
type Role struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
	// Setting names what else the caller set that changes the role's
	// answers ("no-repair" for a judge asked once, "reference-input" for
	// a reader shown every round); a resumed run must have the same.
	Setting string `json:"setting,omitempty"`
	Seen    []Seen `json:"seen,omitempty"`
}

// Seen is one model and template hash found in the rows, with the number of
// rows (or extractions) that carry it.
type Seen struct {
	Model    string `json:"model"`
	Template string `json:"template"`
	Rows     int64  `json:"rows"`
}

// Roles describes the three roles of a run.
type Roles struct {
	Judge     Role `json:"judge"`
	Extractor Role `json:"extractor"`
	Reader    Role `json:"reader"`
}

// Counts are the tallies of a run.
type Counts struct {
	// Selected counts the questions of the run: the first Limit unique
	// ids of the input that the shard holds.
	Selected int `json:"selected"`
	// InputQuestions counts the questions read from the input up to the
	// limit; DuplicateIDs the ones skipped as repeats of an earlier id.
	InputQuestions int `json:"input_questions"`
	DuplicateIDs   int `json:"duplicate_ids"`
	// AlreadyDone counts the selected questions that earlier invocations
	// had written (skipped on resume).
	AlreadyDone int `json:"already_done"`
	// Run is what this invocation did; Output what the output holds.
	Run    RunCounts    `json:"run"`
	Output OutputCounts `json:"output"`
}

// RunCounts are the questions one invocation ran.
type RunCounts struct {
	Done   int   `json:"done"`
	Failed int   `json:"failed"`
	States int64 `json:"states"`
}

// OutputCounts describe the rows of trajectories.parquet (or of the parts,
// for a run that has not finished).
type OutputCounts struct {
	Questions int   `json:"questions"`
	Done      int   `json:"done"`
	Failed    int   `json:"failed"`
	Rows      int64 `json:"rows"`
	// States counts the rows of questions that did not fail.
	States int64 `json:"states"`
	Parts  int   `json:"parts,omitempty"`
	// Rounds maps the number of retrievals of a question that did not
	// fail to the number of such questions.
	Rounds map[int]int `json:"rounds"`
	// Parse failures of each role's output, and t = 0 overrides.
	JudgeParseFailures     int64 `json:"judge_parse_failures"`
	ExtractorParseFailures int64 `json:"extractor_parse_failures"`
	ReaderParseFailures    int64 `json:"reader_parse_failures"`
	Overrides              int64 `json:"overrides"`
	// Calls of each role whose first answer was unusable and that were
	// asked once more (those that then failed are parse failures too).
	JudgeRepairs     int64 `json:"judge_repairs"`
	ExtractorRepairs int64 `json:"extractor_repairs"`
	ReaderRepairs    int64 `json:"reader_repairs"`
	// Sentences left out to fit the models' context window: not shown to
	// the extractor, and chosen but not appended to the evidence.
	CandidatesTrimmed int64 `json:"candidates_trimmed"`
	EvidenceTrimmed   int64 `json:"evidence_trimmed"`
	// Tokens recorded in the rows, by role.
	Tokens TokenCounts `json:"tokens"`
	// Failures lists the first failed questions with their reasons.
	Failures []Failure `json:"failures,omitempty"`
}

// TokenCounts are the tokens the rows record, by role.
type TokenCounts struct {
	JudgePrompt         int64 `json:"judge_prompt"`
	JudgeCompletion     int64 `json:"judge_completion"`
	ExtractorPrompt     int64 `json:"extractor_prompt"`
	ExtractorCompletion int64 `json:"extractor_completion"`
	ReaderPrompt        int64 `json:"reader_prompt"`
	ReaderCompletion    int64 `json:"reader_completion"`
}

// Failure is one failed question and why.
type Failure struct {
	QuestionID string `json:"question_id"`
	Reason     string `json:"reason"`
}

// maxFailures bounds the failures a report lists.
const maxFailures = 20

// Input is one run that a merged output was made of.
type Input = stage.Input

// ReadReport reads DIR/run.json.
func ReadReport(dir string) (Report, error) { return stage.ReadReport[Report](dir, ReportFile) }

// sameRows says how a and b differ in what decides the rows they write: the
// loop, the limit and the role names and models, and with shards the shard;
// nil when they do not.
func sameRows(a, b Report, shards bool) error {
	var diffs []string
	add := func(what string, x, y any) {
		diffs = append(diffs, fmt.Sprintf("%s %v vs %v", what, x, y))
	}
	if a.Config.Loop != b.Config.Loop {
		add("loop", fmt.Sprintf("%+v", a.Config.Loop), fmt.Sprintf("%+v", b.Config.Loop))
	}
	if a.Config.Limit != b.Config.Limit {
		add("limit", a.Config.Limit, b.Config.Limit)
	}
	if shards && a.Config.Shard != b.Config.Shard {
		add("shard", quote(a.Config.Shard), quote(b.Config.Shard))
	}
	for _, r := range []struct {
		name string
		x, y Role
	}{{"judge", a.Roles.Judge, b.Roles.Judge}, {"extractor", a.Roles.Extractor, b.Roles.Extractor}, {"reader", a.Roles.Reader, b.Roles.Reader}} {
		if r.x.Name != r.y.Name || r.x.Model != r.y.Model || r.x.Setting != r.y.Setting {
			add(r.name, quote(strings.TrimSpace(r.x.Name+" "+r.x.Model+" "+r.x.Setting)), quote(strings.TrimSpace(r.y.Name+" "+r.y.Model+" "+r.y.Setting)))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(diffs, "; "), ErrMismatch)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
