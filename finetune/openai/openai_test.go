package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/finetunetest"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// serve starts a fake OpenAI server that is closed when the test ends.
func serve(t *testing.T, opts llmtest.Options) *llmtest.Server {
	t.Helper()
	s := llmtest.NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

// submit submits job, failing the test if it cannot.
func submit(t *testing.T, b *Backend, job finetune.Job) finetune.State {
	t.Helper()
	st, err := b.Submit(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newBackend returns a backend for s that retries at once.
func newBackend(t *testing.T, s *llmtest.Server, key string) *Backend {
	t.Helper()
	b, err := New(Config{
		BaseURL: s.URL(), APIKey: llm.Secret(key), HTTPClient: s.Client(), Timeout: 5 * time.Second,
		Retry: llm.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Seed: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chatJSONL is a valid OpenAI chat training file of n examples.
func chatJSONL(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"messages":[{"role":"system","content":"You judge evidence."},{"role":"user","content":"Question %d: is it enough?"},{"role":"assistant","content":"{\"sufficient\": true}"}]}`+"\n", i)
	}
	return []byte(b.String())
}

// newJob writes a job's training (and, with val, validation) file into a
// fresh directory.
func newJob(t *testing.T, model string, val bool) finetune.Job {
	t.Helper()
	dir := t.TempDir()
	job := finetune.Job{Dir: dir, BaseModel: model, Name: "s2g-judge", Hyper: finetune.DefaultHyperparameters(),
		Files: finetune.Files{TrainOpenAI: "train.jsonl"}}
	if err := os.WriteFile(filepath.Join(dir, "train.jsonl"), chatJSONL(20), 0o644); err != nil {
		t.Fatal(err)
	}
	if val {
		job.Files.ValOpenAI = "val.jsonl"
		if err := os.WriteFile(filepath.Join(dir, "val.jsonl"), chatJSONL(2), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return job
}

func follow(t *testing.T, b *Backend, job finetune.Job, st finetune.State) finetune.State {
	t.Helper()
	st, err := finetune.Follow(t.Context(), b, job, st, finetune.FollowOptions{Interval: time.Millisecond})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	s := serve(t, llmtest.Options{})
	finetunetest.Run(t, finetunetest.Harness{
		New: func(t *testing.T) finetune.Backend { return newBackend(t, s, "") },
		Job: func(t *testing.T, sc finetunetest.Scenario) finetune.Job {
			model := map[finetunetest.Scenario]string{
				finetunetest.Succeed: "gpt-4o-mini-2024-07-18",
				finetunetest.Fail:    "fail-model",
				finetunetest.Slow:    "slow-model",
			}[sc]
			return newJob(t, model, false)
		},
		Interval: time.Millisecond,
	})
}

// logMessages returns the messages of the log's lines, checking their
// form.
func logMessages(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (info|warn|error) (.+)$`)
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("log line %q: want time, level, message", l)
			continue
		}
		out = append(out, m[2])
	}
	return out
}

// serverMessages are the messages of the job's events, oldest first.
func serverMessages(info llmtest.FineTuneInfo) []string {
	var out []string
	for _, e := range info.Events {
		out = append(out, e.Message)
	}
	return out
}

func TestLogAndMetrics(t *testing.T) {
	for _, page := range []int{eventPage, 2} {
		t.Run(fmt.Sprintf("page %d", page), func(t *testing.T) {
			s := serve(t, llmtest.Options{FineTunePolls: 3})
			b := newBackend(t, s, "")
			b.pageSize = page
			job := newJob(t, "gpt-4o-mini-2024-07-18", true)
			job.Hyper.BatchSize, job.Hyper.GradAccum = 1, 1 // 20 steps an epoch
			st := submit(t, b, job)
			var seen []finetune.State
			st, err := finetune.Follow(t.Context(), b, job, st, finetune.FollowOptions{
				Interval: time.Millisecond, OnUpdate: func(s finetune.State) { seen = append(seen, s) }})
			if err != nil {
				t.Fatal(err)
			}
			info := s.FineTuneJobs()[0]
			if st.Status != finetune.StatusSucceeded || st.Result == nil || st.Result.FineTunedModel != info.FineTunedModel {
				t.Fatalf("got %s %+v, want succeeded with %s", st.Status, st.Result, info.FineTunedModel)
			}
			if info.TotalSteps != 60 || st.Step != 60 || st.TotalSteps != 60 {
				t.Errorf("steps: got %d/%d (server %d), want 60/60", st.Step, st.TotalSteps, info.TotalSteps)
			}
			var lastLoss, validLoss float64
			for _, e := range info.Events {
				if e.Type == "metrics" {
					lastLoss = e.Data["train_loss"].(float64)
					if v, ok := e.Data["valid_loss"].(float64); ok {
						validLoss = v
					}
				}
			}
			if st.Loss != lastLoss || validLoss == 0 {
				t.Errorf("loss: got %g, want the last train_loss %g (and a validation loss, got %g)", st.Loss, lastLoss, validLoss)
			}
			want := map[string]float64{"trained_tokens": float64(info.TrainedTokens), "steps": 60, "train_loss": lastLoss, "valid_loss": validLoss}
			if diff := cmp.Diff(want, st.Result.Metrics); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
			// Progress was reported as it came, not only at the end.
			var running int
			for _, s := range seen {
				if s.Status == finetune.StatusRunning && s.Step > 0 && s.Step < 60 {
					running++
				}
			}
			if running < 2 {
				t.Errorf("updates part way through: got %d, want at least 2", running)
			}

			// The log has the uploads, then every event once, in order.
			wantLog := append([]string{
				"uploaded train.jsonl as " + info.TrainingFile,
				"uploaded val.jsonl as " + info.ValidationFile,
			}, serverMessages(info)...)
			if diff := cmp.Diff(wantLog, logMessages(t, job.Path(st.LogPath))); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if st.LogPath != LogFile || st.Data[dataLastEvent] != info.Events[len(info.Events)-1].ID ||
				st.Data[dataTrainingFile] != info.TrainingFile || st.Data[dataValidationFile] != info.ValidationFile {
				t.Errorf("state: log %q data %v", st.LogPath, st.Data)
			}
		})
	}
}

func TestFollowSurvivesFaults(t *testing.T) {
	// The client is sequential, so the script falls on known calls: the
	// upload, the creation, then each Status's job and events requests.
	// A malformed or truncated answer to a poll comes after the poll
	// advanced the job; a hang runs into the per-attempt timeout.
	script := []llmtest.Fault{
		llmtest.Unavailable, llmtest.None, // upload
		llmtest.RateLimited, llmtest.ServerError, llmtest.None, // create
		llmtest.Malformed, llmtest.None, // job
		llmtest.Truncated, llmtest.ServerError, llmtest.None, // events
		llmtest.Hang, llmtest.Truncated, llmtest.None, // job
		llmtest.RateLimited, llmtest.Malformed, llmtest.None, // events
	}
	s := serve(t, llmtest.Options{Script: script, Seed: 7, ServerError: 0.1, RateLimited: 0.1, Malformed: 0.05})
	b, err := New(Config{BaseURL: s.URL(), HTTPClient: s.Client(), Timeout: 200 * time.Millisecond,
		Retry: llm.RetryOptions{MaxAttempts: 8, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	job := newJob(t, "gpt-4o-mini-2024-07-18", false)
	st, err := b.Submit(t.Context(), job)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	st = follow(t, b, job, st)
	if st.Status != finetune.StatusSucceeded || st.Result == nil {
		t.Fatalf("got %s (%s), want succeeded", st.Status, st.Message)
	}
	c := s.Counts()
	if c.RateLimited == 0 || c.ServerError == 0 || c.Unavailable == 0 || c.Malformed == 0 || c.Truncated == 0 || c.Hang == 0 {
		t.Errorf("counts %+v: want every fault seen", c)
	}
	jobs := s.FineTuneJobs()
	if len(jobs) != 1 {
		t.Fatalf("jobs: got %d, want 1", len(jobs))
	}
	want := append([]string{"uploaded train.jsonl as " + jobs[0].TrainingFile}, serverMessages(jobs[0])...)
	if diff := cmp.Diff(want, logMessages(t, job.Path(st.LogPath))); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestRequestBody(t *testing.T) {
	hyper := finetune.DefaultHyperparameters()
	for _, tc := range []struct {
		name  string
		extra map[string]any
		want  string
	}{
		{"no extra", nil,
			`{"hyperparameters":{"batch_size":16,"n_epochs":3},"model":"m","seed":42,"suffix":"s2g-judge","training_file":"file-t","validation_file":"file-v"}`},
		{"multiplier and members", map[string]any{"learning_rate_multiplier": 0.5, "metadata": map[string]any{"run": "r1"}, "suffix": "mine"},
			`{"hyperparameters":{"batch_size":16,"learning_rate_multiplier":0.5,"n_epochs":3},"metadata":{"run":"r1"},"model":"m","seed":42,"suffix":"mine","training_file":"file-t","validation_file":"file-v"}`},
		{"hyperparameters object", map[string]any{"hyperparameters": map[string]any{"n_epochs": "auto"}},
			`{"hyperparameters":{"batch_size":16,"n_epochs":"auto"},"model":"m","seed":42,"suffix":"s2g-judge","training_file":"file-t","validation_file":"file-v"}`},
		{"method", map[string]any{"method": map[string]any{"type": "supervised", "supervised": map[string]any{"hyperparameters": map[string]any{"n_epochs": 1}}}},
			`{"method":{"supervised":{"hyperparameters":{"batch_size":16,"n_epochs":1}},"type":"supervised"},"model":"m","seed":42,"suffix":"s2g-judge","training_file":"file-t","validation_file":"file-v"}`},
		{"method without its member", map[string]any{"method": map[string]any{"type": "dpo"}},
			`{"method":{"dpo":{"hyperparameters":{"batch_size":16,"n_epochs":3}},"type":"dpo"},"model":"m","seed":42,"suffix":"s2g-judge","training_file":"file-t","validation_file":"file-v"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.extra)
			job := finetune.Job{BaseModel: "m", Name: "s2g-judge", Hyper: hyper, Extra: tc.extra}
			got, err := requestBody(job, "file-t", "file-v")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if after, _ := json.Marshal(tc.extra); string(after) != string(before) {
				t.Errorf("Extra changed: %s, was %s", after, before)
			}
		})
	}
	if _, err := requestBody(finetune.Job{BaseModel: "m", Extra: map[string]any{"hyperparameters": 3}}, "f", ""); err == nil {
		t.Error("hyperparameters that are not an object: no error")
	}
	if got := suffix("S2G judge/v1:" + strings.Repeat("x", 80)); got != "S2G-judge-v1-"+strings.Repeat("x", 51) {
		t.Errorf("suffix: got %q", got)
	}
}

func TestExtraReachesServer(t *testing.T) {
	s := serve(t, llmtest.Options{})
	b := newBackend(t, s, "")
	job := newJob(t, "gpt-4o-mini-2024-07-18", true)
	job.Extra = map[string]any{
		"learning_rate_multiplier": 0.5,
		"integrations":             []any{map[string]any{"type": "wandb", "wandb": map[string]any{"project": "distill"}}},
		"metadata":                 map[string]any{"template": "abc"},
	}
	submit(t, b, job)
	info := s.FineTuneJobs()[0]
	got := settings{info.Model, info.Suffix, info.Seed, info.NEpochs, info.BatchSize, info.LearningRateMultiplier, info.ValidationFile != ""}
	want := settings{"gpt-4o-mini-2024-07-18", "s2g-judge", 42, 3, 16, 0.5, true}
	if got != want {
		t.Errorf("job settings: got %+v, want %+v", got, want)
	}
	wantExtra := map[string]json.RawMessage{
		"integrations": json.RawMessage(`[{"type":"wandb","wandb":{"project":"distill"}}]`),
		"metadata":     json.RawMessage(`{"template":"abc"}`),
	}
	if diff := cmp.Diff(wantExtra, info.Extra); diff != "" {
		t.Errorf("extra members (-want +got):\n%s", diff)
	}
}

// settings are what TestExtraReachesServer compares.
type settings struct {
	Model, Suffix     string
	Seed              int64
	Epochs, Batch     int
	LRMultiplier      float64
	HasValidationFile bool
}

func TestAuth(t *testing.T) {
	s := serve(t, llmtest.Options{APIKey: "sk-right"})
	job := newJob(t, "gpt-4o-mini-2024-07-18", false)
	_, err := newBackend(t, s, "sk-wrong").Submit(t.Context(), job)
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("submit with a wrong key: got %v, want ErrAuth", err)
	}
	if n := s.Counts().Requests; n != 1 {
		t.Errorf("requests: got %d, want 1 (no retries of a 401)", n)
	}

	st, err := newBackend(t, s, "sk-right").Submit(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newBackend(t, s, "sk-wrong").Status(t.Context(), job, st); !errors.Is(err, llm.ErrAuth) {
		t.Errorf("status with a wrong key: got %v, want ErrAuth", err)
	}
	if _, err := newBackend(t, s, "sk-wrong").Cancel(t.Context(), job, st); !errors.Is(err, llm.ErrAuth) {
		t.Errorf("cancel with a wrong key: got %v, want ErrAuth", err)
	}
}

func TestCancelJobThatEnded(t *testing.T) {
	s := serve(t, llmtest.Options{})
	b := newBackend(t, s, "")
	job := newJob(t, "gpt-4o-mini-2024-07-18", false)
	submitted := submit(t, b, job)
	done := follow(t, b, job, submitted)
	// Another process still holds the state from before the end.
	got, err := newBackend(t, s, "").Cancel(t.Context(), job, submitted)
	if err != nil || got.Status != finetune.StatusSucceeded || got.Result == nil || got.Result.FineTunedModel != done.Result.FineTunedModel {
		t.Errorf("cancel of a job that ended since: got %s %+v, %v; want it succeeded", got.Status, got.Result, err)
	}
	var refused int
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/cancel") && r.Status == http.StatusBadRequest {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("refused cancels: got %d, want 1", refused)
	}
}

func TestFailedJobMessage(t *testing.T) {
	s := serve(t, llmtest.Options{})
	b := newBackend(t, s, "")
	job := newJob(t, "fail-model", false)
	st := submit(t, b, job)
	st = follow(t, b, job, st)
	if st.Status != finetune.StatusFailed || !strings.HasPrefix(st.Message, "invalid_training_file: ") || st.FinishedAt.IsZero() {
		t.Errorf("got %s %q finished %v, want failed with the code and message", st.Status, st.Message, st.FinishedAt)
	}
}

func TestSubmitRefusesIncompleteJobs(t *testing.T) {
	s := serve(t, llmtest.Options{})
	b := newBackend(t, s, "")
	for name, edit := range map[string]func(*finetune.Job){
		"no base model":      func(j *finetune.Job) { j.BaseModel = "" },
		"no training file":   func(j *finetune.Job) { j.Files.TrainOpenAI = "" },
		"missing file":       func(j *finetune.Job) { j.Files.TrainOpenAI = "nope.jsonl" },
		"bad hyperparameter": func(j *finetune.Job) { j.Extra = map[string]any{"hyperparameters": "fast"} },
	} {
		job := newJob(t, "m", false)
		edit(&job)
		if _, err := b.Submit(t.Context(), job); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(s.FineTuneJobs()); n != 0 {
		t.Errorf("jobs: got %d, want none", n)
	}
	if _, err := New(Config{BaseURL: "localhost:8000"}); err == nil {
		t.Error("a base URL without a scheme: no error")
	}
}

func TestCancelSurvivesLostAnswer(t *testing.T) {
	// Upload, create, two Status calls (job, events each), then the
	// cancel, whose answer is lost after the server cancelled the job: the
	// retry is refused (400, the job has ended) and Cancel finds it
	// cancelled.
	script := make([]llmtest.Fault, 7)
	script[6] = llmtest.Malformed
	s := serve(t, llmtest.Options{Script: script})
	b := newBackend(t, s, "")
	job := newJob(t, "slow-model", false)
	st := submit(t, b, job)
	var err error
	for range 2 {
		if st, err = b.Status(t.Context(), job, st); err != nil {
			t.Fatal(err)
		}
	}
	if st.Status != finetune.StatusRunning {
		t.Fatalf("before cancel: got %s, want running", st.Status)
	}
	st, err = b.Cancel(t.Context(), job, st)
	if err != nil || st.Status != finetune.StatusCancelled {
		t.Fatalf("cancel: got %s, %v; want cancelled", st.Status, err)
	}
	if c := s.Counts(); c.Malformed != 1 || c.Rejected != 1 {
		t.Errorf("counts %+v: want the malformed answer and the refused retry", c)
	}
	msgs := logMessages(t, job.Path(st.LogPath))
	if last := msgs[len(msgs)-1]; last != "Fine-tuning job cancelled" {
		t.Errorf("last log line: got %q, want the cancel event", last)
	}
}
