package data

// KindLabels is the kind of the files of labelling and filtering
// (labels.parquet, train.parquet, val.parquet, dropped.parquet): rows of
// Label.
const KindLabels Kind = "labels"

// Label is one recorded state of a rollout as a teacher labelled it: the
// state's question and evidence context (exactly as the judge saw them),
// what retrieval truth says about that context, every sample the teacher
// gave, and their aggregate.
//
// distill label writes one Label per state; distill filter writes the same
// rows, with the aggregate verdict normalised and Split or the Drop fields
// set. The rows for training are (judge.Prompt(Question, Context), Verdict()).
type Label struct {
	// The state: its question, round and context, as in State.
	QuestionID string     `parquet:"question_id" json:"question_id"`
	Dataset    string     `parquet:"dataset" json:"dataset"`
	Round      int32      `parquet:"round" json:"round"`
	Question   string     `parquet:"question" json:"question"`
	Context    string     `parquet:"context" json:"context"`
	Evidence   []Evidence `parquet:"evidence,list" json:"evidence"`
	IsFinal    bool       `parquet:"is_final" json:"is_final"`
	// JudgeModel and JudgeSufficient are the rollout judge's model and its
	// verdict on the state, for comparison with the teacher.
	JudgeModel      string `parquet:"judge_model" json:"judge_model"`
	JudgeSufficient bool   `parquet:"judge_sufficient" json:"judge_sufficient"`

	// Retrieval truth: the question's gold titles and answers, and what
	// JudgeTruth says of the context.
	GoldTitles       []string `parquet:"gold_titles,list" json:"gold_titles"`
	Answers          []string `parquet:"answers,list" json:"answers"`
	TruthTitlesFound int32    `parquet:"truth_titles_found" json:"truth_titles_found"`
	TruthAnswerFound bool     `parquet:"truth_answer_found" json:"truth_answer_found"`
	TruthComplete    bool     `parquet:"truth_complete" json:"truth_complete"`
	// TruthStrength is Strength.String(): strong-positive, strong-negative
	// or neither.
	TruthStrength string `parquet:"truth_strength" json:"truth_strength"`

	// Teacher names the teacher ("llm" or the built-in "retrieval-truth"),
	// TeacherModel its model and TeacherTemplate the hash of its prompt
	// template (for built-in teachers, a hash of their rules' version).
	Teacher         string `parquet:"teacher" json:"teacher"`
	TeacherModel    string `parquet:"teacher_model" json:"teacher_model"`
	TeacherTemplate string `parquet:"teacher_template" json:"teacher_template"`
	// Samples are the teacher's answers, one per sample, in sample order.
	Samples []LabelSample `parquet:"samples,list" json:"samples"`

	// The aggregate of the samples. Sufficient is the majority verdict of
	// the usable samples (a tie is insufficient); Agreement the share of
	// all samples that gave it (unusable samples agree with nothing).
	// GapItems are the gap items that recur: those (matched on normalised
	// category, target and slot) given by more than half of the usable
	// samples that said insufficient, most supported first, with their
	// support in GapSupport. Contradiction is set when a sample contradicted
	// itself (Contradictions say which and how). Failure says why no sample
	// was usable; the verdict is then insufficient with no gap items.
	Sufficient      bool      `parquet:"sufficient" json:"sufficient"`
	GapItems        []GapItem `parquet:"gap_items,list" json:"gap_items"`
	GapSupport      []int32   `parquet:"gap_support,list" json:"gap_support"`
	Votes           int32     `parquet:"votes" json:"votes"`
	SufficientVotes int32     `parquet:"sufficient_votes" json:"sufficient_votes"`
	Agreement       float64   `parquet:"agreement" json:"agreement"`
	Contradiction   bool      `parquet:"contradiction" json:"contradiction"`
	Contradictions  []string  `parquet:"contradictions,list" json:"contradictions,omitempty"`
	Failure         string    `parquet:"failure" json:"failure,omitempty"`

	// Tokens of all samples together.
	PromptTokens     int64 `parquet:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens int64 `parquet:"completion_tokens" json:"completion_tokens"`

	// Set by distill filter: the split a kept row went to ("train" or
	// "val"), or the rule that dropped it and why.
	Split      string `parquet:"split" json:"split,omitempty"`
	DropRule   string `parquet:"drop_rule" json:"drop_rule,omitempty"`
	DropReason string `parquet:"drop_reason" json:"drop_reason,omitempty"`
}

// Verdict returns the label's aggregate verdict.
func (l Label) Verdict() Verdict {
	return Verdict{Sufficient: l.Sufficient, GapItems: l.GapItems}
}

// Key returns the state's identity within a run: its question and round.
func (l Label) Key() StateKey { return StateKey{QuestionID: l.QuestionID, Round: l.Round} }

// StateKey identifies a state of a run.
type StateKey struct {
	QuestionID string
	Round      int32
}

// Key returns the state's identity within a run.
func (s State) Key() StateKey { return StateKey{QuestionID: s.QuestionID, Round: s.Round} }

// LabelSample is one answer of a teacher about one state.
type LabelSample struct {
	// Sample is the 0-based sample number; Seed the seed sent with the
	// request (samples differ in seed so that they are distinct requests)
	// and Temperature the temperature.
	Sample      int32   `parquet:"sample" json:"sample"`
	Seed        int64   `parquet:"seed" json:"seed"`
	Temperature float64 `parquet:"temperature" json:"temperature"`
	// Output is the teacher's raw answer. Sufficient and GapItems are its
	// parsed verdict (judge.ParseVerdict: gap items of a sufficient verdict
	// dropped); ParseError says why it could not be parsed, and the sample
	// is then unusable. Contradiction says how the answer contradicted
	// itself, if it did: "sufficient with gap items", "insufficient with no
	// gap items" or "non-boolean sufficient".
	Output        string    `parquet:"output" json:"output"`
	Sufficient    bool      `parquet:"sufficient" json:"sufficient"`
	GapItems      []GapItem `parquet:"gap_items,list" json:"gap_items"`
	ParseError    string    `parquet:"parse_error" json:"parse_error,omitempty"`
	Contradiction string    `parquet:"contradiction" json:"contradiction,omitempty"`
	// Error is why the request failed (after its retries); the sample is
	// then unusable.
	Error string `parquet:"error" json:"error,omitempty"`
	// Model is the model that answered, TemplateHash the hash of the prompt
	// template; the tokens are the request's usage.
	Model            string  `parquet:"model" json:"model"`
	TemplateHash     string  `parquet:"template_hash" json:"template_hash"`
	PromptTokens     int64   `parquet:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens int64   `parquet:"completion_tokens" json:"completion_tokens"`
	Cached           bool    `parquet:"cached" json:"cached,omitempty"`
	LatencyMS        float64 `parquet:"latency_ms" json:"latency_ms"`
	// BatchID and CustomID say where a sample labelled through the Batch
	// API came from.
	BatchID  string `parquet:"batch_id" json:"batch_id,omitempty"`
	CustomID string `parquet:"custom_id" json:"custom_id,omitempty"`
}

// Usable reports whether the sample holds a verdict.
func (s LabelSample) Usable() bool { return s.Error == "" && s.ParseError == "" }
