package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout"
)

// Names of what a run writes in its output directory.
const (
	TrajectoriesFile = "trajectories.parquet"
	ReportFile       = "run.json"
	PartsDir         = "parts"
)

// Statuses of a run, as run.json records them.
const (
	// StatusRunning: the run started and has not ended, or was killed.
	StatusRunning = "running"
	// StatusInterrupted: the run ended early (cancelled, or a systemic
	// error, in Report.Error); resume it.
	StatusInterrupted = "interrupted"
	// StatusDone: trajectories.parquet holds every selected question.
	StatusDone = "done"
)

// Report is the content of run.json: how a run was configured, what
// produced its rows, what it did and what it cost. Run writes it when it
// starts and at every checkpoint (status running), and when it ends (done,
// or interrupted with the error).
type Report struct {
	Status string `json:"status"`
	// Error is the systemic error that interrupted the run.
	Error   string `json:"error,omitempty"`
	Version string `json:"version,omitempty"`
	// StartedAt and FinishedAt bound this invocation (the last one of a
	// resumed run); WallSeconds is its time so far, and QuestionsPerSecond
	// the questions it ran per second of it.
	StartedAt          time.Time `json:"started_at"`
	FinishedAt         time.Time `json:"finished_at,omitzero"`
	WallSeconds        float64   `json:"wall_seconds"`
	QuestionsPerSecond float64   `json:"questions_per_second"`
	// Resumes counts the earlier invocations this one continued.
	Resumes int    `json:"resumes"`
	Config  Config `json:"config"`
	Roles   Roles  `json:"roles"`
	Counts  Counts `json:"counts"`
	// Usage is the model usage of each role, as the model client accounts
	// it, over every invocation of the run (as far as each recorded it at
	// its last checkpoint); CostUSD is its total cost.
	Usage   []llm.Stats `json:"usage,omitempty"`
	CostUSD float64     `json:"cost_usd"`
	// Inputs lists the runs a merged output was made of, and
	// MissingShards the shards of their split that are not among them
	// (Merge only).
	Inputs        []Input  `json:"inputs,omitempty"`
	MissingShards []string `json:"missing_shards,omitempty"`
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
}

func loopConfig(o rollout.Options) Loop {
	orDefault := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	return Loop{
		Policy:        o.Policy.String(),
		MaxRetrievals: orDefault(o.MaxRetrievals, rollout.DefaultMaxRetrievals),
		TopK:          orDefault(o.TopK, rollout.DefaultTopK),
		MaxEvidence:   orDefault(o.MaxEvidence, rollout.DefaultMaxEvidence),
		MaxSentences:  orDefault(o.MaxSentences, rollout.DefaultMaxSentences),
		FirstGapOnly:  o.FirstGapOnly,
		Dedup:         o.Dedup.String(),
	}
}

// Role describes one role of a run: what the caller configured (Name such
// as "lexical" or "llm", the model and server) and, in Seen, every model
// and prompt-template hash that the rows record for it.
type Role struct {
	Name    string `json:"name"`
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
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
type Input struct {
	Dir         string  `json:"dir"`
	Shard       string  `json:"shard,omitempty"`
	Questions   int     `json:"questions"`
	Rows        int64   `json:"rows"`
	WallSeconds float64 `json:"wall_seconds"`
}

// ReadReport reads DIR/run.json.
func ReadReport(dir string) (Report, error) {
	var r Report
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		return r, err // *fs.PathError names the file
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", filepath.Join(dir, ReportFile), err)
	}
	return r, nil
}

// writeReport writes DIR/run.json atomically.
func writeReport(dir string, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write run report: %w", err)
	}
	return data.WriteFileAtomic(filepath.Join(dir, ReportFile), append(b, '\n'))
}

// ErrMismatch is the cause of errors about runs that cannot be continued or
// merged because they were configured differently.
var ErrMismatch = errors.New("runs configured differently")

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
		if r.x.Name != r.y.Name || r.x.Model != r.y.Model {
			add(r.name, quote(strings.TrimSpace(r.x.Name+" "+r.x.Model)), quote(strings.TrimSpace(r.y.Name+" "+r.y.Model)))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(diffs, "; "), ErrMismatch)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
