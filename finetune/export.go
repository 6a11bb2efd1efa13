package finetune

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
)

// KindSFT is the kind of the exported parquet files: rows of Example.
const KindSFT data.Kind = "sft"

// DataDir is where Export writes, under the job's directory.
const DataDir = "data"

// Message is one chat message of a training example.
type Message struct {
	Role    string `parquet:"role" json:"role"`
	Content string `parquet:"content" json:"content"`
}

// Example is one supervised example: the judge's input (system and user
// messages, rendered by judge.Prompt exactly as the judge renders them
// at inference) and the filtered label as the judge's JSON (the assistant
// message, judge.VerdictJSON), with where it came from.
type Example struct {
	Messages   []Message `parquet:"messages,list" json:"messages"`
	QuestionID string    `parquet:"question_id" json:"question_id"`
	Round      int32     `parquet:"round" json:"round"`
	Sufficient bool      `parquet:"sufficient" json:"sufficient"`
}

// NewExample returns the training example of a filtered label.
func NewExample(l data.Label) Example {
	p := judge.Prompt(l.Question, l.Context)
	return Example{
		Messages: []Message{
			{Role: "system", Content: p.System},
			{Role: "user", Content: p.User},
			{Role: "assistant", Content: judge.VerdictJSON(l.Verdict())},
		},
		QuestionID: l.QuestionID, Round: l.Round, Sufficient: l.Sufficient,
	}
}

// ExportOptions configure Export.
type ExportOptions struct {
	// Train and Val are train.parquet and val.parquet from distill filter
	// (Val may be empty: no validation set).
	Train, Val string
	// Dir is the job directory; the files go to Dir/data.
	Dir string
	// MaxLength is the trainer's maximum sequence length in tokens
	// (default 2048); longer examples are counted, not dropped.
	MaxLength int
	// Tokenizer names the model whose tokenizer counts tokens
	// (llm.CountTokens; an estimate for models tiktoken does not know).
	Tokenizer string
}

// SplitSummary describes the examples of one split.
type SplitSummary struct {
	Examples     int `json:"examples"`
	Sufficient   int `json:"sufficient"`
	Insufficient int `json:"insufficient"`
	// Token lengths of whole examples (all messages plus a few tokens of
	// chat format per message): percentiles and maximum.
	TokensP50 int `json:"tokens_p50"`
	TokensP90 int `json:"tokens_p90"`
	TokensP99 int `json:"tokens_p99"`
	TokensMax int `json:"tokens_max"`
	// OverMaxLength counts the examples longer than MaxLength (as
	// estimated here): the TRL trainer leaves out those its tokenizer finds
	// longer, other trainers may cut them.
	OverMaxLength int `json:"over_max_length"`
}

// ExportSummary is what Export wrote, as DIR/data/export.json records it.
type ExportSummary struct {
	Files     Files        `json:"files"`
	MaxLength int          `json:"max_length"`
	Tokenizer string       `json:"tokenizer"`
	Train     SplitSummary `json:"train"`
	Val       SplitSummary `json:"val"`
}

// ExportFile records an export, under Dir/data.
const ExportFile = "export.json"

// ErrNoExamples is returned when the training file holds no example.
var ErrNoExamples = errors.New("no training examples")

// Export writes the supervised examples of train.parquet (and val.parquet)
// in the formats trainers read, under opts.Dir/data:
//
//   - train.jsonl, val.jsonl: OpenAI chat fine-tuning format, one
//     {"messages": [system, user, assistant]} per line;
//   - train.sharegpt.json, val.sharegpt.json and dataset_info.json: the
//     ShareGPT layout and its LLaMA-Factory dataset entries (TrainDataset,
//     ValDataset);
//   - train.parquet, val.parquet: a "messages" column (list of {role,
//     content}) as TRL and Hugging Face datasets read it;
//   - export.json: the summary, with the template and data hashes.
//
// Every file is written to a temporary name and renamed into place.
func Export(ctx context.Context, opts ExportOptions) (ExportSummary, error) {
	if opts.Train == "" || opts.Dir == "" {
		return ExportSummary{}, errors.New("export: no training file or no directory")
	}
	if opts.MaxLength <= 0 {
		opts.MaxLength = DefaultHyperparameters().MaxLength
	}
	dir := filepath.Join(opts.Dir, DataDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ExportSummary{}, err
	}
	sum := ExportSummary{MaxLength: opts.MaxLength, Tokenizer: opts.Tokenizer}
	sum.Files.TemplateHash = judge.TemplateHash
	h := sha256.New()
	info := map[string]any{}
	for _, split := range []struct {
		name, in string
		out      *SplitSummary
		dataset  string
	}{{"train", opts.Train, &sum.Train, TrainDataset}, {"val", opts.Val, &sum.Val, ValDataset}} {
		if split.in == "" {
			continue
		}
		exs, err := readExamples(ctx, split.in)
		if err != nil {
			return sum, err
		}
		if len(exs) == 0 {
			if split.name == "train" {
				return sum, fmt.Errorf("export %s: %w", split.in, ErrNoExamples)
			}
			continue
		}
		*split.out = summarise(exs, opts)
		jsonl, sharegpt := split.name+".jsonl", split.name+".sharegpt.json"
		pq := split.name + ".parquet"
		b, err := openAIJSONL(exs)
		if err != nil {
			return sum, err
		}
		h.Write(b)
		if err := data.WriteFileAtomic(filepath.Join(dir, jsonl), b); err != nil {
			return sum, err
		}
		if b, err = shareGPT(exs); err != nil {
			return sum, err
		}
		if err := data.WriteFileAtomic(filepath.Join(dir, sharegpt), b); err != nil {
			return sum, err
		}
		w, err := data.CreateParquet[Example](filepath.Join(dir, pq), KindSFT, data.SpillPages())
		if err != nil {
			return sum, err
		}
		if err := w.Write(exs); err != nil {
			w.Abort()
			return sum, err
		}
		if err := w.Close(); err != nil {
			return sum, err
		}
		info[split.dataset] = map[string]any{
			"file_name":  sharegpt,
			"formatting": "sharegpt",
			"columns":    map[string]string{"messages": "conversations", "system": "system"},
			"tags":       map[string]string{"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"},
		}
		rel := func(name string) string { return filepath.Join(DataDir, name) }
		if split.name == "train" {
			sum.Files.TrainOpenAI, sum.Files.TrainShareGPT, sum.Files.TrainParquet = rel(jsonl), rel(sharegpt), rel(pq)
			sum.Files.TrainExamples, sum.Files.TrainQuestions = len(exs), questionIDs(exs)
		} else {
			sum.Files.ValOpenAI, sum.Files.ValShareGPT, sum.Files.ValParquet = rel(jsonl), rel(sharegpt), rel(pq)
			sum.Files.ValExamples, sum.Files.ValQuestions = len(exs), questionIDs(exs)
		}
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return sum, err
	}
	if err := data.WriteFileAtomic(filepath.Join(dir, "dataset_info.json"), append(b, '\n')); err != nil {
		return sum, err
	}
	sum.Files.DatasetInfo = filepath.Join(DataDir, "dataset_info.json")
	sum.Files.DataHash = hex.EncodeToString(h.Sum(nil))
	if b, err = json.MarshalIndent(sum, "", "  "); err != nil {
		return sum, err
	}
	return sum, data.WriteFileAtomic(filepath.Join(dir, ExportFile), append(b, '\n'))
}

// questionIDs returns the ids of the examples' questions, sorted, each once.
func questionIDs(exs []Example) []string {
	ids := make([]string, len(exs))
	for i, e := range exs {
		ids[i] = e.QuestionID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// readExamples reads the examples of a filtered labels file, checking that
// every label is a usable one.
func readExamples(ctx context.Context, path string) ([]Example, error) {
	var exs []Example
	err := data.EachRow(ctx, path, data.KindLabels, func(rows []data.Label) error {
		for _, l := range rows {
			switch {
			case l.DropRule != "":
				return fmt.Errorf("%s: state %s round %d was dropped (%s): give train.parquet or val.parquet from distill filter", path, l.QuestionID, l.Round, l.DropRule)
			case l.Failure != "":
				return fmt.Errorf("%s: state %s round %d has no usable label: give the output of distill filter", path, l.QuestionID, l.Round)
			}
			exs = append(exs, NewExample(l))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return exs, nil
}

func openAIJSONL(exs []Example) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, e := range exs {
		if err := enc.Encode(struct {
			Messages []Message `json:"messages"`
		}{e.Messages}); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// shareGPT writes the examples in the ShareGPT layout LLaMA-Factory reads:
// a list of {"conversations": [{"from": "human"}, {"from": "gpt"}],
// "system": ...}.
func shareGPT(exs []Example) ([]byte, error) {
	type turn struct {
		From  string `json:"from"`
		Value string `json:"value"`
	}
	type conv struct {
		Conversations []turn `json:"conversations"`
		System        string `json:"system"`
	}
	out := make([]conv, len(exs))
	for i, e := range exs {
		out[i] = conv{System: e.Messages[0].Content, Conversations: []turn{
			{From: "human", Value: e.Messages[1].Content}, {From: "gpt", Value: e.Messages[2].Content}}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// chatOverhead is the tokens of chat format per message (role markers),
// and per example (the assistant's turn opening).
const chatOverhead = 4

func summarise(exs []Example, opts ExportOptions) SplitSummary {
	s := SplitSummary{Examples: len(exs)}
	lengths := make([]int, len(exs))
	memo := llm.TokenMemo{Model: opts.Tokenizer}
	for i, e := range exs {
		if e.Sufficient {
			s.Sufficient++
		} else {
			s.Insufficient++
		}
		n := 3
		for j, m := range e.Messages {
			n += chatOverhead + memo.Count(j, m.Content)
		}
		lengths[i] = n
		if n > opts.MaxLength {
			s.OverMaxLength++
		}
	}
	slices.Sort(lengths)
	pct := func(p float64) int { return lengths[min(len(lengths)-1, int(p*float64(len(lengths))))] }
	s.TokensP50, s.TokensP90, s.TokensP99, s.TokensMax = pct(0.5), pct(0.9), pct(0.99), lengths[len(lengths)-1]
	return s
}
