package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// The Files and Batches endpoints, in the wire format of OpenAI's Batch
// API:
//
//	POST /v1/files                  multipart (purpose, file) -> file object
//	GET  /v1/files/{id}             file object
//	GET  /v1/files/{id}/content     the raw bytes
//	POST /v1/batches                {input_file_id, endpoint, completion_window, metadata} -> batch object
//	GET  /v1/batches/{id}           batch object; each poll advances it
//	POST /v1/batches/{id}/cancel    batch object, cancelling (400 once it has ended)
//
// A batch is created validating. The first poll checks its input file and
// moves it to in_progress (or failed); after Options.BatchPolls more polls
// it ends as its BatchOutcome says. Time plays no part, so a test steps a
// batch through its life with polls alone. The answer to each line is
// written by the same code as the answer to a chat request (Options.Answer,
// an instance of the schema, or Options.Text), when the batch ends.
//
// Auth, Latency, the fault Script and the fault rates apply to these
// endpoints as to the chat endpoint. A 429, 5xx or hang changes nothing on
// the server; a malformed or truncated answer comes after the work was
// done (a batch created, a poll advanced); a malformed answer to a file
// download is a body that is not the file.

// BatchOutcome is how a batch ends (see Options.BatchScript).
type BatchOutcome struct {
	// Status is the final status: "completed" (the default), "expired",
	// "failed" or "cancelled". A failed batch fails at its first poll with
	// the error token_limit_exceeded, as OpenAI fails a batch over the
	// enqueued-token limit; the others end after Options.BatchPolls polls
	// in progress.
	Status string
	// Complete is the share of lines (0 to 1, rounded down) answered
	// before an expired or cancelled batch ended. The other lines of an
	// expired batch go to the error file with error code batch_expired, as
	// OpenAI reports them; those of a cancelled batch appear in neither
	// file. A completed batch answers every line.
	Complete float64
	// LineErrorRate is the probability that an answered line gets a 500
	// error body (in the error file) instead of its answer, drawn from the
	// server's seeded source.
	LineErrorRate float64
}

// BatchInfo is the server's view of one batch, for assertions.
type BatchInfo struct {
	ID, Status   string
	InputFileID  string
	OutputFileID string // "" when there is none
	ErrorFileID  string // "" when there is none
	// Lines is the number of requests in the input file; 0 when it
	// failed validation.
	Lines             int
	Completed, Failed int
	Metadata          map[string]string
}

// Batches returns every batch created, in creation order.
func (s *Server) Batches() []BatchInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BatchInfo, 0, len(s.batchIDs))
	for _, id := range s.batchIDs {
		b := s.batches[id]
		lines := len(b.lines)
		if len(b.invalid) > 0 {
			lines = 0
		}
		out = append(out, BatchInfo{
			ID: b.id, Status: b.status, InputFileID: b.inputFileID,
			OutputFileID: b.outputFileID, ErrorFileID: b.errorFileID,
			Lines: lines, Completed: b.completed, Failed: b.failed,
			Metadata: b.metadata,
		})
	}
	return out
}

// Batch statuses.
const (
	statusValidating = "validating"
	statusFailed     = "failed"
	statusInProgress = "in_progress"
	statusFinalizing = "finalizing"
	statusCompleted  = "completed"
	statusExpired    = "expired"
	statusCancelling = "cancelling"
	statusCancelled  = "cancelled"
)

// batchEndpoint is the only endpoint the server batches.
const batchEndpoint = "/v1/chat/completions"

// batchError is one entry of a batch's errors list.
type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

// batchLine is one request of an input file.
type batchLine struct {
	customID string
	rec      Request
	// bad is why the body is not a chat request the server accepts; the
	// line is answered 400 with it.
	bad string
}

type batch struct {
	id, inputFileID string
	window          string
	metadata        map[string]string
	outcome         BatchOutcome
	lines           []batchLine
	invalid         []batchError // what is wrong with the input file
	errors          []batchError // shown once failed

	status string
	polls  int // polls answered in_progress
	// finishing is set while one poll writes the output; other polls
	// then see the batch as it is.
	finishing bool

	total, completed, failed  int
	outputFileID, errorFileID string

	created, inProgressAt, finalizingAt, completedAt, failedAt,
	expiredAt, cancellingAt, cancelledAt int64 // Unix seconds; 0 is null
}

func (b *batch) object() []byte {
	at := func(t int64) *int64 {
		if t == 0 {
			return nil
		}
		return &t
	}
	id := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	var errs any
	if len(b.errors) > 0 {
		errs = map[string]any{"object": "list", "data": b.errors}
	}
	var md any
	if b.metadata != nil {
		md = b.metadata
	}
	out, _ := json.Marshal(map[string]any{
		"id":                b.id,
		"object":            "batch",
		"endpoint":          batchEndpoint,
		"errors":            errs,
		"input_file_id":     b.inputFileID,
		"completion_window": b.window,
		"status":            b.status,
		"output_file_id":    id(b.outputFileID),
		"error_file_id":     id(b.errorFileID),
		"created_at":        b.created,
		"in_progress_at":    at(b.inProgressAt),
		"expires_at":        b.created + int64(24*time.Hour/time.Second),
		"finalizing_at":     at(b.finalizingAt),
		"completed_at":      at(b.completedAt),
		"failed_at":         at(b.failedAt),
		"expired_at":        at(b.expiredAt),
		"cancelling_at":     at(b.cancellingAt),
		"cancelled_at":      at(b.cancelledAt),
		"request_counts":    map[string]int{"total": b.total, "completed": b.completed, "failed": b.failed},
		"metadata":          md,
	})
	return out
}

type opKind int

const (
	opUpload opKind = iota
	opFile
	opContent
	opCreate
	opPoll
	opCancel
)

// batchOp is a files or batches request that passed its checks, waiting
// for its fault to be drawn.
type batchOp struct {
	kind  opKind
	id    string
	file  *file  // opUpload: the file to store
	batch *batch // opCreate: the batch to register
}

var batchRoutes = []route[opKind]{
	{http.MethodPost, "files", opUpload},
	{http.MethodGet, "files/{id}", opFile},
	{http.MethodGet, "files/{id}/content", opContent},
	{http.MethodPost, "batches", opCreate},
	{http.MethodGet, "batches/{id}", opPoll},
	{http.MethodPost, "batches/{id}/cancel", opCancel},
}

// prepareBatchOp routes a request that is not for chat or embeddings and
// checks it, without changing anything.
func (s *Server) prepareBatchOp(r *http.Request, body []byte) (*batchOp, *apiError) {
	var op batchOp
	var e *apiError
	if op.kind, op.id, e = matchRoute(r, batchRoutes); e != nil {
		return nil, e
	}
	switch op.kind {
	case opUpload:
		op.file, e = parseUpload(r.Header.Get("Content-Type"), body)
	case opFile, opContent:
		s.mu.Lock()
		_, ok := s.files[op.id]
		s.mu.Unlock()
		if !ok {
			e = notFound("No such File object: "+op.id, "id")
		}
	case opCreate:
		op.batch, e = s.parseCreate(body)
	case opPoll, opCancel:
		s.mu.Lock()
		b, ok := s.batches[op.id]
		var status string
		if ok {
			status = b.status
		}
		s.mu.Unlock()
		switch {
		case !ok:
			e = notFound("No batch found with id '"+op.id+"'.", "batch_id")
		// Cancelling a cancelling batch answers it as it is, so that a
		// retried cancel whose first answer was lost succeeds.
		case op.kind == opCancel && status != statusValidating && status != statusInProgress && status != statusCancelling:
			e = badRequest("Cannot cancel a batch with status '"+status+"'.", "")
		}
	}
	if e != nil {
		return nil, e
	}
	return &op, nil
}

// parseCreate checks a batch creation body and reads its input file. A
// bad input file still makes a batch; it fails at its first poll.
func (s *Server) parseCreate(body []byte) (*batch, *apiError) {
	var req struct {
		InputFileID      string         `json:"input_file_id"`
		Endpoint         string         `json:"endpoint"`
		CompletionWindow string         `json:"completion_window"`
		Metadata         map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("We could not parse the JSON body of your request: "+err.Error(), "")
	}
	switch {
	case req.InputFileID == "":
		return nil, badRequest("Missing required parameter: 'input_file_id'.", "input_file_id")
	case req.Endpoint != batchEndpoint:
		return nil, badRequest("Invalid value for 'endpoint': this server batches "+batchEndpoint+" only.", "endpoint")
	case req.CompletionWindow != "24h":
		return nil, badRequest("Invalid value for 'completion_window': only '24h' is supported.", "completion_window")
	case len(req.Metadata) > 16:
		return nil, badRequest("Invalid 'metadata': at most 16 keys.", "metadata")
	}
	b := &batch{inputFileID: req.InputFileID, window: req.CompletionWindow}
	if req.Metadata != nil {
		b.metadata = make(map[string]string, len(req.Metadata))
		for k, v := range req.Metadata {
			sv, ok := v.(string)
			if !ok {
				return nil, badRequest("Invalid 'metadata."+k+"': expected a string.", "metadata")
			}
			b.metadata[k] = sv
		}
	}
	s.mu.Lock()
	f, ok := s.files[req.InputFileID]
	s.mu.Unlock()
	switch {
	case !ok:
		return nil, notFound("No such File object: "+req.InputFileID, "input_file_id")
	case f.purpose != "batch":
		return nil, badRequest("The input file must have purpose 'batch', not '"+f.purpose+"'.", "input_file_id")
	}
	b.lines, b.invalid = parseInput(f.data)
	return b, nil
}

// parseInput reads the requests of a batch input file, and what makes
// the file unacceptable (line numbers are 1-based).
func parseInput(data []byte) ([]batchLine, []batchError) {
	var (
		lines []batchLine
		errs  []batchError
		seen  = map[string]bool{}
		model string
	)
	fail := func(n int, code, msg string) {
		errs = append(errs, batchError{Code: code, Message: msg, Line: &n})
	}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l struct {
			CustomID *string         `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			fail(n, "invalid_json_line", "This line is not parseable as valid JSON.")
			continue
		}
		switch {
		case l.CustomID == nil || *l.CustomID == "":
			fail(n, "missing_required_parameter", "Missing required parameter: 'custom_id'.")
			continue
		case seen[*l.CustomID]:
			fail(n, "duplicate_custom_id", "The custom_id '"+*l.CustomID+"' is used more than once in this file.")
			continue
		case l.Method != http.MethodPost:
			fail(n, "invalid_method", "The method must be POST, not '"+l.Method+"'.")
			continue
		case l.URL != batchEndpoint:
			fail(n, "mismatched_endpoint", "The url '"+l.URL+"' does not match the batch endpoint '"+batchEndpoint+"'.")
			continue
		case len(l.Body) == 0 || l.Body[0] != '{':
			fail(n, "invalid_request", "The body must be a JSON object.")
			continue
		}
		seen[*l.CustomID] = true
		bl := batchLine{customID: *l.CustomID, rec: Request{Path: l.URL, Body: l.Body}}
		bl.bad, _ = decode(&bl.rec, true)
		if m := bl.rec.Model; m != "" {
			if model == "" {
				model = m
			} else if m != model {
				fail(n, "mismatched_model", "The model '"+m+"' differs from the model '"+model+"' of earlier lines; a batch has one model.")
				continue
			}
		}
		lines = append(lines, bl)
	}
	if len(lines) == 0 && len(errs) == 0 {
		errs = append(errs, batchError{Code: "empty_file", Message: "The batch input file has no requests."})
	}
	return lines, errs
}

// applyBatchOp does what op asks and returns the answer's body and
// content type.
func (s *Server) applyBatchOp(op *batchOp) ([]byte, string) {
	const jsonType = "application/json"
	if op.kind == opPoll {
		return s.poll(op.id), jsonType
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*file{}
		s.batches = map[string]*batch{}
	}
	switch op.kind {
	case opUpload:
		f := op.file
		f.created = time.Now().Unix()
		f.id = s.storeFile(f)
		s.counts.Files++
		return f.object(), jsonType
	case opFile:
		return s.files[op.id].object(), jsonType
	case opContent:
		return s.files[op.id].data, "application/octet-stream"
	case opCreate:
		b := op.batch
		b.id = fmt.Sprintf("batch_llmtest%06d", len(s.batchIDs)+1)
		b.status = statusValidating
		b.created = time.Now().Unix()
		if s.batchScript < len(s.opts.BatchScript) {
			b.outcome = s.opts.BatchScript[s.batchScript]
			s.batchScript++
		}
		s.batches[b.id] = b
		s.batchIDs = append(s.batchIDs, b.id)
		s.counts.Batches++
		return b.object(), jsonType
	case opCancel:
		b := s.batches[op.id]
		// A poll may have moved it on since the check; then it stays.
		if !b.finishing && (b.status == statusValidating || b.status == statusInProgress) {
			b.status = statusCancelling
			b.cancellingAt = time.Now().Unix()
		}
		return b.object(), jsonType
	}
	panic("llmtest: unknown batch op")
}

// lineFate is what happens to one line when its batch ends.
type lineFate int

const (
	fateAnswer   lineFate = iota // 200 with the answer, in the output file
	fateError                    // 500, in the error file
	fateRejected                 // 400 (bad body, refused format), in the error file
	fateExpired                  // error batch_expired, in the error file
	fateDropped                  // not reached before a cancel: in neither file
)

// poll answers GET /v1/batches/{id} and advances the batch one step.
func (s *Server) poll(id string) []byte {
	s.mu.Lock()
	b := s.batches[id]
	now := time.Now().Unix()
	final := s.advanceBatch(b, now)
	if final == "" {
		out := b.object()
		s.mu.Unlock()
		return out
	}
	fates := s.fates(b, final)
	seq := s.seq
	s.seq += len(b.lines)
	b.finishing = true
	if final == statusCancelled {
		if b.status != statusCancelling {
			b.status, b.cancellingAt = statusCancelling, now
		}
	} else {
		b.status, b.finalizingAt = statusFinalizing, now
	}
	s.mu.Unlock()

	// The answers are written without the lock because Answer is the
	// caller's code.
	output, errorsOut, completed, failed := s.writeLines(b, fates, seq)

	s.mu.Lock()
	defer s.mu.Unlock()
	now = time.Now().Unix()
	if output.Len() > 0 {
		b.outputFileID = s.storeFile(&file{name: b.id + "_output.jsonl", purpose: "batch_output", created: now, data: output.Bytes()})
	}
	if errorsOut.Len() > 0 {
		b.errorFileID = s.storeFile(&file{name: b.id + "_error.jsonl", purpose: "batch_output", created: now, data: errorsOut.Bytes()})
	}
	b.completed, b.failed, b.finishing, b.status = completed, failed, false, final
	switch final {
	case statusCompleted:
		b.completedAt = now
	case statusExpired:
		b.expiredAt = now
	case statusCancelled:
		b.cancelledAt = now
	}
	return b.object()
}

// advanceBatch moves a batch one poll on (s.mu held) and returns the status it
// ends in when this poll ends it, else "".
func (s *Server) advanceBatch(b *batch, now int64) (final string) {
	switch {
	case b.finishing:
	case b.status == statusValidating:
		switch {
		case len(b.invalid) > 0:
			b.status, b.failedAt, b.errors = statusFailed, now, b.invalid
		case b.outcome.Status == statusFailed:
			b.status, b.failedAt = statusFailed, now
			b.errors = []batchError{{
				Code: "token_limit_exceeded",
				Message: "Enqueued token limit reached for " + b.lines[0].rec.Model +
					" in organization org-llmtest. Please try again once some in_progress batches have been completed.",
			}}
		default:
			b.status, b.inProgressAt, b.total = statusInProgress, now, len(b.lines)
		}
	case b.status == statusInProgress:
		b.polls++
		if b.polls >= max(1, s.opts.BatchPolls) {
			final = b.outcome.Status
			switch final {
			case statusExpired, statusCancelled:
			default:
				final = statusCompleted
			}
		}
	case b.status == statusCancelling:
		final = statusCancelled
	}
	return final
}

// fates decides every line's fate in a batch that ends in final (s.mu
// held), drawing from the seeded source in line order.
func (s *Server) fates(b *batch, final string) []lineFate {
	fates := make([]lineFate, len(b.lines))
	done := len(b.lines)
	switch {
	case b.status == statusCancelling:
		done = 0
	case final != statusCompleted:
		done = int(math.Floor(math.Max(0, math.Min(1, b.outcome.Complete)) * float64(len(b.lines))))
	}
	for i, l := range b.lines {
		switch {
		case i >= done && final == statusExpired:
			fates[i] = fateExpired
		case i >= done:
			fates[i] = fateDropped
		case l.bad != "" || s.unsupported(l.rec.ResponseFormat) != "":
			fates[i] = fateRejected
		case b.outcome.LineErrorRate > 0 && s.rng.Float64() < b.outcome.LineErrorRate:
			fates[i] = fateError
		}
	}
	return fates
}

// writeLines writes the lines of the output and error files of a batch,
// as their fates say; the answers take the sequence numbers after seq.
func (s *Server) writeLines(b *batch, fates []lineFate, seq int) (output, errorsOut bytes.Buffer, completed, failed int) {
	for i, l := range b.lines {
		reqID := fmt.Sprintf("%s_%d", strings.TrimPrefix(b.id, "batch_"), i+1)
		line := map[string]any{"id": "batch_req_" + reqID, "custom_id": l.customID, "response": nil, "error": nil}
		dst := &errorsOut
		switch fates[i] {
		case fateAnswer:
			line["response"] = batchResponse(http.StatusOK, reqID, s.chatAnswer(l.rec, seq+i+1))
			dst = &output
			completed++
		case fateError:
			line["response"] = batchResponse(http.StatusInternalServerError, reqID,
				errorBody("The server had an error while processing your request.", "server_error", "", ""))
			failed++
		case fateRejected:
			msg, param := l.bad, ""
			if msg == "" {
				msg, param = s.unsupported(l.rec.ResponseFormat), "response_format"
			}
			line["response"] = batchResponse(http.StatusBadRequest, reqID, errorBody(msg, "invalid_request_error", "", param))
			failed++
		case fateExpired:
			line["error"] = map[string]string{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}
			failed++
		case fateDropped:
			continue
		}
		raw, _ := json.Marshal(line)
		dst.Write(raw)
		dst.WriteByte('\n')
	}
	return output, errorsOut, completed, failed
}

// batchResponse is the response member of an output or error file line.
func batchResponse(status int, reqID string, body []byte) map[string]any {
	return map[string]any{"status_code": status, "request_id": "req_" + reqID, "body": json.RawMessage(body)}
}
