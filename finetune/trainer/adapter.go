package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/judge"
)

// The files of a PEFT LoRA adapter.
const (
	AdapterConfigFile = "adapter_config.json"
	// The weights, in either format (safetensors since PEFT 0.6).
	AdapterWeightsFile    = "adapter_model.safetensors"
	AdapterWeightsBinFile = "adapter_model.bin"
)

// CheckAdapter checks that dir holds a usable LoRA adapter, as PEFT saves
// it: adapter_config.json, valid JSON giving the rank r and lora_alpha, and
// non-empty weights (adapter_model.safetensors or adapter_model.bin).
func CheckAdapter(dir string) error {
	cfgPath := filepath.Join(dir, AdapterConfigFile)
	b, err := os.ReadFile(cfgPath)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("adapter %s: no %s", dir, AdapterConfigFile)
	}
	if err != nil {
		return fmt.Errorf("adapter: %w", err)
	}
	var cfg struct {
		R         *float64 `json:"r"`
		LoRAAlpha *float64 `json:"lora_alpha"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("adapter %s: %w", cfgPath, err)
	}
	if cfg.R == nil || *cfg.R <= 0 || cfg.LoRAAlpha == nil {
		return fmt.Errorf("adapter %s: want a positive r and a lora_alpha, as PEFT writes them", cfgPath)
	}
	bad := ""
	for _, name := range []string{AdapterWeightsFile, AdapterWeightsBinFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("adapter: %w", err)
		}
		if fi.Mode().IsRegular() && fi.Size() > 0 {
			return nil
		}
		if bad == "" {
			bad = name
		}
	}
	if bad != "" {
		return fmt.Errorf("adapter %s: %s is empty or not a file", dir, bad)
	}
	return fmt.Errorf("adapter %s: no weights (%s or %s)", dir, AdapterWeightsFile, AdapterWeightsBinFile)
}

// DataOutputDir is the key of finetune.State.Data under which the
// backends that run a trainer record Plan.OutputDir.
const DataOutputDir = "output_dir"

// OutputDir returns the output directory recorded in a trainer job's
// state (DataOutputDir), or AdapterDir when it names none.
func OutputDir(st finetune.State) string {
	if d := st.Data[DataOutputDir]; d != "" {
		return d
	}
	return AdapterDir
}

// Result checks the adapter that a trainer which exited 0 left in
// outputDir (relative to the job directory) and returns the job's result,
// with the log's metrics and the comparison of its chat template with the
// one its server will apply (CheckChatTemplates with job.BaseGGUF). A
// mismatch is recorded in the result, not returned: the training itself
// succeeded; the hand-back refuses the judge.
func Result(job finetune.Job, outputDir string, l Log) (*finetune.Result, error) {
	dir := job.Path(outputDir)
	if err := CheckAdapter(dir); err != nil {
		return nil, err
	}
	ct, err := CheckChatTemplates(dir, job.BaseGGUF)
	var mismatch *ChatTemplateMismatch
	if err != nil && !errors.As(err, &mismatch) {
		ct.Status, ct.Note = judge.ChatTemplatesUnchecked, err.Error()
	}
	return &finetune.Result{AdapterDir: outputDir, Metrics: l.Metrics, ChatTemplate: &ct}, nil
}
