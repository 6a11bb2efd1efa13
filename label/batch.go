package label

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/llm"
)

// Defaults of BatchOptions.
const (
	DefaultPollInterval = 30 * time.Second
	DefaultBatchRetries = 5
	// DefaultMaxBatchRequests and DefaultMaxBatchBytes keep each input
	// file within OpenAI's limits (50,000 requests, 200 MB).
	DefaultMaxBatchRequests = 50000
	DefaultMaxBatchBytes    = 190 << 20
)

// Names of what a batch run keeps in its output directory.
const (
	// BatchFile records the batches submitted, so that a restarted run
	// picks them up instead of submitting again.
	BatchFile = "batch.json"
	// BatchDir holds the input files as uploaded and the output and error
	// files as downloaded.
	BatchDir = "batches"
)

// BatchClient is what the batch path needs of a model client
// (*llm.Client): building request lines, the Files and Batches endpoints.
// Its calls retry on their own; an error they return ends the run (it can
// be resumed).
type BatchClient interface {
	BatchLine(customID string, req llm.Request) ([]byte, error)
	UploadBatchFile(ctx context.Context, name string, content []byte) (string, error)
	CreateBatch(ctx context.Context, inputFileID string, metadata map[string]string) (llm.Batch, error)
	GetBatch(ctx context.Context, id string) (llm.Batch, error)
	FileContent(ctx context.Context, fileID string) ([]byte, error)
}

// BatchOptions configure labelling through a batch API.
//
// Every sample of every state to label becomes one request line, under the
// custom id "r<row>-k<sample>" (row: the state's 0-based row in the input
// file, which does not change when the run is resumed). The lines go out in
// input files of at most MaxRequests lines and MaxBytes bytes, one batch
// each; the run polls them until they end, reads their output and error
// files, and writes each state as soon as all its samples are answered. The
// requests that failed or expired go out again, in new batches, up to
// Retries times; what still failed is recorded in its sample (Error), as a
// failed request of the direct path would be. Every batch is recorded in
// OUT/batch.json as soon as it is created, and its files under
// OUT/batches/, so that a run killed while batches are in flight, then
// resumed, polls them instead of submitting again.
//
// With a budget, a round submits only the states whose requests fit in it
// at the most they can cost (every answer at max tokens, at the Batch
// API's discount); the rest are left for a resumed run.
type BatchOptions struct {
	Client BatchClient
	// Teacher builds the requests (its Chatter is not used) and Model is
	// recorded with each sample.
	Teacher *LLMTeacher
	// Prices gives the cost of the teacher's model; the Batch API charges
	// BatchDiscount of it.
	Prices map[string]llm.Price
	// PollInterval is the time between two polls (default 30s).
	PollInterval time.Duration
	// Retries is the number of batches that resubmit failed or expired
	// requests (default DefaultBatchRetries; negative for none).
	Retries int
	// MaxRequests and MaxBytes bound each input file (defaults
	// DefaultMaxBatchRequests, DefaultMaxBatchBytes).
	MaxRequests, MaxBytes int
}

// BatchRecord is one batch of a batch run, as OUT/batch.json records it.
type BatchRecord struct {
	ID          string `json:"id"`
	Round       int    `json:"round"`
	InputFileID string `json:"input_file_id"`
	// InputFile is the input as uploaded, under OUT/batches.
	InputFile string    `json:"input_file"`
	Requests  int       `json:"requests"`
	CreatedAt time.Time `json:"created_at"`
	// The batch as last polled.
	Status       string   `json:"status"`
	Completed    int      `json:"completed"`
	Failed       int      `json:"failed"`
	OutputFileID string   `json:"output_file_id,omitempty"`
	ErrorFileID  string   `json:"error_file_id,omitempty"`
	Errors       []string `json:"errors,omitempty"`
}

// batchFile is the content of OUT/batch.json.
type batchFile struct {
	Batches []BatchRecord `json:"batches"`
}

// pair names one request: a state (by input row) and a sample.
type pair struct {
	row, sample int
}

func customID(p pair) string { return fmt.Sprintf("r%d-k%d", p.row, p.sample) }

// parseCustomID reads a custom id of customID.
func parseCustomID(id string) (pair, bool) {
	r, k, ok := strings.Cut(strings.TrimPrefix(id, "r"), "-k")
	if !ok || !strings.HasPrefix(id, "r") {
		return pair{}, false
	}
	row, err1 := strconv.Atoi(r)
	sample, err2 := strconv.Atoi(k)
	if err1 != nil || err2 != nil || row < 0 || sample < 0 {
		return pair{}, false
	}
	return pair{row, sample}, true
}

// pending is a state whose samples are being gathered.
type pending struct {
	it      Item
	samples []*data.LabelSample // nil until answered
	// lastErr says why the last attempt at a sample failed.
	lastErr []string
	emitted bool
}

// batchRun is the state of the batch path of one invocation.
type batchRun struct {
	r      *run
	o      BatchOptions
	model  string
	price  llm.Price
	file   batchFile
	states map[int]*pending // by input row
	rows   []int            // the rows of states, in input order
	// applied holds the batches whose results are in states.
	applied map[string]bool
	// ended holds the batches that had ended before this invocation began:
	// their sends do not count against its retries, so that --resume
	// sends again what an earlier run gave up on.
	ended map[string]bool
	// spent is what the states written by this invocation cost;
	// budgetHit is set once a round could not send everything.
	spent     float64
	budgetHit bool
}

// batch labels the states of todo through the batch API and hands each
// one's label to emit (stage.Job.Produce).
func (r *run) batch(ctx context.Context, todo iter.Seq2[Item, error], emitRows func([]data.Label) error) error {
	emit := func(l data.Label) error { return emitRows([]data.Label{l}) }
	o := *r.opts.Batch
	switch {
	case o.Client == nil || o.Teacher == nil:
		return fmt.Errorf("batch: no client or no teacher: %w", ErrOptions)
	}
	o.PollInterval = cmp.Or(o.PollInterval, DefaultPollInterval)
	if o.Retries == 0 {
		o.Retries = DefaultBatchRetries
	}
	o.Retries = max(o.Retries, 0)
	o.MaxRequests = cmp.Or(o.MaxRequests, DefaultMaxBatchRequests)
	o.MaxBytes = cmp.Or(o.MaxBytes, DefaultMaxBatchBytes)
	b := &batchRun{r: r, o: o, model: o.Teacher.Model, states: make(map[int]*pending), applied: make(map[string]bool), ended: make(map[string]bool)}
	if p, ok := llm.PriceOf(o.Prices, b.model); ok {
		b.price = llm.Price{Input: p.Input * BatchDiscount, Output: p.Output * BatchDiscount}
	}
	if err := os.MkdirAll(filepath.Join(r.opts.Out, BatchDir), 0o755); err != nil {
		return err
	}
	if err := b.load(); err != nil {
		return err
	}
	for it, err := range todo {
		if err != nil {
			return err
		}
		b.states[it.Row] = &pending{it: it, samples: make([]*data.LabelSample, r.opts.Samples), lastErr: make([]string, r.opts.Samples)}
		b.rows = append(b.rows, it.Row)
	}
	return b.loop(ctx, emit)
}

// loop polls and applies the recorded batches, writes the states they
// complete, and submits what is missing, round after round.
func (b *batchRun) loop(ctx context.Context, emit func(data.Label) error) error {
	for {
		for i := range b.file.Batches {
			if err := b.settle(ctx, i); err != nil {
				return err
			}
		}
		if err := b.emitComplete(emit); err != nil {
			return err
		}
		round := 0
		if n := len(b.file.Batches); n > 0 {
			round = b.file.Batches[n-1].Round + 1
		}
		missing, exhausted, unsent := b.missing()
		if len(exhausted) > 0 {
			// Sent 1 + Retries times and never answered: recorded so.
			if err := b.giveUp(exhausted, emit); err != nil {
				return err
			}
		}
		if b.budgetHit {
			// What did not fit waits for a resumed run; only failures of
			// what was sent go out again.
			unsent = nil
		}
		if len(missing) == 0 && len(unsent) == 0 {
			if b.budgetHit {
				return stage.ErrBudget
			}
			return nil
		}
		work := append(missing, unsent...)
		if len(work) == 0 {
			return nil
		}
		sent, over, err := b.submit(ctx, round, work)
		if err != nil {
			return err
		}
		b.budgetHit = b.budgetHit || over
		if sent == 0 {
			if over {
				return stage.ErrBudget
			}
			return nil
		}
	}
}

// missing returns the requests of this invocation's states that are not
// answered: those sent fewer than 1 + Retries times (to send again), those
// sent that often (to give up on), and those never sent.
func (b *batchRun) missing() (resend, exhausted, unsent []pair) {
	sent := b.sentPairs()
	for _, row := range b.rows {
		p := b.states[row]
		if p.emitted {
			continue
		}
		for k, s := range p.samples {
			if s != nil {
				continue
			}
			switch n := sent[pair{row, k}]; {
			case n == 0:
				unsent = append(unsent, pair{row, k})
			case n > b.o.Retries:
				exhausted = append(exhausted, pair{row, k})
			default:
				resend = append(resend, pair{row, k})
			}
		}
	}
	return resend, exhausted, unsent
}

// sentPairs counts the batches of this invocation (those it sent, and
// those still in flight when it began) each request was sent in, from the
// input files of the recorded batches.
func (b *batchRun) sentPairs() map[pair]int {
	sent := make(map[pair]int)
	for i := range b.file.Batches {
		if b.ended[b.file.Batches[i].ID] {
			continue
		}
		for _, p := range b.inputPairs(&b.file.Batches[i]) {
			sent[p]++
		}
	}
	return sent
}

// settle polls batch i until it ends, then applies its results once.
func (b *batchRun) settle(ctx context.Context, i int) error {
	rec := &b.file.Batches[i]
	for !(llm.Batch{Status: rec.Status}).Terminal() {
		b.r.setPhase(fmt.Sprintf("batch %s %s %d/%d", rec.ID, rec.Status, rec.Completed+rec.Failed, rec.Requests))
		got, err := b.o.Client.GetBatch(ctx, rec.ID)
		if err != nil {
			return fmt.Errorf("poll batch %s: %w", rec.ID, err)
		}
		changed := got.Status != rec.Status || got.Completed != rec.Completed || got.Failed != rec.Failed
		rec.Status, rec.Completed, rec.Failed = got.Status, got.Completed, got.Failed
		rec.OutputFileID, rec.ErrorFileID, rec.Errors = got.OutputFileID, got.ErrorFileID, got.Errors
		if changed {
			if err := b.save(); err != nil {
				return err
			}
		}
		if got.Terminal() {
			b.r.log.Info("batch ended", "batch", rec.ID, "status", rec.Status, "completed", rec.Completed, "failed", rec.Failed)
			break
		}
		select {
		case <-time.After(b.o.PollInterval):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if b.applied[rec.ID] {
		return nil
	}
	b.r.setPhase("reading batch " + rec.ID)
	answered := make(map[pair]bool)
	for _, f := range []struct{ id, suffix string }{{rec.OutputFileID, "output"}, {rec.ErrorFileID, "errors"}} {
		if f.id == "" {
			continue
		}
		raw, err := b.download(ctx, rec.ID, f.id, f.suffix)
		if err != nil {
			return err
		}
		err = llm.ReadBatchResults(bytes.NewReader(raw), func(res llm.BatchResult) error {
			p, ok := parseCustomID(res.CustomID)
			if !ok {
				return fmt.Errorf("batch %s: custom id %q is not one of ours", rec.ID, res.CustomID)
			}
			answered[p] = true
			b.apply(rec, p, res)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the %s file of batch %s: %w", f.suffix, rec.ID, err)
		}
	}
	// Requests of the batch in neither file (a failed or cancelled batch)
	// are recorded as not answered.
	why := fmt.Sprintf("batch %s ended %s without answering", rec.ID, rec.Status)
	if len(rec.Errors) > 0 {
		why += ": " + strings.Join(rec.Errors, "; ")
	}
	for _, p := range b.inputPairs(rec) {
		if !answered[p] {
			if st := b.states[p.row]; st != nil && p.sample < len(st.samples) && st.samples[p.sample] == nil {
				st.lastErr[p.sample] = why
			}
		}
	}
	b.applied[rec.ID] = true
	return nil
}

// inputPairs returns the requests of one recorded batch.
func (b *batchRun) inputPairs(rec *BatchRecord) []pair {
	raw, err := os.ReadFile(filepath.Join(b.r.opts.Out, BatchDir, rec.InputFile))
	if err != nil {
		return nil
	}
	var out []pair
	for line := range bytes.Lines(raw) {
		var l struct {
			CustomID string `json:"custom_id"`
		}
		if json.Unmarshal(line, &l) == nil {
			if p, ok := parseCustomID(l.CustomID); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// download returns a result file of a batch, from OUT/batches when it was
// downloaded before.
func (b *batchRun) download(ctx context.Context, batchID, fileID, suffix string) ([]byte, error) {
	path := filepath.Join(b.r.opts.Out, BatchDir, batchID+"."+suffix+".jsonl")
	if raw, err := os.ReadFile(path); err == nil {
		return raw, nil
	}
	raw, err := b.o.Client.FileContent(ctx, fileID)
	if err != nil {
		return nil, fmt.Errorf("download the %s file of batch %s: %w", suffix, batchID, err)
	}
	if err := data.WriteFileAtomic(path, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// apply records one result line in its state's sample; a success replaces
// a failure, never the other way round.
func (b *batchRun) apply(rec *BatchRecord, p pair, res llm.BatchResult) {
	st := b.states[p.row]
	if st == nil || p.sample >= len(st.samples) || st.samples[p.sample] != nil {
		return // a state already written, or answered by an earlier batch
	}
	if res.Err != nil {
		st.lastErr[p.sample] = fmt.Sprintf("batch %s: %v", rec.ID, res.Err)
		return
	}
	s := b.newSample(st.it, p.sample, rec)
	ApplyAnswer(&s, res.Response)
	st.samples[p.sample] = &s
}

// newSample returns a sample of a state with its request's settings.
func (b *batchRun) newSample(it Item, k int, rec *BatchRecord) data.LabelSample {
	req := b.o.Teacher.Request(it.State, k)
	s := data.LabelSample{Sample: int32(k), Temperature: req.Temperature, Model: b.model, TemplateHash: TeacherTemplateHash,
		CustomID: customID(pair{it.Row, k})}
	if req.Seed != nil {
		s.Seed = int64(*req.Seed)
	}
	if rec != nil {
		s.BatchID = rec.ID
	}
	return s
}

// emitComplete writes every state whose samples are all answered.
func (b *batchRun) emitComplete(emit func(data.Label) error) error {
	for _, row := range b.rows {
		st := b.states[row]
		if st.emitted || slices.Contains(st.samples, nil) {
			continue
		}
		if err := b.emitState(st, emit); err != nil {
			return err
		}
	}
	return nil
}

func (b *batchRun) emitState(st *pending, emit func(data.Label) error) error {
	l := NewLabel(st.it, NameLLM, b.model, TeacherTemplateHash)
	for _, s := range st.samples {
		l.Samples = append(l.Samples, *s)
	}
	Aggregate(&l)
	b.spent += b.price.Cost(llm.Usage{PromptTokens: int(l.PromptTokens), CompletionTokens: int(l.CompletionTokens)})
	b.r.addBatchUsage(l, b.price, b.model)
	st.emitted = true
	return emit(l)
}

// giveUp records the requests that failed every attempt and writes their
// states.
func (b *batchRun) giveUp(missing []pair, emit func(data.Label) error) error {
	for _, p := range missing {
		st := b.states[p.row]
		s := b.newSample(st.it, p.sample, nil)
		s.Error = cmp.Or(st.lastErr[p.sample], "not answered by any batch") +
			fmt.Sprintf(" (sent in %d batches; label --resume sends it again)", 1+b.o.Retries)
		st.samples[p.sample] = &s
	}
	return b.emitComplete(emit)
}

// submit sends the requests of work (whole states, in order) in one or
// more batches of one round. With a budget it sends only the states whose
// requests fit; over reports that some did not.
func (b *batchRun) submit(ctx context.Context, round int, work []pair) (sent int, over bool, err error) {
	left := -1.0
	if b.r.opts.BudgetUSD > 0 {
		left = b.r.opts.BudgetUSD - b.spent
	}
	var lines [][]byte
	var cost float64
	memo := llm.TokenMemo{Model: b.model}
	for i := 0; i < len(work); {
		// The requests of one state go together.
		j := i
		for j < len(work) && work[j].row == work[i].row {
			j++
		}
		var stateLines [][]byte
		var stateCost float64
		for _, p := range work[i:j] {
			req := b.o.Teacher.Request(b.states[p.row].it.State, p.sample)
			line, err := b.o.Client.BatchLine(customID(p), req)
			if err != nil {
				return 0, false, err
			}
			stateLines = append(stateLines, line)
			prompt := 3
			for k, m := range req.Messages {
				prompt += 4 + memo.Count(k, m.Content)
			}
			stateCost += b.price.Cost(llm.Usage{PromptTokens: prompt, CompletionTokens: req.MaxTokens})
		}
		if left >= 0 && cost+stateCost > left {
			over = true
			break
		}
		cost += stateCost
		lines = append(lines, stateLines...)
		i = j
	}
	for start := 0; start < len(lines); {
		end, size := start, 0
		for end < len(lines) && end-start < b.o.MaxRequests && (end == start || size+len(lines[end])+1 <= b.o.MaxBytes) {
			size += len(lines[end]) + 1
			end++
		}
		if err := b.create(ctx, round, lines[start:end]); err != nil {
			return sent, over, err
		}
		sent += end - start
		start = end
	}
	if over {
		b.r.log.Warn("budget: not every state was submitted", "submitted_requests", sent, "of", len(work), "estimated_cost_usd", cost)
	}
	return sent, over, nil
}

// create uploads one input file, creates its batch and records it.
func (b *batchRun) create(ctx context.Context, round int, lines [][]byte) error {
	n := len(b.file.Batches)
	name := fmt.Sprintf("input-%03d.jsonl", n)
	content := bytes.Join(lines, []byte("\n"))
	content = append(content, '\n')
	if err := data.WriteFileAtomic(filepath.Join(b.r.opts.Out, BatchDir, name), content); err != nil {
		return err
	}
	b.r.setPhase(fmt.Sprintf("uploading %d requests", len(lines)))
	fileID, err := b.o.Client.UploadBatchFile(ctx, name, content)
	if err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	bt, err := b.o.Client.CreateBatch(ctx, fileID, map[string]string{"distill_out": filepath.Base(b.r.opts.Out), "input": name})
	if err != nil {
		return fmt.Errorf("create the batch of %s: %w", name, err)
	}
	b.file.Batches = append(b.file.Batches, BatchRecord{
		ID: bt.ID, Round: round, InputFileID: fileID, InputFile: name, Requests: len(lines), CreatedAt: time.Now().UTC(),
		Status: bt.Status, Completed: bt.Completed, Failed: bt.Failed,
	})
	b.r.log.Info("batch submitted", "batch", bt.ID, "round", round, "requests", len(lines), "input", name)
	return b.save()
}

// load reads OUT/batch.json, if any.
func (b *batchRun) load() error {
	raw, err := os.ReadFile(filepath.Join(b.r.opts.Out, BatchFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &b.file); err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(b.r.opts.Out, BatchFile), err)
	}
	for _, rec := range b.file.Batches {
		if _, err := os.Stat(filepath.Join(b.r.opts.Out, BatchDir, rec.InputFile)); err != nil {
			return fmt.Errorf("batch %s: its input file: %w", rec.ID, err)
		}
		if (llm.Batch{Status: rec.Status}).Terminal() {
			b.ended[rec.ID] = true
		}
	}
	if n := len(b.file.Batches); n > 0 {
		b.r.log.Info("picking up recorded batches", "batches", n)
	}
	return nil
}

// save writes OUT/batch.json and copies the records into the report.
func (b *batchRun) save() error {
	raw, err := json.MarshalIndent(b.file, "", "  ")
	if err != nil {
		return err
	}
	b.r.setBatches(b.file.Batches)
	return data.WriteFileAtomic(filepath.Join(b.r.opts.Out, BatchFile), append(raw, '\n'))
}
