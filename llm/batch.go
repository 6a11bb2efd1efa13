package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	"github.com/distill-rag/distill/llm/httperr"
)

// Batch API constants: batch lines are chat completions, and OpenAI
// offers one completion window.
const (
	batchEndpoint = openai.BatchEndpointChatCompletions
	batchWindow   = "24h"
)

// WithBatchRetry sets how the batch and file calls (UploadBatchFile,
// CreateBatch, GetBatch, CancelBatch, FileContent) retry. By default they
// take RetryOptions' defaults, with the client's logger and role.
func WithBatchRetry(o RetryOptions) Option {
	return func(co *clientOptions) { co.batchRetry = o }
}

// BatchLine returns one line of a batch input file, without the newline:
// the request for req that Chat would POST in json_schema mode (the first
// mode; a batch cannot fall back), with the client's model, under
// customID, which must be unique in the file.
func (c *Client) BatchLine(customID string, req Request) ([]byte, error) {
	if customID == "" {
		return nil, errors.New("llm: batch line has no custom id")
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("llm: batch line %s has no messages", customID)
	}
	body, err := json.Marshal(c.chatRequest(req, ModeJSONSchema))
	if err != nil {
		return nil, fmt.Errorf("batch line %s: %w", customID, err)
	}
	if !c.reasoning {
		// doer does this for Chat; see doc.go.
		body = ensureTemperature(body)
	}
	line, err := json.Marshal(struct {
		CustomID string          `json:"custom_id"`
		Method   string          `json:"method"`
		URL      string          `json:"url"`
		Body     json.RawMessage `json:"body"`
	}{customID, http.MethodPost, string(batchEndpoint), body})
	if err != nil {
		return nil, fmt.Errorf("batch line %s: %w", customID, err)
	}
	return line, nil
}

// Batch is the state of a batch on the server.
//
// OpenAI's Batch API answers chat requests offline, within 24 hours, at
// half price. The caller writes one JSONL line per request (BatchLine),
// uploads the file (UploadBatchFile), starts a batch on it (CreateBatch),
// polls it (GetBatch) until Terminal, then downloads its output and error
// files (FileContent) and reads them (ReadBatchResults), matching answers
// to requests by custom id: the files are not in input order, and a
// request that never ran (a cancelled batch) may be in neither.
//
// Unlike Chat and Embed, the batch and file calls retry on their own (see
// WithBatchRetry), as they are not Chatter calls that Retry could wrap.
// Each attempt is bounded by Config.Timeout, file transfers included. A
// CreateBatch retried after a 5xx or a timeout may leave a second batch on
// the server: the API has no idempotency key.
type Batch struct {
	ID          string
	Status      string // validating, in_progress, finalizing, completed, failed, expired, cancelling, cancelled
	InputFileID string
	// OutputFileID holds the answered lines and ErrorFileID the failed
	// ones; either is "" when there is none. An expired batch has both
	// when some lines were answered: the rest are in the error file with
	// code batch_expired.
	OutputFileID string
	ErrorFileID  string
	// Total, Completed and Failed are the server's request counts.
	Total, Completed, Failed int
	// Errors says why a batch failed (its input file was refused, a
	// limit was reached), one "code: message" each, with the line.
	Errors []string
}

// Terminal reports whether the batch has ended: completed, failed,
// expired or cancelled. Only then are its files final.
func (b Batch) Terminal() bool {
	switch b.Status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

func batchFrom(b openai.Batch) Batch {
	out := Batch{
		ID:          b.ID,
		Status:      b.Status,
		InputFileID: b.InputFileID,
		Total:       b.RequestCounts.Total,
		Completed:   b.RequestCounts.Completed,
		Failed:      b.RequestCounts.Failed,
	}
	if b.OutputFileID != nil {
		out.OutputFileID = *b.OutputFileID
	}
	if b.ErrorFileID != nil {
		out.ErrorFileID = *b.ErrorFileID
	}
	if b.Errors != nil {
		for _, e := range b.Errors.Data {
			s := e.Code + ": " + e.Message
			if e.Line != nil {
				s = fmt.Sprintf("line %d: %s", *e.Line, s)
			}
			out.Errors = append(out.Errors, s)
		}
	}
	return out
}

// batchCall makes one batch or file API call with retries: each attempt
// is bounded by the per-request timeout and its error classified as
// Chat's are.
func (c *Client) batchCall(ctx context.Context, op func(actx context.Context) error) error {
	return c.batchRetry.do(ctx, func(ctx context.Context) error {
		actx, ex, cancel := httperr.Begin(ctx, c.cfg.timeout())
		defer cancel()
		if err := op(actx); err != nil {
			return ex.Classify(ctx, actx, err)
		}
		return nil
	})
}

// UploadBatchFile uploads a batch input file (purpose "batch") under name
// and returns its file id.
func (c *Client) UploadBatchFile(ctx context.Context, name string, content []byte) (string, error) {
	if name == "" {
		name = "batch.jsonl"
	}
	var id string
	err := c.batchCall(ctx, func(actx context.Context) error {
		f, err := c.api.CreateFileBytes(actx, openai.FileBytesRequest{Name: name, Bytes: content, Purpose: openai.PurposeBatch})
		if err != nil {
			return err
		}
		if f.ID == "" {
			return &BodyError{Err: errors.New("file object has no id")}
		}
		id = f.ID
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("upload batch file %s: %w", name, err)
	}
	return id, nil
}

// CreateBatch starts a batch of chat completions over an uploaded input
// file, with a 24h completion window. metadata (at most 16 pairs on
// OpenAI) is kept with the batch; nil sends none.
func (c *Client) CreateBatch(ctx context.Context, inputFileID string, metadata map[string]string) (Batch, error) {
	if inputFileID == "" {
		return Batch{}, errors.New("llm: create batch: no input file id")
	}
	req := openai.CreateBatchRequest{InputFileID: inputFileID, Endpoint: batchEndpoint, CompletionWindow: batchWindow}
	if metadata != nil {
		req.Metadata = make(map[string]any, len(metadata))
		for k, v := range metadata {
			req.Metadata[k] = v
		}
	}
	b, err := c.batchObject(ctx, func(actx context.Context) (openai.BatchResponse, error) {
		return c.api.CreateBatch(actx, req)
	})
	if err != nil {
		return Batch{}, fmt.Errorf("create batch on %s: %w", inputFileID, err)
	}
	return b, nil
}

// GetBatch returns the batch's current state.
func (c *Client) GetBatch(ctx context.Context, id string) (Batch, error) {
	return c.batchByID(ctx, "get", id, c.api.RetrieveBatch)
}

// CancelBatch asks the server to stop the batch; it answers cancelling,
// and the batch ends cancelled, with the lines done so far in its output
// file.
func (c *Client) CancelBatch(ctx context.Context, id string) (Batch, error) {
	return c.batchByID(ctx, "cancel", id, c.api.CancelBatch)
}

// batchByID makes a call about the batch id (verb names it in errors)
// that answers its batch object.
func (c *Client) batchByID(ctx context.Context, verb, id string, call func(context.Context, string) (openai.BatchResponse, error)) (Batch, error) {
	if id == "" {
		return Batch{}, fmt.Errorf("llm: %s batch: no id", verb)
	}
	b, err := c.batchObject(ctx, func(actx context.Context) (openai.BatchResponse, error) {
		return call(actx, id)
	})
	if err != nil {
		return Batch{}, fmt.Errorf("%s batch %s: %w", verb, id, err)
	}
	return b, nil
}

// batchObject makes a call that answers a batch object.
func (c *Client) batchObject(ctx context.Context, call func(context.Context) (openai.BatchResponse, error)) (Batch, error) {
	var b Batch
	err := c.batchCall(ctx, func(actx context.Context) error {
		r, err := call(actx)
		if err != nil {
			return err
		}
		if r.ID == "" {
			return &BodyError{Err: errors.New("batch object has no id")}
		}
		b = batchFrom(r.Batch)
		return nil
	})
	return b, err
}

// FileContent downloads a file, such as a batch's output or error file.
func (c *Client) FileContent(ctx context.Context, fileID string) ([]byte, error) {
	if fileID == "" {
		return nil, errors.New("llm: file content: no file id")
	}
	var data []byte
	err := c.batchCall(ctx, func(actx context.Context) error {
		r, err := c.api.GetFileContent(actx, fileID)
		if err != nil {
			return err
		}
		defer r.Close()
		// A short read is classified as a bad body (or a timeout) and
		// retried.
		data, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("file content %s: %w", fileID, err)
	}
	return data, nil
}

// BatchResult is one line of a batch output or error file.
type BatchResult struct {
	CustomID string
	// Response is the answer when Err is nil; its Mode is json_schema,
	// the mode BatchLine asks for.
	Response Response
	// Err is why the request has no answer: a *StatusError for an error
	// answer (a 500, a 400 for a bad body), a *BatchLineError when the
	// request did not run (code batch_expired when the completion window
	// ran out), a *BodyError for an answer that cannot be read.
	// IsRetryable says which of the first and last are worth sending
	// again; expired lines are too.
	Err error
}

// BatchLineError is a batch request that did not run, with the code and
// message of the line's error object.
type BatchLineError struct {
	Code    string // e.g. batch_expired
	Message string
	// Status is the line's response status code, 0 when it had none.
	Status int
}

func (e *BatchLineError) Error() string {
	msg := "batch request not run: " + e.Code
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Status != 0 {
		msg += fmt.Sprintf(" (status %d)", e.Status)
	}
	return msg
}

// batchOutputLine is one line of an output or error file.
type batchOutputLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ReadBatchResults reads a batch output or error file and calls fn for
// each line, in file order, stopping at fn's first error, which it
// returns. Empty lines are skipped. A line that is not a JSON object with
// a custom_id ends the read with an error naming its (1-based) number:
// the file is not what the server writes.
func ReadBatchResults(r io.Reader, fn func(BatchResult) error) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read batch results: %w", err)
		}
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			res, perr := parseBatchResult(line)
			if perr != nil {
				return fmt.Errorf("batch results line %d: %w", n, perr)
			}
			if ferr := fn(res); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

func parseBatchResult(line []byte) (BatchResult, error) {
	var l batchOutputLine
	if err := json.Unmarshal(line, &l); err != nil {
		return BatchResult{}, err
	}
	if l.CustomID == "" {
		return BatchResult{}, errors.New("no custom_id")
	}
	res := BatchResult{CustomID: l.CustomID}
	switch {
	case l.Error != nil:
		le := &BatchLineError{Code: l.Error.Code, Message: l.Error.Message}
		if l.Response != nil {
			le.Status = l.Response.StatusCode
		}
		res.Err = le
	case l.Response == nil:
		res.Err = &BodyError{Err: errors.New("batch line has neither response nor error")}
	case l.Response.StatusCode == http.StatusOK:
		res.Response, res.Err = chatResponseFrom(l.Response.Body)
	default:
		res.Err = httperr.Decode("", l.Response.StatusCode, nil, l.Response.Body)
	}
	return res, nil
}

// chatResponseFrom reads a chat.completion object.
func chatResponseFrom(body []byte) (Response, error) {
	var r struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage Usage `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Response{}, &BodyError{Err: err}
	}
	if len(r.Choices) == 0 {
		return Response{}, &BodyError{Err: errors.New("no choices")}
	}
	return Response{
		Content:      r.Choices[0].Message.Content,
		FinishReason: r.Choices[0].FinishReason,
		Model:        r.Model,
		Usage:        r.Usage,
		Mode:         ModeJSONSchema,
	}, nil
}
