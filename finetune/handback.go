package finetune

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
)

// ModelFile is the hand-back of a finished job, in its directory.
const ModelFile = "model.json"

// Handback is what a successful job hands to its users and to distill
// bench: what was trained, from what, how, where the result is, and how to
// serve and evaluate it.
type Handback struct {
	Backend   string `json:"backend"`
	JobID     string `json:"job_id"`
	BaseModel string `json:"base_model"`
	// One of: a fine-tuned model served by the provider, a LoRA adapter
	// directory, a built-in judge's model file (absolute paths).
	FineTunedModel string `json:"fine_tuned_model,omitempty"`
	AdapterDir     string `json:"adapter_dir,omitempty"`
	ModelFile      string `json:"model_file,omitempty"`
	// Hyperparameters, data and template: the judge must be used with the
	// template it was trained on (TemplateHash, judge.TemplateHash
	// when trained).
	// Hyperparameters are the LoRA settings; none for the built-in
	// backend, which trains no LoRA.
	Hyperparameters *Hyperparameters   `json:"hyperparameters,omitempty"`
	TemplateHash    string             `json:"template_hash"`
	DataHash        string             `json:"data_hash"`
	TrainExamples   int                `json:"train_examples"`
	ValExamples     int                `json:"val_examples"`
	Metrics         map[string]float64 `json:"metrics,omitempty"`
	FinishedAt      time.Time          `json:"finished_at"`
	// Commands to serve the judge and to run the loop with it.
	Serve string `json:"serve,omitempty"`
	Use   string `json:"use"`
}

// AdapterName is the name under which the serve command exposes a LoRA
// adapter.
const AdapterName = "s2g-judge"

// NewHandback describes a succeeded job.
func NewHandback(job Job, st State) (Handback, error) {
	if st.Status != StatusSucceeded || st.Result == nil {
		return Handback{}, fmt.Errorf("job %s has not succeeded (%s)", st.ID, st.Status)
	}
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		a, err := filepath.Abs(job.Path(p))
		if err != nil {
			return job.Path(p)
		}
		return a
	}
	h := Handback{
		Backend: st.Backend, JobID: st.ID, BaseModel: job.BaseModel,
		FineTunedModel: st.Result.FineTunedModel, AdapterDir: abs(st.Result.AdapterDir), ModelFile: abs(st.Result.ModelFile),
		TemplateHash: job.Files.TemplateHash, DataHash: job.Files.DataHash,
		TrainExamples: job.Files.TrainExamples, ValExamples: job.Files.ValExamples,
		Metrics: st.Result.Metrics, FinishedAt: st.FinishedAt,
	}
	if h.ModelFile == "" {
		hp := job.Hyper
		h.Hyperparameters = &hp
	}
	switch {
	case h.ModelFile != "":
		h.Use = "distill rollout --judge builtin:" + quote(h.ModelFile)
	case h.AdapterDir != "":
		h.Serve = fmt.Sprintf("vllm serve %s --enable-lora --lora-modules %s=%s", quote(job.BaseModel), AdapterName, quote(h.AdapterDir))
		h.Use = "distill rollout --judge llm --judge-model " + AdapterName + " --judge-base-url http://localhost:8000/v1"
	case h.FineTunedModel != "":
		h.Use = "distill rollout --judge llm --judge-model " + quote(h.FineTunedModel)
	default:
		return Handback{}, errors.New("the job's result names no model")
	}
	return h, nil
}

// quote quotes s for a POSIX shell when it needs it.
func quote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteHandback writes dir/model.json.
func WriteHandback(dir string, h Handback) error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return data.WriteFileAtomic(filepath.Join(dir, ModelFile), append(b, '\n'))
}

// ReadHandback reads dir/model.json.
func ReadHandback(dir string) (Handback, error) {
	var h Handback
	b, err := os.ReadFile(filepath.Join(dir, ModelFile))
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("read %s: %w", filepath.Join(dir, ModelFile), err)
	}
	return h, nil
}
