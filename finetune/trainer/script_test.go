package trainer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTrainSFTScript runs train_sft.py against stand-ins for torch,
// datasets, peft, transformers and trl (testdata/pystub), which record
// what the script asks of them: the settings, the LoRA configuration, the
// data as the trainer sees it. It needs python3, and is skipped without.
func TestTrainSFTScript(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	stubs, err := filepath.Abs(filepath.Join("testdata", "pystub"))
	if err != nil {
		t.Fatal(err)
	}
	example := `{"messages": [{"role": "system", "content": "judge"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "{\"sufficient\": true}"}]}` + "\n"
	for _, tc := range []struct {
		name    string
		old     bool // a TRL without completion_only_loss
		args    map[string]any
		example map[string]any
	}{
		{"recent trl", false,
			map[string]any{"max_length": 2048.0, "eval_strategy": "epoch", "completion_only_loss": true},
			map[string]any{
				"prompt":     []any{map[string]any{"role": "system", "content": "judge"}, map[string]any{"role": "user", "content": "q"}},
				"completion": []any{map[string]any{"role": "assistant", "content": `{"sufficient": true}`}},
			}},
		{"old trl", true,
			map[string]any{"max_seq_length": 2048.0, "evaluation_strategy": "epoch"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(t, true)
			for _, p := range []string{job.Files.TrainParquet, job.Files.ValParquet} {
				if err := os.WriteFile(job.Path(p), []byte(example), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			plan, err := Prepare(job, Options{Python: python})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(plan.Command[0], plan.Command[1:]...)
			cmd.Dir = job.Dir
			cmd.Env = append(os.Environ(), "PYTHONPATH="+stubs, "PYTHONDONTWRITEBYTECODE=1")
			if tc.old {
				cmd.Env = append(cmd.Env, "STUB_OLD_TRL=1")
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}

			l, err := scanLog(strings.NewReader(string(out)))
			if err != nil {
				t.Fatal(err)
			}
			if !l.Done || l.Step != 4 || l.TotalSteps != 4 || l.Loss != 0.5 ||
				l.Metrics["train_loss"] != 1.04 || l.Metrics["eval_loss"] != 0.75 {
				t.Errorf("progress from the output %+v; output:\n%s", l.Progress, out)
			}
			if _, ok := l.Metrics["grad_norm"]; ok {
				t.Errorf("a NaN reached the metrics: %v", l.Metrics)
			}
			if err := CheckAdapter(job.Path(plan.OutputDir)); err != nil {
				t.Error(err)
			}

			var rec struct {
				Model        map[string]any `json:"model"`
				Args         map[string]any `json:"args"`
				LoRA         map[string]any `json:"lora"`
				Example      map[string]any `json:"train_example"`
				EvalExamples int            `json:"eval_examples"`
			}
			b, err := os.ReadFile(filepath.Join(job.Dir, "stub_trainer.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			wantArgs := map[string]any{
				"output_dir": "adapter", "num_train_epochs": 3.0, "per_device_train_batch_size": 2.0,
				"per_device_eval_batch_size": 2.0, "gradient_accumulation_steps": 8.0, "learning_rate": 0.0001,
				"seed": 42.0, "bf16": true, "logging_steps": 10.0, "save_strategy": "epoch", "report_to": "none",
			}
			for k, v := range tc.args {
				wantArgs[k] = v
			}
			if diff := cmp.Diff(wantArgs, rec.Args); diff != "" {
				t.Errorf("SFTConfig (-want +got):\n%s", diff)
			}
			wantLoRA := map[string]any{
				"r": 16.0, "lora_alpha": 32.0, "lora_dropout": 0.05, "task_type": "CAUSAL_LM",
				"target_modules": []any{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
			}
			if diff := cmp.Diff(wantLoRA, rec.LoRA); diff != "" {
				t.Errorf("LoraConfig (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"name": job.BaseModel, "dtype": "torch.bfloat16"}, rec.Model); diff != "" {
				t.Errorf("model (-want +got):\n%s", diff)
			}
			if tc.example != nil {
				if diff := cmp.Diff(tc.example, rec.Example); diff != "" {
					t.Errorf("training example (-want +got):\n%s", diff)
				}
			} else if _, ok := rec.Example["messages"]; !ok {
				t.Errorf("training example %v: want the messages as they are", rec.Example)
			}
			if rec.EvalExamples != 1 {
				t.Errorf("%d validation examples, want 1", rec.EvalExamples)
			}
		})
	}
}
