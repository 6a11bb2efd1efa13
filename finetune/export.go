package finetune

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

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

// NewExample returns the training example of a filtered label; target
// is Hyperparameters.TargetJSON.
func NewExample(l data.Label, target string) Example {
	p := judge.Prompt(l.Question, l.Context)
	verdict := judge.VerdictJSON(l.Verdict())
	if target == TargetSpaced {
		verdict = judge.VerdictJSONSpaced(l.Verdict())
	}
	return Example{
		Messages: []Message{
			{Role: "system", Content: p.System},
			{Role: "user", Content: p.User},
			{Role: "assistant", Content: verdict},
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
	// TargetJSON is Hyperparameters.TargetJSON: how the verdicts are
	// written ("" or TargetCompact, TargetSpaced).
	TargetJSON string
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
		jsonl, sharegpt, pq := split.name+".jsonl", split.name+".sharegpt.json", split.name+".parquet"
		st, err := exportSplit(ctx, split.in, filepath.Join(dir, split.name), opts, h)
		if errors.Is(err, ErrNoExamples) && split.name != "train" {
			continue
		}
		if err != nil {
			return sum, err
		}
		*split.out = st.summary(opts.MaxLength)
		info[split.dataset] = map[string]any{
			"file_name":  sharegpt,
			"formatting": "sharegpt",
			"columns":    map[string]string{"messages": "conversations", "system": "system"},
			"tags":       map[string]string{"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"},
		}
		rel := func(name string) string { return filepath.Join(DataDir, name) }
		if split.name == "train" {
			sum.Files.TrainOpenAI, sum.Files.TrainShareGPT, sum.Files.TrainParquet = rel(jsonl), rel(sharegpt), rel(pq)
			sum.Files.TrainExamples, sum.Files.TrainQuestions = len(st.lengths), st.questions()
		} else {
			sum.Files.ValOpenAI, sum.Files.ValShareGPT, sum.Files.ValParquet = rel(jsonl), rel(sharegpt), rel(pq)
			sum.Files.ValExamples, sum.Files.ValQuestions = len(st.lengths), st.questions()
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

// exportSplit writes the examples of one filtered labels file as they are
// read, to base+".jsonl", base+".sharegpt.json" and base+".parquet", each
// under a temporary name renamed into place once the file is complete, so
// that memory holds a batch of examples, not the split (a split of 265,000
// examples is 1.4 GB of JSON). The JSONL's bytes also go to h. It returns
// ErrNoExamples, and writes nothing, when the file holds no example.
func exportSplit(ctx context.Context, in, base string, opts ExportOptions, h io.Writer) (*splitStats, error) {
	st := &splitStats{tokens: newTokenCounter(opts.Tokenizer, runtime.GOMAXPROCS(0))}
	defer st.tokens.close() // unless done
	pw, err := data.CreateParquet[Example](base+".parquet", KindSFT, data.SpillPages())
	if err != nil {
		return nil, err
	}
	defer pw.Abort() // unless closed
	err = data.WriteAtomic(base+".jsonl", func(wj *bufio.Writer) error {
		return data.WriteAtomic(base+".sharegpt.json", func(ws *bufio.Writer) error {
			jenc := json.NewEncoder(io.MultiWriter(wj, h))
			jenc.SetEscapeHTML(false)
			sg := newShareGPTWriter(ws)
			batch := make([]Example, 0, 256)
			flush := func() error {
				err := pw.Write(batch)
				batch = batch[:0]
				return err
			}
			err := eachExample(ctx, in, opts.TargetJSON, func(e Example) error {
				if err := jenc.Encode(struct {
					Messages []Message `json:"messages"`
				}{e.Messages}); err != nil {
					return err
				}
				if err := sg.add(e); err != nil {
					return err
				}
				st.add(e)
				if batch = append(batch, e); len(batch) == cap(batch) {
					return flush()
				}
				return nil
			})
			if err == nil && st.sufficient+st.insufficient == 0 {
				err = fmt.Errorf("export %s: %w", in, ErrNoExamples)
			}
			if err == nil {
				err = flush()
			}
			if err != nil {
				return err
			}
			return sg.close()
		})
	})
	if err != nil {
		return nil, err
	}
	st.done()
	return st, pw.Close()
}

// eachExample calls fn with the example of each label of a filtered labels
// file, checking that every label is a usable one.
func eachExample(ctx context.Context, path, target string, fn func(Example) error) error {
	err := data.EachRow(ctx, path, data.KindLabels, func(rows []data.Label) error {
		for _, l := range rows {
			switch {
			case l.DropRule != "":
				return fmt.Errorf("%s: state %s round %d was dropped (%s): give train.parquet or val.parquet from distill filter", path, l.QuestionID, l.Round, l.DropRule)
			case l.Failure != "":
				return fmt.Errorf("%s: state %s round %d has no usable label: give the output of distill filter", path, l.QuestionID, l.Round)
			}
			if err := fn(NewExample(l, target)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// shareGPTWriter writes the examples in the ShareGPT layout LLaMA-Factory
// reads, one by one: a list of {"conversations": [{"from": "human"},
// {"from": "gpt"}], "system": ...}, indented by one space a level as a
// json.Encoder with SetIndent("", " ") writes the whole list.
type shareGPTWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

func newShareGPTWriter(w *bufio.Writer) *shareGPTWriter {
	s := &shareGPTWriter{w: w}
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	s.enc.SetIndent(" ", " ") // an element of the list, one level in
	return s
}

// shareGPTTurn and shareGPTConversation are the ShareGPT layout's turn and
// example.
type shareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type shareGPTConversation struct {
	Conversations []shareGPTTurn `json:"conversations"`
	System        string         `json:"system"`
}

// shareGPT returns the example in the ShareGPT layout.
func shareGPT(e Example) shareGPTConversation {
	return shareGPTConversation{System: e.Messages[0].Content, Conversations: []shareGPTTurn{
		{From: "human", Value: e.Messages[1].Content}, {From: "gpt", Value: e.Messages[2].Content}}}
}

func (s *shareGPTWriter) add(e Example) error {
	s.buf.Reset()
	if err := s.enc.Encode(shareGPT(e)); err != nil {
		return err
	}
	sep := ",\n "
	if s.n == 0 {
		sep = "[\n "
	}
	s.n++
	s.w.WriteString(sep)
	_, err := s.w.Write(bytes.TrimSuffix(s.buf.Bytes(), []byte("\n")))
	return err
}

// close ends the list.
func (s *shareGPTWriter) close() error {
	end := "\n]\n"
	if s.n == 0 {
		end = "[]\n"
	}
	_, err := s.w.WriteString(end)
	return err
}

// splitStats is what a split's summary needs of its examples, gathered as
// they are written: their token lengths (counted by tokens, then set in
// lengths when the split is done) and question ids.
type splitStats struct {
	tokens                   *tokenCounter
	lengths                  []int
	sufficient, insufficient int
	ids                      []string // each question once where its labels are together
}

func (st *splitStats) add(e Example) {
	if e.Sufficient {
		st.sufficient++
	} else {
		st.insufficient++
	}
	st.tokens.add(e.Messages)
	if k := len(st.ids); k == 0 || st.ids[k-1] != e.QuestionID {
		st.ids = append(st.ids, e.QuestionID)
	}
}

// done waits for the examples' token lengths and sets them in lengths.
func (st *splitStats) done() {
	st.lengths = st.tokens.close()
}

// questions returns the ids of the examples' questions, sorted, each once
// (it sorts ids).
func (st *splitStats) questions() []string {
	slices.Sort(st.ids)
	return slices.Compact(st.ids)
}

// tokenCounter counts the tokens of examples on every core while the
// export goes on writing them: counting (tiktoken's pattern and merges)
// is most of an export's work. The lengths come in no particular order.
type tokenCounter struct {
	jobs    chan []Message
	wg      sync.WaitGroup
	lengths [][]int // by worker
	closed  bool
}

func newTokenCounter(model string, workers int) *tokenCounter {
	c := &tokenCounter{jobs: make(chan []Message, 4*workers), lengths: make([][]int, workers)}
	c.wg.Add(workers)
	for w := range workers {
		go func() {
			defer c.wg.Done()
			memo := llm.TokenMemo{Model: model} // the system message is counted once a worker
			for msgs := range c.jobs {
				c.lengths[w] = append(c.lengths[w], exampleTokens(&memo, msgs))
			}
		}()
	}
	return c
}

// add counts the tokens of an example's messages, which must not change
// after.
func (c *tokenCounter) add(msgs []Message) { c.jobs <- msgs }

// close waits for the counts and returns them; it may be called again
// (it returns nil then).
func (c *tokenCounter) close() []int {
	if c.closed {
		return nil
	}
	c.closed = true
	close(c.jobs)
	c.wg.Wait()
	return slices.Concat(c.lengths...)
}

// exampleTokens returns the tokens of an example: its messages and the
// chat format's.
func exampleTokens(memo *llm.TokenMemo, msgs []Message) int {
	n := 3
	for j, m := range msgs {
		n += chatOverhead + memo.Count(j, m.Content)
	}
	return n
}

// chatOverhead is the tokens of chat format per message (role markers),
// and per example (the assistant's turn opening).
const chatOverhead = 4

// summary returns the split's summary (it sorts the lengths).
func (st *splitStats) summary(maxLength int) SplitSummary {
	s := SplitSummary{Examples: len(st.lengths), Sufficient: st.sufficient, Insufficient: st.insufficient}
	for _, n := range st.lengths {
		if n > maxLength {
			s.OverMaxLength++
		}
	}
	lengths := st.lengths
	slices.Sort(lengths)
	pct := func(p float64) int { return lengths[min(len(lengths)-1, int(p*float64(len(lengths))))] }
	s.TokensP50, s.TokensP90, s.TokensP99, s.TokensMax = pct(0.5), pct(0.9), pct(0.99), lengths[len(lengths)-1]
	return s
}
