package label

import (
	"fmt"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
)

// Statuses of a labelling run, as label.json records them (see package
// stage).
const (
	StatusRunning     = stage.StatusRunning
	StatusInterrupted = stage.StatusInterrupted
	StatusBudget      = stage.StatusBudget
	StatusDone        = stage.StatusDone
)

// Info describes a run for its label.json.
type Info struct {
	Version string
	// Questions names the source of the questions (a path, "sample").
	Questions string
	// Teacher is the teacher's name (NameLLM, NameRetrievalTruth), Model
	// its model, Template its template hash; BaseURL, Temperature,
	// MaxTokens and SeedBase its settings (model teachers).
	Teacher, Model, BaseURL, Template string
	Temperature                       float64
	MaxTokens, SeedBase               int
}

// Report is the content of label.json: the header every stage's report
// has (status, times, resumes, budget, usage and cost, and for a merge its
// inputs; see package stage), the configuration and the counts.
type Report struct {
	stage.Header
	Config Config `json:"config"`
	Counts Counts `json:"counts"`
	// Batches lists the batches of a batch run.
	Batches []BatchRecord `json:"batches,omitempty"`
}

// Config is how a run was configured; a resumed run must match it.
type Config struct {
	In          string  `json:"in"`
	Questions   string  `json:"questions"`
	Teacher     string  `json:"teacher"`
	Model       string  `json:"model"`
	BaseURL     string  `json:"base_url,omitempty"`
	Template    string  `json:"template"`
	Samples     int     `json:"samples"`
	Temperature float64 `json:"temperature"`
	MaxTokens   int     `json:"max_tokens,omitempty"`
	SeedBase    int     `json:"seed_base,omitempty"`
	Workers     int     `json:"workers"`
	Limit       int     `json:"limit,omitempty"`
	SkipEmpty   bool    `json:"skip_empty,omitempty"`
	Shard       string  `json:"shard,omitempty"`
	BudgetUSD   float64 `json:"budget_usd,omitempty"`
	Batch       bool    `json:"batch,omitempty"`
}

// Counts are a run's counts.
type Counts struct {
	// InputRows counts the rows of the input; FailedQuestionRows those
	// recording a failed question (not states, not labelled).
	InputRows          int `json:"input_rows"`
	FailedQuestionRows int `json:"failed_question_rows"`
	// OtherShards counts the states of questions of other shards.
	OtherShards int `json:"other_shards,omitempty"`
	// EmptyStates counts the states with no evidence left unlabelled
	// (Options.SkipEmpty).
	EmptyStates int `json:"empty_states,omitempty"`
	// Selected counts the states of the run (the first Limit);
	// AlreadyDone those earlier invocations labelled.
	Selected    int `json:"selected"`
	AlreadyDone int `json:"already_done"`
	// Run counts what this invocation labelled.
	Run RunCounts `json:"run"`
	// Parts counts the committed parts.
	Parts int `json:"parts"`
	// Output describes labels.parquet once it is written.
	Output OutputCounts `json:"output"`
}

// RunCounts count the states an invocation labelled.
type RunCounts struct {
	States  int   `json:"states"`
	Failed  int   `json:"failed"`
	Samples int64 `json:"samples"`
}

// OutputCounts describe labels.parquet.
type OutputCounts struct {
	States     int   `json:"states"`
	Samples    int64 `json:"samples"`
	Sufficient int   `json:"sufficient"`
	// Failed counts states with no usable sample; UnusableSamples the
	// samples whose request failed or whose answer could not be parsed.
	Failed           int   `json:"failed"`
	RequestFailures  int64 `json:"request_failures"`
	ParseFailures    int64 `json:"parse_failures"`
	Contradictions   int   `json:"states_with_contradictions"`
	UnanimousStates  int   `json:"unanimous_states"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// TruthAgreement counts the states retrieval truth settles (strong
	// positive or negative) and those where the label agrees with it.
	TruthSettled int `json:"truth_settled"`
	TruthAgree   int `json:"truth_agree"`
}

// tally counts the labels of an output as the engine streams them past
// (stage.Layout.Count); the engine checks that no state appears in two
// places.
type tally struct {
	out OutputCounts
}

// state counts the label of one state: a unit of one row.
func (t *tally) state(ls []data.Label) error {
	l := &ls[0]
	if len(ls) > 1 {
		return fmt.Errorf("state %s round %d appears twice", l.QuestionID, l.Round)
	}
	o := &t.out
	o.States++
	o.Samples += int64(len(l.Samples))
	o.PromptTokens += l.PromptTokens
	o.CompletionTokens += l.CompletionTokens
	if l.Failure != "" {
		o.Failed++
	} else if l.Sufficient {
		o.Sufficient++
	}
	for _, s := range l.Samples {
		switch {
		case s.Error != "":
			o.RequestFailures++
		case s.ParseError != "":
			o.ParseFailures++
		}
	}
	if l.Contradiction {
		o.Contradictions++
	}
	if l.Failure == "" && l.Agreement == 1 {
		o.UnanimousStates++
	}
	if l.Failure == "" && l.TruthStrength != data.Neither.String() {
		o.TruthSettled++
		if l.Sufficient == (l.TruthStrength == data.StrongPositive.String()) {
			o.TruthAgree++
		}
	}
	return nil
}

// ReadReport reads DIR/label.json.
func ReadReport(dir string) (Report, error) { return stage.ReadReport[Report](dir, ReportFile) }

// layout describes a labelling run's output to the engine: labels, whose
// units are states, one row each.
func layout(count func([]data.Label) error) stage.Layout[data.StateKey, data.Label, *Report] {
	return stage.Layout[data.StateKey, data.Label, *Report]{
		File: LabelsFile, ReportFile: ReportFile, Kind: data.KindLabels, Unit: "states",
		Key:      func(l *data.Label) data.StateKey { return l.Key() },
		Describe: func(k data.StateKey) string { return fmt.Sprintf("state %s round %d", k.QuestionID, k.Round) },
		Failure:  func(ls []data.Label) string { return ls[0].Failure },
		Count:    count,
		Read: func(dir string) (*Report, error) {
			rep, err := ReadReport(dir)
			return &rep, err
		},
		Same: func(a, b *Report, shard bool) error {
			x, y := a.Config, b.Config
			if !shard {
				x.Shard, y.Shard = "", ""
			}
			return sameLabels(x, y)
		},
	}
}

// sameLabels says how two configurations differ in what decides the labels
// they write; nil when they do not. Workers, the budget and the batch path
// may change between invocations.
func sameLabels(a, b Config) error {
	var diffs []string
	diff := func(name string, x, y any) {
		if x != y {
			diffs = append(diffs, fmt.Sprintf("%s %v, now %v", name, x, y))
		}
	}
	diff("input", a.In, b.In)
	diff("teacher", a.Teacher, b.Teacher)
	diff("model", a.Model, b.Model)
	diff("template", a.Template, b.Template)
	diff("samples", a.Samples, b.Samples)
	diff("temperature", a.Temperature, b.Temperature)
	diff("max tokens", a.MaxTokens, b.MaxTokens)
	diff("seed base", a.SeedBase, b.SeedBase)
	diff("limit", a.Limit, b.Limit)
	diff("shard", a.Shard, b.Shard)
	if len(diffs) > 0 {
		return fmt.Errorf("%w: %s", ErrMismatch, strings.Join(diffs, "; "))
	}
	return nil
}
