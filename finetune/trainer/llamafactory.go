package trainer

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/finetune"
)

// setting is one key of a trainer configuration, with a scalar value
// (string, int, float64 or bool).
type setting struct {
	key   string
	value any
}

// section is a titled group of settings.
type section struct {
	title    string
	settings []setting
}

// llamaFactoryYAML returns LLaMA-Factory's training configuration for the
// job: LoRA SFT on the ShareGPT data that dataset_info.json names, the
// adapter saved to AdapterDir. LLaMA-Factory masks the prompt by default
// (train_on_prompt false), so the loss covers the teacher's verdict only;
// finetune.LossFull sets train_on_prompt.
// Its configuration cannot choose the precision where it runs, so
// PrecisionAuto is bf16, the method's (on a CPU, give PrecisionFP32).
func llamaFactoryYAML(job finetune.Job, opts Options) []byte {
	h := job.Hyper
	target := strings.Join(h.TargetModules, ",")
	if target == "" {
		target = "all"
	}
	dataset := []setting{{"dataset", finetune.TrainDataset}}
	train := []setting{
		{"per_device_train_batch_size", h.BatchSize},
		{"gradient_accumulation_steps", h.GradAccum},
		{"learning_rate", h.LearningRate},
		{"num_train_epochs", float64(h.Epochs)},
		{"seed", h.Seed},
		{"bf16", h.Precision != finetune.PrecisionFP32},
	}
	save := "epoch"
	if h.MaxSteps > 0 {
		// A budget run: the adapter is saved, and evaluated, once at the
		// end (at "epoch" LLaMA-Factory would evaluate twice then).
		train = append(train, setting{"max_steps", h.MaxSteps})
		save = "no"
	}
	if job.Files.ValShareGPT != "" {
		dataset = append(dataset, setting{"eval_dataset", finetune.ValDataset})
		train = append(train, setting{"per_device_eval_batch_size", h.BatchSize})
		if h.MaxSteps > 0 {
			train = append(train, setting{"do_eval", true})
		} else {
			train = append(train, setting{"eval_strategy", "epoch"})
		}
	}
	dataset = append(dataset,
		setting{"dataset_dir", filepath.Dir(job.Files.DatasetInfo)},
		setting{"template", opts.Template},
		setting{"cutoff_len", h.MaxLength},
		setting{"overwrite_cache", true},
	)
	if h.Loss == finetune.LossFull {
		dataset = append(dataset, setting{"train_on_prompt", true})
	}
	return emitYAML([]section{
		{"model", []setting{{"model_name_or_path", job.BaseModel}}},
		{"method", []setting{
			{"stage", "sft"},
			{"do_train", true},
			{"finetuning_type", "lora"},
			{"lora_rank", h.LoRARank},
			{"lora_alpha", h.LoRAAlpha},
			{"lora_dropout", h.LoRADropout},
			{"lora_target", target},
		}},
		{"dataset", dataset},
		{"output", []setting{
			{"output_dir", AdapterDir},
			{"logging_steps", opts.LoggingSteps},
			{"save_strategy", save},
			{"plot_loss", false},
			{"overwrite_output_dir", true},
			{"report_to", "none"},
		}},
		{"train", train},
	})
}

// emitYAML writes sections of scalar settings as a flat YAML mapping, in
// the order given, each section under a "### title" comment.
func emitYAML(sections []section) []byte {
	var b strings.Builder
	b.WriteString("# Written by distill from the job's hyper-parameters.\n")
	for _, s := range sections {
		b.WriteString("\n### " + s.title + "\n")
		for _, kv := range s.settings {
			b.WriteString(kv.key + ": " + yamlScalar(kv.value) + "\n")
		}
	}
	return []byte(b.String())
}

// yamlScalar writes v so that YAML 1.1 readers (PyYAML, which
// LLaMA-Factory uses) and YAML 1.2 readers read back the same value and
// type: strings that could be read as anything else are quoted, and floats
// always have a decimal point (PyYAML reads 1e-05 as a string).
func yamlScalar(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		mant, exp, hasExp := strings.Cut(s, "e")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		if hasExp {
			return mant + "e" + exp
		}
		return mant
	case string:
		if plainYAML(v) {
			return v
		}
		return strconv.Quote(v)
	}
	panic("trainer: not a YAML scalar")
}

// plainYAML reports whether s may be written unquoted: it starts with a
// letter, '_' or '/', holds no character that YAML gives a meaning, and is
// none of YAML 1.1's words for booleans and null.
func plainYAML(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == '/':
		case i > 0 && (r >= '0' && r <= '9' || r == '.' || r == '-' || r == ','):
		default:
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}
