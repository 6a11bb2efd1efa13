package trainer

import (
	_ "embed"
	"encoding/json"

	"github.com/distill-rag/distill/finetune"
)

// trainSFT is the TRL trainer, copied into each job directory.
//
//go:embed train_sft.py
var trainSFT []byte

// trlSettings is train_sft.py's configuration: the data, where the adapter
// goes, and the hyper-parameters (finetune.Hyperparameters' JSON names).
type trlSettings struct {
	Model     string `json:"model"`
	TrainFile string `json:"train_file"`
	ValFile   string `json:"val_file"`
	OutputDir string `json:"output_dir"`
	finetune.Hyperparameters
	LoggingSteps    int `json:"logging_steps"`
	MaxEvalExamples int `json:"max_eval_examples"`
}

// trlConfig returns train_sft.py's configuration for the job.
func trlConfig(job finetune.Job, opts Options) ([]byte, error) {
	h := job.Hyper
	if h.TargetModules == nil {
		h.TargetModules = []string{} // PEFT's defaults for the model
	}
	b, err := json.MarshalIndent(trlSettings{
		Model:           job.BaseModel,
		TrainFile:       job.Files.TrainParquet,
		ValFile:         job.Files.ValParquet,
		OutputDir:       AdapterDir,
		Hyperparameters: h,
		LoggingSteps:    opts.LoggingSteps,
		MaxEvalExamples: opts.MaxEvalExamples,
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
