package finetune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
)

// Backend runs fine-tuning jobs somewhere: a provider's API, a trainer
// process on this machine, a Slurm cluster, or this CPU.
//
// The contract every backend keeps, and finetunetest.Run checks:
//
//   - Submit starts the job described by Job and returns its first State,
//     with ID set. It does not wait for the job to end, unless the backend
//     trains in seconds on this machine (builtin): its job has then ended
//     when Submit returns. Everything needed to
//     find the job again goes in State (ID, Data), which the caller
//     persists in Job.Dir/job.json: Status and Cancel must work from
//     another process, given the Job and that State.
//   - Status returns the job's current State: Status, progress (Step,
//     TotalSteps, Loss), and once it has succeeded, Result. It appends what
//     the job printed or reported since the last call to the log file
//     State.LogPath (a path under Job.Dir), so that followers tail one file
//     whatever the backend. Status of a terminal job returns it unchanged.
//   - Cancel asks the job to stop and returns its State, cancelled (or
//     terminal already). It is idempotent: cancelling a cancelled, failed
//     or succeeded job is not an error and changes nothing.
//   - A job that fails is StatusFailed with Message saying why; that is not
//     an error of Status. Errors are for not being able to reach or drive
//     the backend (the caller may try again later: the job goes on).
//   - Backends are safe for use by one goroutine at a time.
type Backend interface {
	// Name is the backend's name as job.json records it ("openai",
	// "local", "slurm", "builtin").
	Name() string
	Submit(ctx context.Context, job Job) (State, error)
	Status(ctx context.Context, job Job, st State) (State, error)
	Cancel(ctx context.Context, job Job, st State) (State, error)
}

// Job is what to train and how.
type Job struct {
	// Dir is the job's directory: job.json, the log, the exported data
	// (Files), and for local backends the adapter. job.json records it as
	// "." (see SaveRecord).
	Dir string `json:"dir"`
	// BaseModel is the model to fine-tune (a provider's model name, or a
	// Hugging Face id or path for local trainers).
	BaseModel string `json:"base_model"`
	// Name is a short name for the job and its result (default "s2g-judge").
	Name string `json:"name"`
	// Files are the exported training and validation data; Labels the
	// filtered labels they were exported from (train.parquet, val.parquet
	// of distill filter), which the built-in backend trains on.
	Files  Files  `json:"files"`
	Labels Labels `json:"labels"`
	// Hyper are the training hyper-parameters.
	Hyper Hyperparameters `json:"hyperparameters"`
	// BaseGGUF, for a LoRA trainer, is the GGUF file of the base model
	// that llama.cpp will serve the adapter on: the hand-back compares the
	// chat template it applies with the one the adapter was trained with,
	// and says how to serve the adapter with llama.cpp.
	BaseGGUF string `json:"base_gguf,omitempty"`
	// Extra holds provider parameters passed through as they are (for
	// example LoRA settings of a provider that accepts them).
	Extra map[string]any `json:"extra,omitempty"`
}

// Labels are the filtered label files of a job.
type Labels struct {
	Train string `json:"train"`
	Val   string `json:"val,omitempty"`
}

// Hyperparameters of LoRA supervised fine-tuning. DefaultHyperparameters
// are the method's reference settings.
type Hyperparameters struct {
	LoRARank      int      `json:"lora_rank"`
	LoRAAlpha     int      `json:"lora_alpha"`
	LoRADropout   float64  `json:"lora_dropout"`
	TargetModules []string `json:"target_modules"`
	LearningRate  float64  `json:"learning_rate"`
	Epochs        int      `json:"epochs"`
	// MaxSteps, when positive, ends training after that many optimiser
	// steps, whatever Epochs says (a budget run).
	MaxSteps  int `json:"max_steps,omitempty"`
	BatchSize int `json:"batch_size"`
	GradAccum int `json:"gradient_accumulation"`
	MaxLength int `json:"max_length"`
	Seed      int `json:"seed"`
	// Precision is what the trainer computes in: PrecisionBF16,
	// PrecisionFP32, or PrecisionAuto (bfloat16 where the hardware that
	// trains computes it natively, float32 elsewhere; decided where the
	// trainer runs).
	Precision string `json:"precision"`
	// Loss is what the loss covers: LossCompletion ("" too), the
	// teacher's verdict, over-length examples left out; or LossFull, the
	// whole chat-templated text, over-length examples cut at MaxLength, as
	// the authors' code trains (the local and slurm trainers only).
	Loss string `json:"loss,omitempty"`
	// TargetJSON is how the verdict a training example teaches is written:
	// TargetCompact ("" too, judge.VerdictJSON) or TargetSpaced (a space
	// after every ',' and ':', judge.VerdictJSONSpaced), as the authors'
	// code writes it.
	TargetJSON string `json:"target_json,omitempty"`
}

// The losses of Hyperparameters.Loss.
const (
	LossCompletion = "completion"
	LossFull       = "full"
)

// The ways of writing a training target of Hyperparameters.TargetJSON.
const (
	TargetCompact = "compact"
	TargetSpaced  = "spaced"
)

// The precisions of Hyperparameters.Precision.
const (
	PrecisionAuto = "auto"
	PrecisionBF16 = "bf16"
	PrecisionFP32 = "fp32"
)

// Precisions returns the values Hyperparameters.Precision takes.
func Precisions() []string { return []string{PrecisionAuto, PrecisionBF16, PrecisionFP32} }

// DefaultHyperparameters returns the method's reference settings: LoRA rank
// 16, alpha 32, dropout 0.05 on the q/k/v/o/gate/up/down projections,
// learning rate 1e-4, 3 epochs, batch 2 x gradient accumulation 8, max
// length 2048, seed 42, bf16 (where the hardware computes it: auto).
func DefaultHyperparameters() Hyperparameters {
	return Hyperparameters{
		LoRARank: 16, LoRAAlpha: 32, LoRADropout: 0.05,
		TargetModules: []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
		LearningRate:  1e-4, Epochs: 3, BatchSize: 2, GradAccum: 8, MaxLength: 2048, Seed: 42, Precision: PrecisionAuto,
	}
}

// Status is where a job is.
type Status string

// The statuses of a job.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether the job has ended.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// State is a job as a backend last saw it, persisted in Dir/job.json.
type State struct {
	Backend string `json:"backend"`
	// ID is the backend's id of the job (a provider's job id, a process
	// id, a Slurm job id).
	ID      string `json:"id"`
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"`
	// Progress: optimiser steps done and in all, and the last training
	// loss reported.
	Step       int     `json:"step"`
	TotalSteps int     `json:"total_steps"`
	Loss       float64 `json:"loss,omitempty"`
	// LogPath is the job's log under Dir (what the trainer printed, or the
	// provider's events).
	LogPath     string    `json:"log_path,omitempty"`
	SubmittedAt time.Time `json:"submitted_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	// Result is set once the job has succeeded.
	Result *Result `json:"result,omitempty"`
	// Data holds what else the backend needs to find the job again (file
	// ids, a process group, a script path).
	Data map[string]string `json:"data,omitempty"`
}

// WithData returns st with a copy of Data in which key is value, so that
// the map of the State the caller passed stays as it was.
func (st State) WithData(key, value string) State {
	data := make(map[string]string, len(st.Data)+1)
	maps.Copy(data, st.Data)
	data[key] = value
	st.Data = data
	return st
}

// Result is what a successful job produced: a fine-tuned model served by
// the provider, or a LoRA adapter (or built-in judge) on disk, with the
// final metrics.
type Result struct {
	FineTunedModel string             `json:"fine_tuned_model,omitempty"`
	AdapterDir     string             `json:"adapter_dir,omitempty"`
	ModelFile      string             `json:"model_file,omitempty"`
	Metrics        map[string]float64 `json:"metrics,omitempty"`
	// ChatTemplate compares an adapter's chat template with the one its
	// server will apply (trainer.CheckChatTemplates).
	ChatTemplate *judge.ChatTemplates `json:"chat_template,omitempty"`
}

// JobFile is the file in a job's directory that records it.
const JobFile = "job.json"

// ErrNoJob is returned when a directory holds no job.
var ErrNoJob = errors.New("no fine-tuning job in this directory")

// Record is the content of job.json: the job and its last state.
type Record struct {
	Job   Job   `json:"job"`
	State State `json:"state"`
}

// SaveRecord writes dir/job.json atomically.
//
// The job's directory is dir: job.json names it ".", and the paths of the
// job's files in it are relative to it, so that the directory can be
// moved; LoadRecord gives Job.Dir the directory it reads from.
func SaveRecord(dir string, r Record) error {
	r.Job.Dir = "."
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return data.WriteFileAtomic(filepath.Join(dir, JobFile), append(b, '\n'))
}

// LoadRecord reads dir/job.json; ErrNoJob when there is none.
func LoadRecord(dir string) (Record, error) {
	var r Record
	b, err := os.ReadFile(filepath.Join(dir, JobFile))
	if errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("%s: %w", dir, ErrNoJob)
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read %s: %w", filepath.Join(dir, JobFile), err)
	}
	if r.Job.Dir, err = filepath.Abs(dir); err != nil {
		return r, err
	}
	return r, nil
}
