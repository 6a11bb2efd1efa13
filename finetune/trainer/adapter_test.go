package trainer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distill-rag/distill/finetune"
)

func TestCheckAdapter(t *testing.T) {
	const config = `{"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["q_proj"]}`
	for _, tc := range []struct {
		name  string
		files map[string]string // "" content: a directory
		want  string            // in the error; "" for none
	}{
		{"safetensors", map[string]string{AdapterConfigFile: config, AdapterWeightsFile: "w"}, ""},
		{"bin", map[string]string{AdapterConfigFile: config, AdapterWeightsBinFile: "w"}, ""},
		{"empty safetensors, good bin", map[string]string{AdapterConfigFile: config, AdapterWeightsFile: "", AdapterWeightsBinFile: "w"}, ""},
		{"no config", map[string]string{AdapterWeightsFile: "w"}, "no adapter_config.json"},
		{"bad json", map[string]string{AdapterConfigFile: `{"r": 16,`, AdapterWeightsFile: "w"}, "adapter_config.json"},
		{"no rank", map[string]string{AdapterConfigFile: `{"lora_alpha": 32}`, AdapterWeightsFile: "w"}, "positive r"},
		{"zero rank", map[string]string{AdapterConfigFile: `{"r": 0, "lora_alpha": 32}`, AdapterWeightsFile: "w"}, "positive r"},
		{"no alpha", map[string]string{AdapterConfigFile: `{"r": 8}`, AdapterWeightsFile: "w"}, "lora_alpha"},
		{"no weights", map[string]string{AdapterConfigFile: config}, "no weights"},
		{"empty weights", map[string]string{AdapterConfigFile: config, AdapterWeightsFile: ""}, "adapter_model.safetensors is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckAdapter(dir)
			if tc.want == "" {
				if err != nil {
					t.Errorf("got %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if err := CheckAdapter(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}

func TestResult(t *testing.T) {
	job := finetune.Job{Dir: t.TempDir()}
	if _, err := Result(job, AdapterDir, Log{}); err == nil {
		t.Error("no adapter: no error")
	}
	dir := job.Path(AdapterDir)
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(`{"r": 16, "lora_alpha": 32}`), 0o644)
	os.WriteFile(filepath.Join(dir, AdapterWeightsFile), []byte("w"), 0o644)
	r, err := Result(job, AdapterDir, Log{Progress: Progress{Metrics: map[string]float64{"train_loss": 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.AdapterDir != AdapterDir || r.Metrics["train_loss"] != 0.5 {
		t.Errorf("result %+v", r)
	}
}
