package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHandbackRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Handback{
		Backend: "local", JobID: "j1", BaseModel: "meta-llama/Llama-3.2-3B-Instruct",
		AdapterDir:      "/runs/judge/adapter",
		Hyperparameters: json.RawMessage(`{"lora_rank":16,"target_modules":["q_proj","v_proj"]}`),
		TemplateHash:    TemplateHash, Split: Split{DataHash: "d", TrainExamples: 9, ValExamples: 1},
		Metrics: map[string]float64{"eval_loss": 0.5}, FinishedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Serve: "vllm serve ...", Use: "distill rollout ...",
		ChatTemplate: &ChatTemplates{Trained: "t", Served: "t", ServedFrom: "/m/base.gguf", Status: ChatTemplatesMatch},
		LlamaCpp:     &LlamaCpp{BaseGGUF: "/m/base.gguf", AdapterGGUF: "adapter.gguf", Convert: "python3 convert_lora_to_gguf.py ...", Serve: "python3 -m llama_cpp.server ..."},
		TrainingData: &TrainingData{Train: "../sft/train.parquet", Val: "../sft/val.parquet"},
	}
	if err := WriteHandback(dir, want); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, HandbackFile))
	if err != nil {
		t.Fatal(err)
	}
	// The hyper-parameters are indented with the rest, as a reader sees them.
	if !strings.Contains(string(b), "\n  \"hyperparameters\": {\n    \"lora_rank\": 16,\n") {
		t.Errorf("hand-back file:\n%s\nwant the hyper-parameters indented in it", b)
	}
	got, err := ReadHandback(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Compare the hyper-parameters as JSON values: the file holds them
	// indented.
	var wantHP, gotHP any
	if err := json.Unmarshal(want.Hyperparameters, &wantHP); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got.Hyperparameters, &gotHP); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantHP, gotHP); diff != "" {
		t.Errorf("hyper-parameters differ (-want +got):\n%s", diff)
	}
	want.Hyperparameters, got.Hyperparameters = nil, nil
	// The commands are made again from what the hand-back names.
	want.Serve = "vllm serve meta-llama/Llama-3.2-3B-Instruct --enable-lora --lora-modules s2g-judge=/runs/judge/adapter"
	want.Use = "distill rollout --judge llm --judge-model s2g-judge --judge-base-url http://localhost:8000/v1"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hand-back differs (-want +got):\n%s", diff)
	}
}

// TestHandbackMoves: a hand-back whose result lies in its directory keeps
// it as a relative path, so that the directory can be moved or copied.
func TestHandbackMoves(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "judge")
	for _, h := range []Handback{
		{ModelFile: filepath.Join(dir, LinearModelFile)},
		{AdapterDir: filepath.Join(dir, "adapter"), BaseModel: "base"},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteHandback(dir, h); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, HandbackFile))
		if strings.Contains(string(b), root) {
			t.Errorf("model.json holds an absolute path:\n%s", b)
		}
		moved := filepath.Join(root, "elsewhere", "copy")
		if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, moved); err != nil {
			t.Fatal(err)
		}
		got, err := ReadHandback(moved)
		if err != nil {
			t.Fatal(err)
		}
		path := got.ModelFile + got.AdapterDir
		if !strings.HasPrefix(path, moved+string(filepath.Separator)) || !strings.Contains(got.Use+got.Serve, path) {
			t.Errorf("moved hand-back names %q (use %q, serve %q), want a path in %s", path, got.Use, got.Serve, moved)
		}
		os.RemoveAll(moved)
	}
}

func TestReadHandbackErrors(t *testing.T) {
	if _, err := ReadHandback(t.TempDir()); !os.IsNotExist(err) {
		t.Errorf("no hand-back: got %v, want a not-exist error", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, HandbackFile), []byte("{"), 0o644)
	if _, err := ReadHandback(dir); err == nil || !strings.Contains(err.Error(), HandbackFile) {
		t.Errorf("broken hand-back: got %v, want an error naming the file", err)
	}
}
