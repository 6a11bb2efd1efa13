package finetune

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/judge"
)

func TestNewHandbackAdapter(t *testing.T) {
	root := t.TempDir()
	job := Job{
		Dir: filepath.Join(root, "judge"), BaseModel: filepath.Join(root, "base model"), BaseGGUF: "/models/smol.gguf",
		Labels: Labels{Train: filepath.Join(root, "sft", "train.parquet"), Val: filepath.Join(root, "sft", "val.parquet")},
		Files:  Files{TemplateHash: judge.TemplateHash, Split: judge.Split{TrainQuestions: []string{"a", "b"}, ValQuestions: []string{"c"}}},
	}
	for _, d := range []string{job.Dir, job.BaseModel} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ct := &judge.ChatTemplates{Trained: "x", Served: "x", ServedFrom: job.BaseGGUF, Status: judge.ChatTemplatesMatch}
	st := State{Backend: "local", ID: "7", Status: StatusSucceeded, Result: &Result{AdapterDir: "adapter", ChatTemplate: ct}}
	h, err := NewHandback(job, st)
	if err != nil {
		t.Fatal(err)
	}
	adapter := filepath.Join(job.Dir, "adapter")
	out := filepath.Join(job.Dir, AdapterGGUF)
	want := &judge.LlamaCpp{
		BaseGGUF: "/models/smol.gguf", AdapterGGUF: AdapterGGUF,
		Convert: "python3 convert_lora_to_gguf.py --base '" + job.BaseModel + "' --outtype f32 --outfile " + out + " " + adapter,
		Serve:   "python3 -m llama_cpp.server --model /models/smol.gguf --lora_path " + out + " --model_alias s2g-judge --port 8000",
	}
	if diff := cmp.Diff(want, h.LlamaCpp); diff != "" {
		t.Errorf("llama.cpp commands (-want +got):\n%s", diff)
	}
	wantData := &judge.TrainingData{Train: "../sft/train.parquet", Val: "../sft/val.parquet"}
	if diff := cmp.Diff(wantData, h.TrainingData); diff != "" {
		t.Errorf("training data (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, h.TrainQuestions); diff != "" {
		t.Errorf("training questions (-want +got):\n%s", diff)
	}
	if h.ChatTemplate != ct {
		t.Errorf("chat template record %+v, want the result's %+v", h.ChatTemplate, ct)
	}

	// A base model by its Hugging Face id, and no GGUF: vLLM only.
	job.BaseModel, job.BaseGGUF = "HuggingFaceTB/SmolLM2-135M-Instruct", ""
	if h, err = NewHandback(job, st); err != nil {
		t.Fatal(err)
	}
	if h.LlamaCpp != nil {
		t.Errorf("llama.cpp commands without a GGUF: %+v", h.LlamaCpp)
	}
	job.BaseGGUF = "/models/smol.gguf"
	if h, err = NewHandback(job, st); err != nil {
		t.Fatal(err)
	}
	if want := "python3 convert_lora_to_gguf.py --base-model-id HuggingFaceTB/SmolLM2-135M-Instruct --outtype f32 --outfile " + out + " " + adapter; h.LlamaCpp.Convert != want {
		t.Errorf("convert: got %q, want %q", h.LlamaCpp.Convert, want)
	}

	// A GGUF file trained on directly: the converter needs it as a model
	// directory first.
	job.BaseModel = filepath.Join(root, "smol.gguf")
	if err := os.WriteFile(job.BaseModel, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err = NewHandback(job, st); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(root, "smol-hf")
	if want := "python3 train_sft.py --dequantize " + job.BaseModel + " " + hf + " && python3 convert_lora_to_gguf.py --base " + hf + " --outtype f32 --outfile " + out + " " + adapter; h.LlamaCpp.Convert != want {
		t.Errorf("convert: got %q, want %q", h.LlamaCpp.Convert, want)
	}
}
