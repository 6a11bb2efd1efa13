package data

// KindTrajectories is the kind of a rollout's trajectories file: rows of
// State.
const KindTrajectories Kind = "trajectories"

// State is one row of a rollout's trajectories: one judge call of the loop
// on one question, at round t (0-based), with everything that led to the
// evidence context C_t the judge saw and what the judge made of it.
//
// The fields about retrieval and extraction describe how C_t came about:
// Queries and Retrieved hold every query and every retrieved document of
// rounds 0 to t-1, and the extractor fields describe the extraction of round
// t-1, the one that produced C_t (they are empty at round 0). The answer
// fields are set on the last state of a question only (IsFinal). A question
// that failed is recorded with Failure set to the reason.
type State struct {
	QuestionID string `parquet:"question_id" json:"question_id"`
	Dataset    string `parquet:"dataset" json:"dataset"`
	// Round is the number of retrievals before this judge call.
	Round    int32  `parquet:"round" json:"round"`
	Question string `parquet:"question" json:"question"`
	// Context is the evidence context exactly as the judge saw it
	// (Context.Render); Evidence is the same context sentence by sentence,
	// in rendering order, with provenance.
	Context  string     `parquet:"context" json:"context"`
	Evidence []Evidence `parquet:"evidence,list" json:"evidence"`
	// Queries are the queries issued so far; query i was issued in round i.
	Queries []string `parquet:"queries,list" json:"queries"`
	// Retrieved lists the documents retrieved so far, round by round, each
	// round in rank order.
	Retrieved []RetrievedDoc `parquet:"retrieved,list" json:"retrieved"`

	// JudgeOutput is the judge's raw output; Sufficient and GapItems its
	// parsed verdict (gap items of a sufficient verdict dropped). When the
	// output could not be parsed, JudgeParseError says why and the verdict
	// is insufficient with no gap items.
	JudgeOutput     string    `parquet:"judge_output" json:"judge_output"`
	Sufficient      bool      `parquet:"sufficient" json:"sufficient"`
	GapItems        []GapItem `parquet:"gap_items,list" json:"gap_items"`
	JudgeParseError string    `parquet:"judge_parse_error" json:"judge_parse_error,omitempty"`
	// JudgeRepaired, ExtractorRepaired and ReaderRepaired are set when that
	// role's first answer was unusable and it was asked once more (the
	// output fields then hold the second answer; the parse error says
	// whether that one was usable).
	JudgeRepaired     bool `parquet:"judge_repaired" json:"judge_repaired,omitempty"`
	ExtractorRepaired bool `parquet:"extractor_repaired" json:"extractor_repaired,omitempty"`
	ReaderRepaired    bool `parquet:"reader_repaired" json:"reader_repaired,omitempty"`
	// Override is set when the judge called the empty context of round 0
	// sufficient and the loop retrieved anyway, as the method requires.
	Override bool `parquet:"override" json:"override,omitempty"`

	// ExtractorOutput and ExtractorParseError are the raw output of the
	// extraction that produced this context and why it could not be parsed.
	ExtractorOutput     string `parquet:"extractor_output" json:"extractor_output,omitempty"`
	ExtractorParseError string `parquet:"extractor_parse_error" json:"extractor_parse_error,omitempty"`
	// Candidates is the number of numbered sentences the extractor was
	// shown; ChosenIDs the ids kept, in the extractor's order; DroppedIDs
	// the ids it gave that were dropped, counted by reason.
	Candidates int32 `parquet:"candidates" json:"candidates"`
	// CandidatesTrimmed counts the numbered sentences not shown to the
	// extractor because the prompt would have outgrown the model's context
	// window (the last ones, of the lowest-ranked documents); EvidenceTrimmed
	// the chosen sentences not appended because the context would have
	// outgrown the judge's or the reader's window (rollout.Options).
	CandidatesTrimmed int32   `parquet:"candidates_trimmed" json:"candidates_trimmed,omitempty"`
	EvidenceTrimmed   int32   `parquet:"evidence_trimmed" json:"evidence_trimmed,omitempty"`
	ChosenIDs         []int32 `parquet:"chosen_ids,list" json:"chosen_ids"`
	DroppedIDs        []int32 `parquet:"dropped_ids,list" json:"dropped_ids"`
	DroppedOutOfRange int32   `parquet:"dropped_out_of_range" json:"dropped_out_of_range"`
	DroppedRepeated   int32   `parquet:"dropped_repeated" json:"dropped_repeated"`
	DroppedOverLimit  int32   `parquet:"dropped_over_limit" json:"dropped_over_limit"`
	// BlocksAdded and BlocksSkipped count the title blocks of that
	// extraction appended to the context and those already in it.
	BlocksAdded   int32 `parquet:"blocks_added" json:"blocks_added"`
	BlocksSkipped int32 `parquet:"blocks_skipped" json:"blocks_skipped"`

	// IsFinal marks the last state of a question; Answer, ReaderOutput and
	// ReaderParseError are the reader's answer from this state's context.
	IsFinal          bool   `parquet:"is_final" json:"is_final"`
	Answer           string `parquet:"answer" json:"answer"`
	ReaderOutput     string `parquet:"reader_output" json:"reader_output,omitempty"`
	ReaderParseError string `parquet:"reader_parse_error" json:"reader_parse_error,omitempty"`
	// Failure is the reason the question failed, empty when it did not.
	Failure string `parquet:"failure" json:"failure,omitempty"`

	// Time spent, in milliseconds: this judge call, the retrieval and the
	// extraction that produced this context, and the reader (final state).
	JudgeMS    float64 `parquet:"judge_ms" json:"judge_ms"`
	RetrieveMS float64 `parquet:"retrieve_ms" json:"retrieve_ms"`
	ExtractMS  float64 `parquet:"extract_ms" json:"extract_ms"`
	ReadMS     float64 `parquet:"read_ms" json:"read_ms"`

	// The model behind each role and the hash of the prompt template it was
	// given (for built-in roles, a name and a hash of their rules' version).
	JudgeModel        string `parquet:"judge_model" json:"judge_model"`
	JudgeTemplate     string `parquet:"judge_template" json:"judge_template"`
	ExtractorModel    string `parquet:"extractor_model" json:"extractor_model,omitempty"`
	ExtractorTemplate string `parquet:"extractor_template" json:"extractor_template,omitempty"`
	ReaderModel       string `parquet:"reader_model" json:"reader_model,omitempty"`
	ReaderTemplate    string `parquet:"reader_template" json:"reader_template,omitempty"`

	// Tokens of the calls this row records (judge; extraction; reader).
	JudgePromptTokens         int64 `parquet:"judge_prompt_tokens" json:"judge_prompt_tokens"`
	JudgeCompletionTokens     int64 `parquet:"judge_completion_tokens" json:"judge_completion_tokens"`
	ExtractorPromptTokens     int64 `parquet:"extractor_prompt_tokens" json:"extractor_prompt_tokens"`
	ExtractorCompletionTokens int64 `parquet:"extractor_completion_tokens" json:"extractor_completion_tokens"`
	ReaderPromptTokens        int64 `parquet:"reader_prompt_tokens" json:"reader_prompt_tokens"`
	ReaderCompletionTokens    int64 `parquet:"reader_completion_tokens" json:"reader_completion_tokens"`
}

// Verdict returns the state's parsed judge verdict.
func (s State) Verdict() Verdict {
	return Verdict{Sufficient: s.Sufficient, GapItems: s.GapItems}
}

// RetrievedDoc is one document retrieved in a round: its round (0-based),
// its 1-based rank among the round's new documents, its score, and the
// length of its text in bytes (what appending the raw document would add:
// the denominator of compression).
type RetrievedDoc struct {
	Round int32   `parquet:"round" json:"round"`
	Rank  int32   `parquet:"rank" json:"rank"`
	DocID string  `parquet:"doc_id" json:"doc_id"`
	Title string  `parquet:"title" json:"title"`
	Score float64 `parquet:"score" json:"score"`
	Chars int32   `parquet:"chars" json:"chars"`
}
