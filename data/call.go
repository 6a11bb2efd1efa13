package data

// Call records one role call for the trajectory: the raw output, why it
// could not be parsed (empty when it could), which model answered, the hash
// of the prompt template it was given, and the tokens it used. Every role
// family (the judge, the extractor, the reader, the compressors) returns it
// inside its result, so it lives here, below all of them.
type Call struct {
	Raw          string
	ParseError   string
	Repaired     bool
	Model        string
	TemplateHash string
	Usage        Usage
}

// Usage counts the tokens of a call.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + o.PromptTokens, CompletionTokens: u.CompletionTokens + o.CompletionTokens}
}
