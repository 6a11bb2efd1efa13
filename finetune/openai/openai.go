package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/httperr"
)

// Name is the backend's name.
const Name = "openai"

// LogFile is the job's log, under the job directory.
const LogFile = "train.log"

// Keys of State.Data.
const (
	dataTrainingFile   = "training_file"
	dataValidationFile = "validation_file"
	dataLastEvent      = "last_event" // id of the newest event in the log
	dataValidLoss      = "valid_loss" // the last validation loss reported
)

// eventPage is how many events one list request asks for: the API's
// maximum.
const eventPage = 100

// Config says which server a Backend talks to and how.
type Config struct {
	// BaseURL is the API root including /v1, e.g. http://localhost:8000/v1;
	// empty means OpenAI's.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none. The CLI reads it
	// with llm.KeyFromEnv("train").
	APIKey llm.Secret
	// Timeout bounds each HTTP attempt, uploads included; 0 means
	// llm.DefaultTimeout and a negative value no bound beyond the
	// caller's context.
	Timeout time.Duration
	// Retry says how every call is retried; zero fields take
	// llm.RetryOptions' defaults.
	Retry llm.RetryOptions
	// HTTPClient carries the requests (default http.DefaultClient).
	HTTPClient *http.Client
}

// Backend runs jobs on an OpenAI-compatible fine-tuning API. It is a
// finetune.Backend, safe for concurrent use.
type Backend struct {
	base     string
	key      llm.Secret
	timeout  time.Duration
	http     *http.Client
	api      *goopenai.Client // for uploads
	retry    *llm.Retrier
	pageSize int
}

var _ finetune.Backend = (*Backend)(nil)

// New returns a Backend for cfg.
func New(cfg Config) (*Backend, error) {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = goopenai.DefaultConfig("").BaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai fine-tuning: bad base URL %q", cfg.BaseURL)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = llm.DefaultTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	oc := goopenai.DefaultConfig(string(cfg.APIKey))
	oc.BaseURL = base
	oc.HTTPClient = httperr.Recorder{Next: hc}
	return &Backend{
		base: base, key: cfg.APIKey, timeout: timeout, http: hc,
		api:      goopenai.NewClientWithConfig(oc),
		retry:    llm.NewRetrier(cfg.Retry),
		pageSize: eventPage,
	}, nil
}

// Name implements finetune.Backend.
func (b *Backend) Name() string { return Name }

// Submit uploads the job's training (and validation) file and creates the
// fine-tuning job; see the package comment for how Job maps onto the
// request. Members of job.Extra are added to the request body as they are,
// replacing those of the same name, except that learning_rate_multiplier,
// n_epochs and batch_size, and the members of an Extra "hyperparameters"
// object, go into the hyperparameters object; and when Extra has a
// "method" object ({"type": "supervised", "supervised": {...}}, OpenAI's
// newer form) the hyperparameters go into its member of that type instead,
// under the ones it gives. The state records the uploaded files' ids in
// Data.
func (b *Backend) Submit(ctx context.Context, job finetune.Job) (finetune.State, error) {
	switch {
	case job.BaseModel == "":
		return finetune.State{}, errors.New("openai fine-tuning: job has no base model")
	case job.Files.TrainOpenAI == "":
		return finetune.State{}, errors.New("openai fine-tuning: job has no OpenAI training file")
	}
	// Refuse a bad Extra before uploading anything.
	if _, err := requestBody(job, "", ""); err != nil {
		return finetune.State{}, fmt.Errorf("openai fine-tuning: %w", err)
	}
	logPath := job.Path(LogFile)
	train, err := b.upload(ctx, job.Path(job.Files.TrainOpenAI))
	if err != nil {
		return finetune.State{}, fmt.Errorf("openai fine-tuning: %w", err)
	}
	lines := []string{logLine(time.Now(), "info", "uploaded "+job.Files.TrainOpenAI+" as "+train)}
	var val string
	if job.Files.ValOpenAI != "" {
		if val, err = b.upload(ctx, job.Path(job.Files.ValOpenAI)); err != nil {
			return finetune.State{}, fmt.Errorf("openai fine-tuning: %w", err)
		}
		lines = append(lines, logLine(time.Now(), "info", "uploaded "+job.Files.ValOpenAI+" as "+val))
	}
	body, err := requestBody(job, train, val)
	if err != nil {
		return finetune.State{}, err
	}
	// Log before the job exists, so that a job is never created that the
	// caller does not learn of.
	if err := appendLines(logPath, lines); err != nil {
		return finetune.State{}, fmt.Errorf("openai fine-tuning: %w", err)
	}
	j, err := fetch(ctx, b, "create fine-tuning job", http.MethodPost, "/fine_tuning/jobs", nil, body, jobObject.check)
	if err != nil {
		return finetune.State{}, fmt.Errorf("openai fine-tuning of %s: %w", job.BaseModel, err)
	}
	now := time.Now().UTC()
	st := finetune.State{
		Backend: Name, ID: j.ID, LogPath: LogFile, SubmittedAt: now, UpdatedAt: now,
		Data: map[string]string{dataTrainingFile: train},
	}
	if val != "" {
		st.Data[dataValidationFile] = val
	}
	return apply(st, j), nil
}

// requestBody is the JSON body that creates the job.
func requestBody(job finetune.Job, train, val string) ([]byte, error) {
	body := map[string]any{"model": job.BaseModel, "training_file": train}
	if val != "" {
		body["validation_file"] = val
	}
	if s := suffix(job.Name); s != "" {
		body["suffix"] = s
	}
	if job.Hyper.Seed != 0 {
		body["seed"] = job.Hyper.Seed
	}
	hyper := map[string]any{}
	if job.Hyper.Epochs > 0 {
		hyper["n_epochs"] = job.Hyper.Epochs
	}
	if job.Hyper.BatchSize > 0 {
		// OpenAI has no gradient accumulation: ask for the effective batch.
		hyper["batch_size"] = job.Hyper.BatchSize * max(1, job.Hyper.GradAccum)
	}
	for k, v := range job.Extra {
		switch k {
		case "learning_rate_multiplier", "n_epochs", "batch_size":
			hyper[k] = v
		case "hyperparameters":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("extra hyperparameters: got %T, want an object", v)
			}
			maps.Copy(hyper, m)
		default:
			body[k] = v
		}
	}
	if len(hyper) > 0 {
		method, ok := body["method"].(map[string]any)
		typ, _ := method["type"].(string)
		if !ok || typ == "" {
			body["hyperparameters"] = hyper
		} else {
			// Copy what is changed: Extra is the caller's.
			method = maps.Clone(method)
			sub := map[string]any{}
			if v, ok := method[typ]; ok && v != nil {
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("extra method.%s: got %T, want an object", typ, v)
				}
				sub = maps.Clone(m)
			}
			merged := maps.Clone(hyper)
			if v, ok := sub["hyperparameters"]; ok && v != nil {
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("extra method.%s.hyperparameters: got %T, want an object", typ, v)
				}
				maps.Copy(merged, m)
			}
			sub["hyperparameters"] = merged
			method[typ] = sub
			body["method"] = method
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	return b, nil
}

// suffix makes a job name fit OpenAI's model-name suffix: at most 64 of
// letters, digits, '-', '_' and '.'.
func suffix(name string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		default:
			return '-'
		}
	}, name)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// Status implements finetune.Backend: it reads the job, appends its new
// events to the log and maps its status.
func (b *Backend) Status(ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error) {
	if st.Status.Terminal() {
		return st, nil
	}
	if st.ID == "" {
		return st, errors.New("openai fine-tuning: state has no job id")
	}
	j, err := fetch(ctx, b, "fine-tuning job "+st.ID, http.MethodGet, "/fine_tuning/jobs/"+url.PathEscape(st.ID), nil, nil, jobObject.check)
	if err != nil {
		return st, err
	}
	return b.update(ctx, job, st, j)
}

// Cancel implements finetune.Backend. A job that has ended is returned as
// it is, without a call; one that ended since st was taken (the API
// refuses to cancel it) is returned as Status finds it.
func (b *Backend) Cancel(ctx context.Context, job finetune.Job, st finetune.State) (finetune.State, error) {
	if st.Status.Terminal() {
		return st, nil
	}
	if st.ID == "" {
		return st, errors.New("openai fine-tuning: state has no job id")
	}
	j, err := fetch(ctx, b, "cancel fine-tuning job "+st.ID, http.MethodPost, "/fine_tuning/jobs/"+url.PathEscape(st.ID)+"/cancel", nil, nil, jobObject.check)
	var se *llm.StatusError
	if errors.As(err, &se) && (se.StatusCode == http.StatusBadRequest || se.StatusCode == http.StatusConflict) {
		// OpenAI answers 400 to cancelling a job that has ended.
		if now, serr := b.Status(ctx, job, st); serr == nil && now.Status.Terminal() {
			return now, nil
		}
	}
	if err != nil {
		return st, err
	}
	return b.update(ctx, job, st, j)
}

// update logs the job's events since the last seen and returns st as j
// and those events show it.
func (b *Backend) update(ctx context.Context, job finetune.Job, st finetune.State, j jobObject) (finetune.State, error) {
	if st.LogPath == "" {
		st.LogPath = LogFile
	}
	events, err := b.newEvents(ctx, st.ID, st.Data[dataLastEvent])
	if err != nil {
		return st, err
	}
	next := st
	next.Data = maps.Clone(st.Data)
	if next.Data == nil {
		next.Data = map[string]string{}
	}
	if len(events) > 0 {
		lines := make([]string, len(events))
		for i, e := range events {
			lines[i] = logLine(time.Unix(e.CreatedAt, 0), e.Level, e.Message)
			metrics(&next, e)
		}
		if err := appendLines(job.Path(next.LogPath), lines); err != nil {
			return st, fmt.Errorf("openai fine-tuning job %s: %w", st.ID, err)
		}
		if id := events[len(events)-1].ID; id != "" {
			next.Data[dataLastEvent] = id
		}
	}
	next.UpdatedAt = time.Now().UTC()
	return apply(next, j), nil
}

// newEvents returns the job's events newer than last, oldest first. The
// API lists events newest first and pages back in time (after = the
// oldest of the previous page), so it pages until it meets last, or to
// the first event when last is "" or gone.
func (b *Backend) newEvents(ctx context.Context, id, last string) ([]event, error) {
	var newest []event
	after := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(b.pageSize)}}
		if after != "" {
			q.Set("after", after)
		}
		page, err := fetch[eventList](ctx, b, "events of fine-tuning job "+id, http.MethodGet, "/fine_tuning/jobs/"+url.PathEscape(id)+"/events", q, nil, nil)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Data {
			if last != "" && e.ID == last {
				slices.Reverse(newest)
				return newest, nil
			}
			newest = append(newest, e)
		}
		if !page.HasMore || len(page.Data) == 0 || page.Data[len(page.Data)-1].ID == "" {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	slices.Reverse(newest)
	return newest, nil
}

// metrics reads a metrics event's step, total steps and losses into st.
func metrics(st *finetune.State, e event) {
	if e.Type != "metrics" || e.Data == nil {
		return
	}
	step, ok := number(e.Data["step"])
	if !ok || int(step) < st.Step {
		return
	}
	st.Step = int(step)
	if n, ok := number(e.Data["total_steps"]); ok {
		st.TotalSteps = int(n)
	}
	if x, ok := number(e.Data["train_loss"]); ok {
		st.Loss = x
	}
	for _, k := range []string{"full_valid_loss", "valid_loss"} {
		if x, ok := number(e.Data[k]); ok {
			st.Data[dataValidLoss] = strconv.FormatFloat(x, 'g', -1, 64)
			break
		}
	}
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// apply maps the job object onto st.
func apply(st finetune.State, j jobObject) finetune.State {
	st.Message = ""
	switch j.Status {
	case "validating_files", "queued":
		st.Status = finetune.StatusQueued
	case "running":
		st.Status = finetune.StatusRunning
	case "succeeded":
		st.Status = finetune.StatusSucceeded
		m := map[string]float64{}
		if j.TrainedTokens != nil {
			m["trained_tokens"] = float64(*j.TrainedTokens)
		}
		if st.TotalSteps > 0 {
			m["steps"] = float64(st.TotalSteps)
			m["train_loss"] = st.Loss
		}
		if x, err := strconv.ParseFloat(st.Data[dataValidLoss], 64); err == nil {
			m["valid_loss"] = x
		}
		st.Result = &finetune.Result{FineTunedModel: *j.FineTunedModel, Metrics: m}
	case "failed":
		st.Status = finetune.StatusFailed
		st.Message = "the provider reports the job failed"
		if e := j.Error; e != nil && e.Message != "" {
			st.Message = e.Message
			if e.Code != nil && fmt.Sprint(e.Code) != "" {
				st.Message = fmt.Sprint(e.Code) + ": " + e.Message
			}
		}
	case "cancelled":
		st.Status = finetune.StatusCancelled
	default:
		// A status this backend does not know (paused, a provider's own):
		// the job has not ended.
		st.Status = finetune.StatusRunning
		st.Message = "provider status " + j.Status
	}
	if st.Status.Terminal() && j.FinishedAt != nil && *j.FinishedAt > 0 {
		st.FinishedAt = time.Unix(*j.FinishedAt, 0).UTC()
	}
	return st
}

// logLine is one line of the log: time, level, message (on one line).
func logLine(t time.Time, level, msg string) string {
	if level == "" {
		level = "info"
	}
	msg = strings.Join(strings.Fields(msg), " ")
	return t.UTC().Format(time.RFC3339) + " " + level + " " + msg
}

// appendLines appends lines to the log in one write.
func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	return nil
}
