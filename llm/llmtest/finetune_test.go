package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// trainingJSONL is a small valid OpenAI chat training file: n examples of
// 6 words each.
func trainingJSONL(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"messages":[{"role":"system","content":"judge"},{"role":"user","content":"question %d here"},{"role":"assistant","content":"{\"ok\": true}"}]}`+"\n", i)
	}
	return b.String()
}

func uploadFineTune(t *testing.T, s *Server, content string) string {
	t.Helper()
	return upload(t, s, "fine-tune", "train.jsonl", []byte(content)).ID
}

type wireJob struct {
	ID              string   `json:"id"`
	Object          string   `json:"object"`
	Model           string   `json:"model"`
	CreatedAt       int64    `json:"created_at"`
	FinishedAt      *int64   `json:"finished_at"`
	FineTunedModel  *string  `json:"fine_tuned_model"`
	Status          string   `json:"status"`
	TrainingFile    string   `json:"training_file"`
	ValidationFile  *string  `json:"validation_file"`
	ResultFiles     []string `json:"result_files"`
	TrainedTokens   *int     `json:"trained_tokens"`
	Seed            int64    `json:"seed"`
	Hyperparameters struct {
		NEpochs   any `json:"n_epochs"`
		BatchSize any `json:"batch_size"`
		LRM       any `json:"learning_rate_multiplier"`
	} `json:"hyperparameters"`
	Error *struct {
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// jobKeys are the members every job object carries, null or not.
var jobKeys = []string{"object", "id", "model", "created_at", "finished_at", "fine_tuned_model", "organization_id",
	"result_files", "status", "training_file", "validation_file", "hyperparameters", "trained_tokens", "error", "seed"}

func decodeJob(t *testing.T, status int, body []byte) wireJob {
	t.Helper()
	j := decodeObject[wireJob](t, "fine-tuning call", status, body, jobKeys)
	if j.Object != "fine_tuning.job" {
		t.Errorf("object: got %q, want fine_tuning.job", j.Object)
	}
	return j
}

func createJob(t *testing.T, s *Server, body string) wireJob {
	t.Helper()
	status, _, b := call(t, s, http.MethodPost, "/v1/fine_tuning/jobs", "application/json", []byte(body), nil)
	return decodeJob(t, status, b)
}

func pollJob(t *testing.T, s *Server, id string) wireJob {
	t.Helper()
	status, _, b := call(t, s, http.MethodGet, "/v1/fine_tuning/jobs/"+id, "", nil, nil)
	return decodeJob(t, status, b)
}

type wireEvents struct {
	Object  string          `json:"object"`
	Data    []FineTuneEvent `json:"data"`
	HasMore bool            `json:"has_more"`
}

func listEvents(t *testing.T, s *Server, id, after string, limit int) wireEvents {
	t.Helper()
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/fine_tuning/jobs/" + id + "/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	status, _, b := call(t, s, http.MethodGet, path, "", nil, nil)
	l := decodeOK[wireEvents](t, "events", status, b)
	if l.Object != "list" {
		t.Fatalf("events: got object %q, want list: %s", l.Object, b)
	}
	return l
}

func TestFineTuneLifecycle(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	train := uploadFineTune(t, s, trainingJSONL(4))
	val := uploadFineTune(t, s, trainingJSONL(1))
	j := createJob(t, s, `{"model":"gpt-4o-mini-2024-07-18","training_file":"`+train+`","validation_file":"`+val+
		`","hyperparameters":{"n_epochs":3,"batch_size":2},"suffix":"judge","seed":42,"integrations":[{"type":"wandb"}]}`)
	if !strings.HasPrefix(j.ID, "ftjob-") || j.Status != "validating_files" || j.FineTunedModel != nil || j.TrainedTokens != nil ||
		j.FinishedAt != nil || j.Seed != 42 || j.Hyperparameters.LRM != "auto" {
		t.Errorf("created job: got %+v, want validating_files, nulls, seed 42 and an auto multiplier", j)
	}

	var statuses []string
	for range 10 {
		j = pollJob(t, s, j.ID)
		statuses = append(statuses, j.Status)
		if j.Status == "succeeded" {
			break
		}
	}
	if want := []string{"queued", "running", "running", "succeeded"}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses: got %v, want %v", statuses, want)
	}
	short := strings.TrimPrefix(j.ID, "ftjob-")
	if j.FineTunedModel == nil || *j.FineTunedModel != "ft:gpt-4o-mini-2024-07-18:distill-test:judge:"+short {
		t.Errorf("fine_tuned_model: got %v", j.FineTunedModel)
	}
	// 4 examples of 6 words, 3 epochs.
	if j.TrainedTokens == nil || *j.TrainedTokens != 4*6*3 || j.FinishedAt == nil || j.Error != nil {
		t.Errorf("finished job: tokens %v finished %v error %v, want 72, a time and no error", j.TrainedTokens, j.FinishedAt, j.Error)
	}
	if j.Hyperparameters.NEpochs != 3.0 || j.Hyperparameters.BatchSize != 2.0 || j.Hyperparameters.LRM != autoLRMultiplier {
		t.Errorf("resolved hyperparameters: got %+v", j.Hyperparameters)
	}
	if len(j.ResultFiles) != 1 {
		t.Fatalf("result files: got %v, want one", j.ResultFiles)
	}
	status, _, csv := call(t, s, http.MethodGet, "/v1/files/"+j.ResultFiles[0]+"/content", "", nil, nil)
	// 2 batches of 2 examples x 3 epochs = 6 steps, plus the header.
	if status != http.StatusOK || !strings.HasPrefix(string(csv), "step,train_loss") || strings.Count(string(csv), "\n") != 7 {
		t.Errorf("result file: got %d %q", status, csv)
	}

	// Events: newest first, complete, metrics reaching the last step.
	all := listEvents(t, s, j.ID, "", 100)
	if all.HasMore || len(all.Data) == 0 {
		t.Fatalf("events: got %d, has_more %v", len(all.Data), all.HasMore)
	}
	info := s.FineTuneJobs()[0]
	var want []FineTuneEvent
	for i := len(info.Events) - 1; i >= 0; i-- {
		want = append(want, info.Events[i])
	}
	if diff := cmp.Diff(want, all.Data); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if all.Data[0].Message != "The job has successfully completed" {
		t.Errorf("newest event: got %q", all.Data[0].Message)
	}
	var steps []float64
	for _, e := range slices.Backward(all.Data) {
		if e.Object != "fine_tuning.job.event" || !strings.HasPrefix(e.ID, "ftevent-") || e.Level == "" || e.CreatedAt == 0 {
			t.Errorf("event %+v: missing members", e)
		}
		if e.Type == "message" && e.Data == nil {
			t.Errorf("message event %q: data is null, want {}", e.Message)
		}
		if e.Type == "metrics" {
			steps = append(steps, e.Data["step"].(float64))
			if e.Data["total_steps"] != 6.0 || e.Data["train_loss"] == nil {
				t.Errorf("metrics event %+v: want total_steps 6 and a train_loss", e.Data)
			}
		}
	}
	if want := []float64{1, 2, 3, 4, 5, 6}; !slices.Equal(steps, want) {
		t.Errorf("metrics steps: got %v, want %v", steps, want)
	}
	last := all.Data[3] // before checkpoint, model, completed
	if last.Type != "metrics" || last.Data["valid_loss"] == nil {
		t.Errorf("last metrics event: got %+v, want valid_loss with a validation file", last)
	}

	// Paging with after and limit walks back through the same list.
	var paged []FineTuneEvent
	after := ""
	for {
		page := listEvents(t, s, j.ID, after, 3)
		paged = append(paged, page.Data...)
		if !page.HasMore {
			break
		}
		after = page.Data[len(page.Data)-1].ID
	}
	if diff := cmp.Diff(all.Data, paged); diff != "" {
		t.Errorf("paged events (-all +paged):\n%s", diff)
	}
	if def := listEvents(t, s, j.ID, "", 0); len(def.Data) != min(20, len(all.Data)) {
		t.Errorf("default limit: got %d events", len(def.Data))
	}

	wantInfo := FineTuneInfo{
		ID: j.ID, Status: "succeeded", Model: "gpt-4o-mini-2024-07-18", TrainingFile: train, ValidationFile: val,
		Suffix: "judge", Seed: 42, NEpochs: 3, BatchSize: 2, LearningRateMultiplier: autoLRMultiplier,
		Step: 6, TotalSteps: 6, TrainedTokens: 72, FineTunedModel: *j.FineTunedModel, Polls: 4,
		Extra: map[string]json.RawMessage{"integrations": json.RawMessage(`[{"type":"wandb"}]`)},
	}
	if diff := cmp.Diff(wantInfo, info, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Events" }, cmp.Ignore())); diff != "" {
		t.Errorf("FineTuneJobs (-want +got):\n%s", diff)
	}

	// Polls of an ended job change nothing; it cannot be cancelled.
	if again := pollJob(t, s, j.ID); again.Status != "succeeded" {
		t.Errorf("poll after the end: got %s", again.Status)
	}
	if status, _, b := call(t, s, http.MethodPost, "/v1/fine_tuning/jobs/"+j.ID+"/cancel", "", nil, nil); status != http.StatusBadRequest {
		t.Errorf("cancel of a succeeded job: got %d (%s), want 400", status, b)
	}
}

func TestFineTuneFailAndSlow(t *testing.T) {
	s := NewServer(Options{FineTunePolls: 1})
	defer s.Close()
	train := uploadFineTune(t, s, trainingJSONL(20))

	// A model asking to fail fails at validation, with an error object.
	j := createJob(t, s, `{"model":"fail-model","training_file":"`+train+`"}`)
	j = pollJob(t, s, j.ID)
	if j.Status != "failed" || j.Error == nil || j.Error.Code != "invalid_training_file" || j.Error.Message == "" ||
		j.Error.Param == nil || *j.Error.Param != "training_file" || j.FinishedAt == nil || j.FineTunedModel != nil {
		t.Errorf("failed job: got %+v, error %+v", j, j.Error)
	}
	if ev := listEvents(t, s, j.ID, "", 1); len(ev.Data) != 1 || ev.Data[0].Level != "error" || !ev.HasMore {
		t.Errorf("newest event of a failed job: got %+v, want an error with more behind it", ev)
	}

	// So does a training file that is not chat JSONL.
	bad := uploadFineTune(t, s, trainingJSONL(2)+"not json\n")
	if j = pollJob(t, s, createJob(t, s, `{"model":"m","training_file":"`+bad+`"}`).ID); j.Status != "failed" ||
		!strings.Contains(j.Error.Message, "line 3") {
		t.Errorf("bad training file: got %s, %+v", j.Status, j.Error)
	}

	// A slow model runs, creeping on, until cancelled.
	j = createJob(t, s, `{"model":"slow-model","training_file":"`+train+`"}`)
	for range 30 {
		j = pollJob(t, s, j.ID)
	}
	info := s.FineTuneJobs()[2]
	if j.Status != "running" || info.Step == 0 || info.Step >= info.TotalSteps {
		t.Fatalf("slow job after 30 polls: %s at step %d/%d, want running part way", j.Status, info.Step, info.TotalSteps)
	}
	status, _, b := call(t, s, http.MethodPost, "/v1/fine_tuning/jobs/"+j.ID+"/cancel", "", nil, nil)
	if j = decodeJob(t, status, b); j.Status != "cancelled" || j.FinishedAt == nil {
		t.Errorf("cancel: got %s, want cancelled at once", j.Status)
	}
	if j = pollJob(t, s, j.ID); j.Status != "cancelled" {
		t.Errorf("poll after cancel: got %s", j.Status)
	}
	status, _, b = call(t, s, http.MethodPost, "/v1/fine_tuning/jobs/"+j.ID+"/cancel", "", nil, nil)
	if status != http.StatusBadRequest {
		t.Errorf("second cancel: got %d (%s), want 400", status, b)
	}
}

func TestFineTuneRequestErrors(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	train := uploadFineTune(t, s, trainingJSONL(2))
	batchFile := uploadFile(t, s, chatLine("a", "x"))
	job := createJob(t, s, `{"model":"m","training_file":"`+train+`"}`)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"unknown training file", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"file-nope"}`, 400, "training_file"},
		{"batch file", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + batchFile + `"}`, 400, "training_file"},
		{"unknown validation file", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + train + `","validation_file":"file-x"}`, 400, "validation_file"},
		{"no model", "POST", "/v1/fine_tuning/jobs", `{"training_file":"` + train + `"}`, 400, "model"},
		{"no training file", "POST", "/v1/fine_tuning/jobs", `{"model":"m"}`, 400, "training_file"},
		{"not json", "POST", "/v1/fine_tuning/jobs", `{"model":`, 400, ""},
		{"bad epochs", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + train + `","hyperparameters":{"n_epochs":0}}`, 400, "hyperparameters.n_epochs"},
		{"bad batch size", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + train + `","hyperparameters":{"batch_size":1.5}}`, 400, "hyperparameters.batch_size"},
		{"bad multiplier", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + train + `","hyperparameters":{"learning_rate_multiplier":"fast"}}`, 400, "hyperparameters.learning_rate_multiplier"},
		{"unknown hyperparameter", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + train + `","hyperparameters":{"lora_rank":16}}`, 400, "hyperparameters.lora_rank"},
		{"long suffix", "POST", "/v1/fine_tuning/jobs", `{"model":"m","training_file":"` + train + `","suffix":"` + strings.Repeat("x", 65) + `"}`, 400, "suffix"},
		{"unknown job", "GET", "/v1/fine_tuning/jobs/ftjob-nope", "", 404, "fine_tuning_job_id"},
		{"cancel unknown job", "POST", "/v1/fine_tuning/jobs/ftjob-nope/cancel", "", 404, "fine_tuning_job_id"},
		{"events bad limit", "GET", "/v1/fine_tuning/jobs/" + job.ID + "/events?limit=0", "", 400, "limit"},
		{"events unknown after", "GET", "/v1/fine_tuning/jobs/" + job.ID + "/events?after=ftevent-nope", "", 400, "after"},
		{"poll with POST", "POST", "/v1/fine_tuning/jobs/" + job.ID, "", 405, ""},
		{"unknown path", "GET", "/v1/fine_tuning/checkpoints", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, s, tc.method, tc.path, "application/json", []byte(tc.body), nil)
			var e struct {
				Error struct {
					Type  string  `json:"type"`
					Param *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("error body %s: %v", b, err)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if status != tc.status || e.Error.Type != "invalid_request_error" || param != tc.param {
				t.Errorf("got %d %s param %q, want %d invalid_request_error param %q (%s)", status, e.Error.Type, param, tc.status, tc.param, b)
			}
		})
	}
	if n := len(s.FineTuneJobs()); n != 1 {
		t.Errorf("jobs: got %d, want 1 (refused requests make none)", n)
	}
}

func TestFineTuneFaults(t *testing.T) {
	// Upload and create take the first two draws. Failed polls do not
	// advance the job; a malformed answer comes after the poll advanced it.
	s := NewServer(Options{APIKey: "sk-x", Script: []Fault{None, None, RateLimited, ServerError, Malformed, Unavailable, Malformed}})
	defer s.Close()
	auth := map[string]string{"Authorization": "Bearer sk-x"}
	ct, body := multipartUpload(t, "fine-tune", "train.jsonl", []byte(trainingJSONL(2)))
	status, _, raw := call(t, s, http.MethodPost, "/v1/files", ct, body, auth)
	var f wireFile
	if err := json.Unmarshal(raw, &f); status != 200 || err != nil {
		t.Fatalf("upload: got %d (%s)", status, raw)
	}
	status, _, raw = call(t, s, http.MethodPost, "/v1/fine_tuning/jobs", "application/json", []byte(`{"model":"m","training_file":"`+f.ID+`"}`), auth)
	j := decodeJob(t, status, raw)
	if status, _, _ := call(t, s, http.MethodGet, "/v1/fine_tuning/jobs/"+j.ID, "", nil, nil); status != http.StatusUnauthorized {
		t.Errorf("poll without key: got %d, want 401", status)
	}
	for i, want := range []int{429, 500, 200, 503} {
		status, h, raw := call(t, s, http.MethodGet, "/v1/fine_tuning/jobs/"+j.ID, "", nil, auth)
		if status != want {
			t.Errorf("poll %d: got %d (%s), want %d", i+1, status, raw, want)
		}
		if status == 429 && h.Get("Retry-After") == "" {
			t.Errorf("poll %d: 429 without Retry-After", i+1)
		}
		if status == 200 && json.Valid(raw) {
			t.Errorf("poll %d: got valid JSON %s, want a malformed body", i+1, raw)
		}
	}
	if info := s.FineTuneJobs()[0]; info.Status != "queued" || info.Polls != 1 {
		t.Errorf("after faulty polls: got %s after %d polls, want queued after the malformed one only", info.Status, info.Polls)
	}
	// The events list takes faults too.
	status, _, raw = call(t, s, http.MethodGet, "/v1/fine_tuning/jobs/"+j.ID+"/events", "", nil, auth)
	if status != 200 || json.Valid(raw) {
		t.Errorf("events: got %d %s, want a malformed 200", status, raw)
	}
}
