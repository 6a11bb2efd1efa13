package judge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	// directory, a built-in judge's model file (absolute paths).
	FineTunedModel string `json:"fine_tuned_model,omitempty"`
	AdapterDir     string `json:"adapter_dir,omitempty"`
	ModelFile      string `json:"model_file,omitempty"`
	// Hyperparameters are the training job's LoRA settings as it recorded
	// them (finetune.Hyperparameters); none for the built-in backend,
	// which trains no LoRA. They are kept as written: the judge does not
	// read them, it only hands them on.
	Hyperparameters json.RawMessage `json:"hyperparameters,omitempty"`
	// Data and template: the judge must be used with the template it was
	// trained on (TemplateHash when trained by this build).
	TemplateHash  string             `json:"template_hash"`
	DataHash      string             `json:"data_hash"`
	TrainExamples int                `json:"train_examples"`
	ValExamples   int                `json:"val_examples"`
	Metrics       map[string]float64 `json:"metrics,omitempty"`
	FinishedAt    time.Time          `json:"finished_at"`
	// Commands to serve the judge and to run the loop with it.
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
// hand-back's directory) and the ids of their questions, so that a
// benchmark can tell the questions the judge has seen.
type TrainingData struct {
	Train          string   `json:"train"`
	Val            string   `json:"val,omitempty"`
	TrainQuestions []string `json:"train_questions"`
	ValQuestions   []string `json:"val_questions,omitempty"`
}

// WriteHandback writes dir/model.json.
func WriteHandback(dir string, h Handback) error {
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
	return h, nil
}
