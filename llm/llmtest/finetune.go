package llmtest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fine-tuning jobs endpoints, in the wire format of OpenAI's
// fine-tuning API:
//
//	POST /v1/fine_tuning/jobs              {model, training_file, validation_file, hyperparameters, suffix, seed, ...} -> job object
//	GET  /v1/fine_tuning/jobs/{id}         job object; each poll advances it
//	POST /v1/fine_tuning/jobs/{id}/cancel  job object, cancelled (400 once it has ended)
//	GET  /v1/fine_tuning/jobs/{id}/events  {"object": "list", "data": [events, newest first], "has_more"}; after, limit
//
// A job is created validating_files. The first poll checks its files
// (each line a JSON object with a non-empty messages list) and moves it to
// queued, or to failed with error code invalid_training_file; the second
// moves it to running and fixes its step count (examples / batch size x
// epochs). It answers running for Options.FineTunePolls polls (default 2;
// the one that started it included), each later one reporting a share of
// the steps as metrics events ({step, total_steps, train_loss,
// train_mean_token_accuracy}, as OpenAI reports them), and the next poll
// reports the last steps and ends it succeeded, with a fine-tuned model named
// ft:<model>:distill-test:<suffix>:<short id>, trained_tokens (words of the
// training file's messages x epochs) and a step_metrics.csv result file.
// As with batches, time plays no part: a test steps a job with polls.
//
// The base model's name chooses the scenario: one containing "fail" fails
// at validation (invalid_training_file), one containing "slow" runs until
// it is cancelled. Cancelling a job that has not ended cancels it at once.
//
// Members of the creation body that the server does not know (integrations,
// metadata, method, a provider's own parameters) are accepted and kept for
// assertions (FineTuneInfo.Extra). Auth, Latency, the fault Script and the
// fault rates apply to these endpoints as to the others: a 429, 5xx or hang
// changes nothing, a malformed or truncated answer comes after the work was
// done (a job created, a poll advanced, a job cancelled).

// Fine-tuning job statuses.
const (
	ftValidating = "validating_files"
	ftQueued     = "queued"
	ftRunning    = "running"
	ftSucceeded  = "succeeded"
	ftFailed     = "failed"
	ftCancelled  = "cancelled"
)

// Hyper-parameters the server picks for "auto".
const (
	autoEpochs       = 3
	autoBatchSize    = 1
	autoLRMultiplier = 2.0
)

// maxMetricsPerPoll bounds the metrics events one poll adds, as OpenAI
// thins them out on long jobs.
const maxMetricsPerPoll = 10

// FineTuneEvent is one event of a job, as the server lists it.
type FineTuneEvent struct {
	Object    string         `json:"object"`
	ID        string         `json:"id"`
	CreatedAt int64          `json:"created_at"`
	Level     string         `json:"level"`
	Message   string         `json:"message"`
	Data      map[string]any `json:"data"`
	Type      string         `json:"type"`
}

// FineTuneInfo is the server's view of one fine-tuning job, for
// assertions.
type FineTuneInfo struct {
	ID, Status, Model      string
	TrainingFile           string
	ValidationFile         string // "" when there is none
	Suffix                 string
	Seed                   int64
	NEpochs, BatchSize     int // as resolved ("auto" -> the server's choice)
	LearningRateMultiplier float64
	Step, TotalSteps       int
	TrainedTokens          int // 0 until it succeeded
	FineTunedModel         string
	ErrorCode              string
	Polls                  int // polls answered
	Extra                  map[string]json.RawMessage
	Events                 []FineTuneEvent // oldest first
}

// FineTuneJobs returns every fine-tuning job created, in creation order.
func (s *Server) FineTuneJobs() []FineTuneInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FineTuneInfo, 0, len(s.ft.ids))
	for _, id := range s.ft.ids {
		j := s.ft.jobs[id]
		info := FineTuneInfo{
			ID: j.id, Status: j.status, Model: j.model, TrainingFile: j.trainingFile,
			ValidationFile: j.validationFile, Suffix: j.suffix, Seed: j.seed,
			NEpochs: j.nEpochs, BatchSize: j.batchSize, LearningRateMultiplier: j.lrMultiplier,
			Step: j.step, TotalSteps: j.totalSteps, TrainedTokens: j.trainedTokens,
			FineTunedModel: j.fineTunedModel, Polls: j.polls,
			Extra:  j.extra,
			Events: slices.Clone(j.events),
		}
		if j.err != nil {
			info.ErrorCode = j.err.Code
		}
		out = append(out, info)
	}
	return out
}

// fineTunes is the server's fine-tuning state, guarded by Server.mu.
type fineTunes struct {
	jobs   map[string]*fineTuneJob
	ids    []string // in creation order
	events int      // events made, for their ids
}

type fineTuneError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

type fineTuneJob struct {
	id, model, suffix            string
	trainingFile, validationFile string
	seed                         int64
	// hyper is the hyperparameters object as requested ("auto" where not
	// given), shown until the job runs; the resolved values after.
	hyper               map[string]any
	nEpochs, batchSize  int
	lrMultiplier        float64
	extra               map[string]json.RawMessage
	status              string
	polls               int // polls answered
	running             int // polls answered since it started running
	examples, tokens    int // of the training file
	step, totalSteps    int
	trainedTokens       int
	fineTunedModel      string
	resultFiles         []string
	err                 *fineTuneError
	created, finishedAt int64
	events              []FineTuneEvent // oldest first
}

func (j *fineTuneJob) terminal() bool {
	return j.status == ftSucceeded || j.status == ftFailed || j.status == ftCancelled
}

func (j *fineTuneJob) object() []byte {
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var finished, tokens, errObj any
	if j.finishedAt != 0 {
		finished = j.finishedAt
	}
	if j.status == ftSucceeded {
		tokens = j.trainedTokens
	}
	if j.err != nil {
		errObj = j.err
	}
	hyper := j.hyper
	if j.status != ftValidating && j.status != ftQueued {
		hyper = map[string]any{"n_epochs": j.nEpochs, "batch_size": j.batchSize, "learning_rate_multiplier": j.lrMultiplier}
	}
	out, _ := json.Marshal(map[string]any{
		"object":               "fine_tuning.job",
		"id":                   j.id,
		"model":                j.model,
		"created_at":           j.created,
		"finished_at":          finished,
		"fine_tuned_model":     orNull(j.fineTunedModel),
		"organization_id":      "org-llmtest",
		"result_files":         j.resultFiles,
		"status":               j.status,
		"training_file":        j.trainingFile,
		"validation_file":      orNull(j.validationFile),
		"hyperparameters":      hyper,
		"method":               map[string]any{"type": "supervised", "supervised": map[string]any{"hyperparameters": hyper}},
		"trained_tokens":       tokens,
		"error":                errObj,
		"user_provided_suffix": orNull(j.suffix),
		"seed":                 j.seed,
		"estimated_finish":     nil,
		"integrations":         []any{},
		"metadata":             nil,
	})
	return out
}

// event adds an event to j; s.mu is held.
func (s *Server) event(j *fineTuneJob, level, typ, msg string, data map[string]any) {
	s.ft.events++
	// Keep data as a client decodes it (numbers as float64), so that
	// FineTuneJobs compares equal to what was sent.
	norm := map[string]any{}
	if data != nil {
		raw, _ := json.Marshal(data)
		json.Unmarshal(raw, &norm)
	}
	j.events = append(j.events, FineTuneEvent{
		Object: "fine_tuning.job.event", ID: fmt.Sprintf("ftevent-llmtest%06d", s.ft.events),
		CreatedAt: time.Now().Unix(), Level: level, Message: msg, Data: norm, Type: typ,
	})
}

// isFineTunePath reports whether path is one of the fine-tuning
// endpoints'.
func isFineTunePath(path string) bool {
	return strings.HasPrefix(strings.TrimPrefix(path, "/v1"), "/fine_tuning/")
}

type fineTuneOpKind int

const (
	ftCreate fineTuneOpKind = iota
	ftPoll
	ftCancel
	ftEvents
)

// fineTuneOp is a fine-tuning request that passed its checks, waiting for
// its fault to be drawn.
type fineTuneOp struct {
	kind  fineTuneOpKind
	id    string
	job   *fineTuneJob // ftCreate: the job to register
	after string       // ftEvents: list events older than this one
	limit int          // ftEvents: at most this many
}

var fineTuneRoutes = []route[fineTuneOpKind]{
	{http.MethodPost, "fine_tuning/jobs", ftCreate},
	{http.MethodGet, "fine_tuning/jobs/{id}", ftPoll},
	{http.MethodPost, "fine_tuning/jobs/{id}/cancel", ftCancel},
	{http.MethodGet, "fine_tuning/jobs/{id}/events", ftEvents},
}

// prepareFineTuneOp routes a fine-tuning request and checks it, without
// changing anything.
func (s *Server) prepareFineTuneOp(r *http.Request, body []byte) (*fineTuneOp, *apiError) {
	var op fineTuneOp
	var e *apiError
	if op.kind, op.id, e = matchRoute(r, fineTuneRoutes); e != nil {
		return nil, e
	}
	if op.kind == ftCreate {
		op.job, e = s.parseFineTuneCreate(body)
		if e != nil {
			return nil, e
		}
		return &op, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.ft.jobs[op.id]
	if !ok {
		return nil, &apiError{status: http.StatusNotFound, msg: "Could not find fine-tuning job " + op.id + ".", code: "fine_tune_not_found", param: "fine_tuning_job_id"}
	}
	switch op.kind {
	case ftCancel:
		if j.terminal() {
			return nil, badRequest("Job "+op.id+" has already ended with status '"+j.status+"' and cannot be cancelled.", "")
		}
	case ftEvents:
		q := r.URL.Query()
		op.limit = 20
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				return nil, badRequest("Invalid 'limit': expected an integer from 1 to 100, got '"+v+"'.", "limit")
			}
			op.limit = n
		}
		if op.after = q.Get("after"); op.after != "" && !slices.ContainsFunc(j.events, func(e FineTuneEvent) bool { return e.ID == op.after }) {
			return nil, badRequest("No event with id '"+op.after+"' in job "+op.id+".", "after")
		}
	}
	return &op, nil
}

// parseFineTuneCreate checks a creation body. A training file with bad
// content still makes a job; it fails at its first poll.
func (s *Server) parseFineTuneCreate(body []byte) (*fineTuneJob, *apiError) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		msg := "the body is not a JSON object"
		if err != nil {
			msg = err.Error()
		}
		return nil, badRequest("We could not parse the JSON body of your request: "+msg, "")
	}
	j := &fineTuneJob{extra: map[string]json.RawMessage{}}
	str := func(name string, dst *string) *apiError {
		raw, ok := members[name]
		if !ok || string(raw) == "null" {
			return nil
		}
		if json.Unmarshal(raw, dst) != nil {
			return badRequest("Invalid type for '"+name+"': expected a string.", name)
		}
		return nil
	}
	for name, raw := range members {
		var e *apiError
		switch name {
		case "model":
			e = str(name, &j.model)
		case "training_file":
			e = str(name, &j.trainingFile)
		case "validation_file":
			e = str(name, &j.validationFile)
		case "suffix":
			e = str(name, &j.suffix)
		case "seed":
			if string(raw) != "null" && json.Unmarshal(raw, &j.seed) != nil {
				e = badRequest("Invalid type for 'seed': expected an integer.", "seed")
			}
		case "hyperparameters":
			e = j.parseHyper(raw)
		default:
			j.extra[name] = raw
		}
		if e != nil {
			return nil, e
		}
	}
	if j.hyper == nil {
		j.parseHyper(nil)
	}
	switch {
	case j.model == "":
		return nil, badRequest("Missing required parameter: 'model'.", "model")
	case j.trainingFile == "":
		return nil, badRequest("Missing required parameter: 'training_file'.", "training_file")
	case len(j.suffix) > 64:
		return nil, badRequest("Invalid 'suffix': at most 64 characters.", "suffix")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range []struct{ param, id string }{{"training_file", j.trainingFile}, {"validation_file", j.validationFile}} {
		if f.id == "" {
			continue
		}
		file, ok := s.files[f.id]
		switch {
		case !ok:
			return nil, &apiError{status: http.StatusBadRequest, msg: "invalid " + f.param + ": " + f.id, code: "invalid_" + f.param, param: f.param}
		case file.purpose != "fine-tune":
			return nil, &apiError{status: http.StatusBadRequest, msg: "File " + f.id + " has purpose '" + file.purpose + "', not 'fine-tune'.", code: "invalid_" + f.param, param: f.param}
		}
	}
	return j, nil
}

// parseHyper reads the hyperparameters object (nil: none given).
func (j *fineTuneJob) parseHyper(raw json.RawMessage) *apiError {
	var h map[string]json.RawMessage
	if raw != nil && string(raw) != "null" {
		if json.Unmarshal(raw, &h) != nil {
			return badRequest("Invalid type for 'hyperparameters': expected an object.", "hyperparameters")
		}
	}
	j.hyper = map[string]any{"n_epochs": "auto", "batch_size": "auto", "learning_rate_multiplier": "auto"}
	j.nEpochs, j.batchSize, j.lrMultiplier = autoEpochs, autoBatchSize, autoLRMultiplier
	for name, v := range h {
		param := "hyperparameters." + name
		var auto string
		if json.Unmarshal(v, &auto) == nil && auto == "auto" {
			continue
		}
		var x float64
		if json.Unmarshal(v, &x) != nil {
			return badRequest("Invalid type for '"+param+"': expected a number or 'auto'.", param)
		}
		switch name {
		case "n_epochs", "batch_size":
			limit := 50
			if name == "batch_size" {
				limit = 256
			}
			if x != math.Trunc(x) || x < 1 || x > float64(limit) {
				return badRequest(fmt.Sprintf("Invalid '%s': expected an integer from 1 to %d or 'auto'.", param, limit), param)
			}
			if name == "n_epochs" {
				j.nEpochs = int(x)
			} else {
				j.batchSize = int(x)
			}
			j.hyper[name] = int(x)
		case "learning_rate_multiplier":
			if !(x > 0) || x > 10 {
				return badRequest("Invalid '"+param+"': expected a number above 0 and at most 10, or 'auto'.", param)
			}
			j.lrMultiplier = x
			j.hyper[name] = x
		default:
			return badRequest("Unknown parameter: '"+param+"'.", param)
		}
	}
	return nil
}

// applyFineTuneOp does what op asks and returns the answer's body.
func (s *Server) applyFineTuneOp(op *fineTuneOp) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ft.jobs == nil {
		s.ft.jobs = map[string]*fineTuneJob{}
	}
	switch op.kind {
	case ftCreate:
		j := op.job
		j.id = fmt.Sprintf("ftjob-llmtest%06d", len(s.ft.ids)+1)
		j.status = ftValidating
		j.created = time.Now().Unix()
		s.ft.jobs[j.id] = j
		s.ft.ids = append(s.ft.ids, j.id)
		s.event(j, "info", "message", "Created fine-tuning job: "+j.id, nil)
		msg := "Validating training file: " + j.trainingFile
		if j.validationFile != "" {
			msg += " and validation file: " + j.validationFile
		}
		s.event(j, "info", "message", msg, nil)
		return j.object()
	case ftPoll:
		j := s.ft.jobs[op.id]
		j.polls++
		s.advance(j)
		return j.object()
	case ftCancel:
		j := s.ft.jobs[op.id]
		// A poll may have ended it since the check; then it stays.
		if !j.terminal() {
			j.status, j.finishedAt = ftCancelled, time.Now().Unix()
			s.event(j, "info", "message", "Fine-tuning job cancelled", nil)
		}
		return j.object()
	case ftEvents:
		return s.ft.jobs[op.id].list(op.after, op.limit)
	}
	panic("llmtest: unknown fine-tuning op")
}

// list answers an events request: newest first, starting after the event
// after (the cursor of the previous page) when it is set.
func (j *fineTuneJob) list(after string, limit int) []byte {
	start := len(j.events) - 1 // index, oldest first, of the first to list
	if after != "" {
		for i, e := range j.events {
			if e.ID == after {
				start = i - 1
			}
		}
	}
	data := []FineTuneEvent{}
	for i := start; i >= 0 && len(data) < limit; i-- {
		data = append(data, j.events[i])
	}
	more := start-len(data) >= 0
	out, _ := json.Marshal(map[string]any{"object": "list", "data": data, "has_more": more})
	return out
}
