package judge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
)

// HandbackFile is the hand-back of a finished training job, in the job's
// directory.
const HandbackFile = "model.json"

// AdapterName is the name under which the serve command of a hand-back
// exposes a LoRA adapter, and so the model an llm judge asks for it.
const AdapterName = "s2g-judge"

// Handback describes a trained judge, as a successful training job hands
// it to its users and to distill bench: what was trained, from what, how,
// where the result is, and how to serve and use it. Package finetune writes
// it (finetune.NewHandback); Open reads it (Spec.From).
type Handback struct {
	Backend   string `json:"backend"`
	JobID     string `json:"job_id"`
	BaseModel string `json:"base_model"`
	// One of: a fine-tuned model served by the provider, a LoRA adapter
	// directory, a built-in judge's model file. In model.json a path inside
	// the hand-back's directory is relative to it, so that the directory
	// can be moved or copied; ReadHandback makes it absolute again.
	FineTunedModel string `json:"fine_tuned_model,omitempty"`
	AdapterDir     string `json:"adapter_dir,omitempty"`
	ModelFile      string `json:"model_file,omitempty"`
	// Hyperparameters are the training job's LoRA settings as it recorded
	// them (finetune.Hyperparameters); none for the built-in backend,
	// which trains no LoRA. They are kept as written: the judge does not
	// read them, it only hands them on.
	Hyperparameters json.RawMessage `json:"hyperparameters,omitempty"`
	// Template and data: the judge must be used with the template it was
	// trained on (TemplateHash when trained by this build). Its Split's
	// questions are empty in hand-backs written before they were
	// recorded.
	TemplateHash string `json:"template_hash"`
	Split
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	FinishedAt time.Time          `json:"finished_at"`
	// Commands to serve the judge and to run the loop with it
	// (SetCommands), with the paths of where the hand-back was read or
	// written.
	Serve string `json:"serve,omitempty"`
	Use   string `json:"use"`
	// ChatTemplate compares the chat template the judge was trained with
	// and the one its server applies (a LoRA adapter's); LlamaCpp says how
	// llama.cpp serves the adapter on a GGUF base model, when one was
	// named; TrainingData is what the judge was trained on.
	ChatTemplate *ChatTemplates `json:"chat_template,omitempty"`
	LlamaCpp     *LlamaCpp      `json:"llama_cpp,omitempty"`
	TrainingData *TrainingData  `json:"training_data,omitempty"`
}

// Split is what a judge was trained and validated on, as the export of the
// training data records it: a SHA-256 over the examples, their counts, and
// the ids of their questions (distill filter's split), sorted, each once,
// so that a benchmark can tell when it measures the judge on them.
type Split struct {
	DataHash       string   `json:"data_hash"`
	TrainExamples  int      `json:"train_examples"`
	ValExamples    int      `json:"val_examples"`
	TrainQuestions []string `json:"train_questions,omitempty"`
	ValQuestions   []string `json:"val_questions,omitempty"`
}

// ChatTemplates records the chat template (the Jinja template that turns
// messages into the model's text) a judge was trained with, the
// tokenizer's, beside the one the server that serves it applies, by their
// SHA-256. A judge shown its prompts in another chat format than it was
// trained on is not the judge that was measured, so Open refuses one whose
// templates differ (Status ChatTemplatesDiffer).
type ChatTemplates struct {
	Trained string `json:"trained_sha256,omitempty"`
	Served  string `json:"served_sha256,omitempty"`
	// ServedFrom is where the served template was read (a GGUF file).
	ServedFrom string `json:"served_from,omitempty"`
	// Status is ChatTemplatesMatch, ChatTemplatesDiffer or
	// ChatTemplatesUnchecked (Note says why).
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// The statuses of ChatTemplates.
const (
	ChatTemplatesMatch     = "match"
	ChatTemplatesDiffer    = "mismatch"
	ChatTemplatesUnchecked = "unchecked"
)

// LlamaCpp is how llama.cpp serves a LoRA adapter: converted to GGUF with
// llama.cpp's convert_lora_to_gguf.py, then loaded over the base model's
// GGUF file, as the model AdapterName.
type LlamaCpp struct {
	// BaseGGUF is the base model's GGUF file; AdapterGGUF the converted
	// adapter, relative to the hand-back's directory.
	BaseGGUF    string `json:"base_gguf"`
	AdapterGGUF string `json:"adapter_gguf"`
	// Convert and Serve are the commands (llama-cpp-python's server).
	Convert string `json:"convert"`
	Serve   string `json:"serve"`
}

// TrainingData is what a judge was trained on: the filtered label files
// (distill filter's train.parquet and val.parquet, relative to the
// hand-back's directory); their questions are the hand-back's
// TrainQuestions and ValQuestions.
type TrainingData struct {
	Train string `json:"train"`
	Val   string `json:"val,omitempty"`
}

// SetCommands sets Serve and Use from the result the hand-back names.
func (h *Handback) SetCommands() {
	h.Serve, h.Use = "", ""
	switch {
	case h.ModelFile != "":
		h.Use = "distill rollout --judge builtin:" + ShellQuote(h.ModelFile)
	case h.AdapterDir != "":
		h.Serve = fmt.Sprintf("vllm serve %s --enable-lora --lora-modules %s=%s", ShellQuote(h.BaseModel), AdapterName, ShellQuote(h.AdapterDir))
		h.Use = "distill rollout --judge llm --judge-model " + AdapterName + " --judge-base-url http://localhost:8000/v1"
	case h.FineTunedModel != "":
		h.Use = "distill rollout --judge llm --judge-model " + ShellQuote(h.FineTunedModel)
	}
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteHandback writes dir/model.json, with the paths of the result that
// lie inside dir made relative to it.
func WriteHandback(dir string, h Handback) error {
	h.AdapterDir, h.ModelFile = relativeTo(dir, h.AdapterDir), relativeTo(dir, h.ModelFile)
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	return data.WriteFileAtomic(filepath.Join(dir, HandbackFile), append(b, '\n'))
}

// ReadHandback reads dir/model.json.
func ReadHandback(dir string) (Handback, error) {
	var h Handback
	b, err := os.ReadFile(filepath.Join(dir, HandbackFile))
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("read %s: %w", filepath.Join(dir, HandbackFile), err)
	}
	h.AdapterDir, h.ModelFile = absoluteIn(dir, h.AdapterDir), absoluteIn(dir, h.ModelFile)
	h.SetCommands()
	return h, nil
}

// relativeTo returns path relative to dir when it lies inside dir, else
// path as it is.
func relativeTo(dir, path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return path
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(d, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// absoluteIn returns path, relative to dir, as an absolute path.
func absoluteIn(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	abs, err := filepath.Abs(filepath.Join(dir, path))
	if err != nil {
		return filepath.Join(dir, path)
	}
	return abs
}
