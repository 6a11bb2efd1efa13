package finetune

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/judge"
)

// NewHandback describes a succeeded job as the judge it trained.
func NewHandback(job Job, st State) (judge.Handback, error) {
	if st.Status != StatusSucceeded || st.Result == nil {
		return judge.Handback{}, fmt.Errorf("job %s has not succeeded (%s)", st.ID, st.Status)
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
	h := judge.Handback{
		Backend: st.Backend, JobID: st.ID, BaseModel: job.BaseModel,
		FineTunedModel: st.Result.FineTunedModel, AdapterDir: abs(st.Result.AdapterDir), ModelFile: abs(st.Result.ModelFile),
		TemplateHash: job.Files.TemplateHash, Split: job.Files.Split,
		Metrics: st.Result.Metrics, FinishedAt: st.FinishedAt,
	}
	if h.ModelFile == "" {
		hp, err := json.Marshal(job.Hyper)
		if err != nil {
			return judge.Handback{}, err
		}
		h.Hyperparameters = hp
	}
	h.ChatTemplate = st.Result.ChatTemplate
	h.TrainingData = trainingData(job)
	if job.BaseGGUF != "" && h.AdapterDir != "" {
		h.LlamaCpp = llamaCpp(job, h.AdapterDir)
	}
	h.SetCommands()
	if h.Use == "" {
		return judge.Handback{}, errors.New("the job's result names no model")
	}
	return h, nil
}

// AdapterGGUF is where llama.cpp's converter writes a job's adapter as
// GGUF, in the job's directory.
const AdapterGGUF = "adapter.gguf"

// llamaCpp returns how llama.cpp serves the job's adapter (at adapterDir,
// absolute): convert it with llama.cpp's convert_lora_to_gguf.py (which
// reads the base model's config from its directory, or by its Hugging Face
// id), then load it over the base model's GGUF file in llama-cpp-python's
// OpenAI-compatible server.
func llamaCpp(job Job, adapterDir string) *judge.LlamaCpp {
	out := filepath.Join(filepath.Dir(adapterDir), AdapterGGUF)
	abs, err := filepath.Abs(job.BaseModel)
	if err != nil {
		abs = job.BaseModel
	}
	base, first := "--base-model-id "+judge.ShellQuote(job.BaseModel), ""
	if fi, err := os.Stat(job.BaseModel); err == nil && fi.IsDir() {
		base = "--base " + judge.ShellQuote(abs)
	} else if err == nil && strings.HasSuffix(strings.ToLower(job.BaseModel), ".gguf") {
		// The converter reads the architecture from a model directory:
		// the GGUF file's, as the trainer dequantized it.
		dir := strings.TrimSuffix(abs, filepath.Ext(abs)) + "-hf"
		first = fmt.Sprintf("python3 train_sft.py --dequantize %s %s && ", judge.ShellQuote(abs), judge.ShellQuote(dir))
		base = "--base " + judge.ShellQuote(dir)
	}
	return &judge.LlamaCpp{
		BaseGGUF:    job.BaseGGUF,
		AdapterGGUF: AdapterGGUF,
		Convert:     fmt.Sprintf("%spython3 convert_lora_to_gguf.py %s --outtype f32 --outfile %s %s", first, base, judge.ShellQuote(out), judge.ShellQuote(adapterDir)),
		Serve: fmt.Sprintf("python3 -m llama_cpp.server --model %s --lora_path %s --model_alias %s --port 8000",
			judge.ShellQuote(job.BaseGGUF), judge.ShellQuote(out), judge.AdapterName),
	}
}

// trainingData returns what the job trained on: its label files, relative
// to its directory (as they are when they cannot be made so).
func trainingData(job Job) *judge.TrainingData {
	if job.Labels.Train == "" {
		return nil
	}
	return &judge.TrainingData{Train: data.RelativePath(job.Dir, job.Labels.Train), Val: data.RelativePath(job.Dir, job.Labels.Val)}
}
