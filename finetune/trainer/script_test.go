package trainer

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stubTemplate is the chat template of the stand-in tokenizer
// (testdata/pystub/transformers.py).
const stubTemplate = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"

// TestTrainSFTScript runs train_sft.py against stand-ins for torch,
// datasets, peft, transformers and trl (testdata/pystub), which record
// what the script asks of them: the settings, the LoRA configuration, the
// tokenizer, the data as the trainer sees it. It needs python3, and is
// skipped without. (make e2e-train runs it against the real libraries.)
func TestTrainSFTScript(t *testing.T) {
	python, stubs := stubbedPython(t)
	// The stand-in tokenizer counts 2 tokens per message and one per word:
	// short is 10 tokens, long 13.
	short := `{"messages": [{"role": "system", "content": "judge"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "{\"sufficient\": true}"}]}` + "\n"
	long := `{"messages": [{"role": "system", "content": "judge"}, {"role": "user", "content": "q with three words"}, {"role": "assistant", "content": "{\"sufficient\": true}"}]}` + "\n"
	gguf := filepath.Join(t.TempDir(), "SmolLM2.Q4_1.gguf")
	if err := os.WriteFile(gguf, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := map[string]any{
		"output_dir": "adapter", "num_train_epochs": 3.0, "per_device_train_batch_size": 2.0,
		"per_device_eval_batch_size": 2.0, "gradient_accumulation_steps": 8.0, "learning_rate": 0.0001,
		"seed": 42.0, "logging_steps": 10.0, "save_strategy": "epoch", "report_to": "none",
		"gradient_checkpointing": false, // no GPU (the stand-in torch has none)
	}
	// auto trains in bf16 on a CPU that computes it natively.
	autoBF16 := cpuHasAMX(t)
	autoDType := map[bool]string{true: "torch.bfloat16", false: "torch.float32"}[autoBF16]
	autoArgs := map[string]any{"bf16": autoBF16}
	if autoBF16 {
		autoArgs["use_cpu"] = true
	}
	for _, tc := range []struct {
		name         string
		env          []string
		model        string // "" for the job's
		precision    string
		maxSteps     int
		maxEval      int
		train, val   string
		args         map[string]any
		example      map[string]any
		model_       map[string]any
		tokenizer    map[string]any
		loss         string
		steps        int
		trainN       int
		evalN        int
		evalLoss     float64
		trainDropped float64
	}{
		{name: "recent trl", precision: "bf16", train: short, val: short,
			args: map[string]any{"max_length": 2048.0, "eval_strategy": "epoch", "completion_only_loss": true, "bf16": true, "use_cpu": true},
			example: map[string]any{
				"prompt":     []any{map[string]any{"role": "system", "content": "judge"}, map[string]any{"role": "user", "content": "q"}},
				"completion": []any{map[string]any{"role": "assistant", "content": `{"sufficient": true}`}},
			},
			model_:    map[string]any{"name": "meta-llama/Llama-3.2-3B-Instruct", "gguf_file": nil, "dtype": "torch.bfloat16"},
			tokenizer: map[string]any{"name": "meta-llama/Llama-3.2-3B-Instruct"},
			steps:     4, trainN: 1, evalN: 1, evalLoss: 0.75},
		{name: "old trl", env: []string{"STUB_OLD_TRL=1"}, precision: "fp32", train: short, val: short,
			args:      map[string]any{"max_seq_length": 2048.0, "evaluation_strategy": "epoch", "bf16": false},
			model_:    map[string]any{"name": "meta-llama/Llama-3.2-3B-Instruct", "gguf_file": nil, "dtype": "torch.float32"},
			tokenizer: map[string]any{"name": "meta-llama/Llama-3.2-3B-Instruct"},
			steps:     4, trainN: 1, evalN: 1, evalLoss: 0.75},
		{name: "budget run on a GGUF file", model: gguf, precision: "auto", maxSteps: 3, maxEval: 1,
			train: short + long + short, val: short + short + long,
			args:      merged(autoArgs, map[string]any{"max_length": 12.0, "max_steps": 3.0, "save_strategy": "no", "completion_only_loss": true}),
			model_:    map[string]any{"name": filepath.Dir(gguf), "gguf_file": filepath.Base(gguf), "dtype": autoDType},
			tokenizer: map[string]any{"name": filepath.Dir(gguf), "gguf_file": filepath.Base(gguf)},
			// The long examples are left out; one validation example is
			// evaluated once at the end.
			steps: 3, trainN: 2, evalN: 1, evalLoss: 0.7, trainDropped: 1},
		{name: "full-text loss", precision: "fp32", maxSteps: 3, loss: "full",
			train: short + long + short, val: short,
			args:      map[string]any{"max_length": 12.0, "max_steps": 3.0, "save_strategy": "no", "completion_only_loss": false, "bf16": false},
			model_:    map[string]any{"name": "meta-llama/Llama-3.2-3B-Instruct", "gguf_file": nil, "dtype": "torch.float32"},
			tokenizer: map[string]any{"name": "meta-llama/Llama-3.2-3B-Instruct"},
			// The long example is kept, to be cut at max_length by TRL,
			// and counted.
			steps: 3, trainN: 3, evalN: 1, evalLoss: 0.7, trainDropped: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(t, true)
			if tc.model != "" {
				job.BaseModel = tc.model
			}
			job.Hyper.MaxSteps = tc.maxSteps
			job.Hyper.Precision = tc.precision
			job.Hyper.Loss = tc.loss
			if tc.maxSteps > 0 {
				job.Hyper.MaxLength = 12
			}
			for p, content := range map[string]string{job.Files.TrainParquet: tc.train, job.Files.ValParquet: tc.val} {
				if err := os.WriteFile(job.Path(p), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			plan, err := Prepare(job, Options{Python: python, MaxEvalExamples: tc.maxEval})
			if err != nil {
				t.Fatal(err)
			}
			out, err := runStubbed(t, plan, job.Dir, stubs, tc.env...)
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}

			l, err := scanLog(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if !l.Done || l.Step != tc.steps || l.TotalSteps != tc.steps || l.Loss != 2.0/float64(tc.steps) ||
				l.Metrics["train_loss"] != 1.04 || l.Metrics["eval_loss"] != tc.evalLoss ||
				l.Metrics["train_examples_used"] != float64(tc.trainN) || l.Metrics["train_examples_over_max_length"] != tc.trainDropped {
				t.Errorf("progress from the output %+v; output:\n%s", l.Progress, out)
			}
			eta := false
			for _, line := range strings.Split(out, "\n") {
				if p, ok := ParseProgress(line); ok {
					_, has := p.Metrics["eta_s"]
					eta = eta || has
				}
			}
			if !eta {
				t.Errorf("no ETA in the progress lines:\n%s", out)
			}
			if _, ok := l.Metrics["grad_norm"]; ok {
				t.Errorf("a NaN reached the metrics: %v", l.Metrics)
			}
			if err := CheckAdapter(job.Path(plan.OutputDir)); err != nil {
				t.Error(err)
			}
			if got, ok, err := TrainedChatTemplate(job.Path(plan.OutputDir)); err != nil || !ok || got != stubTemplate {
				t.Errorf("chat template saved with the adapter: %q, %v, %v; want the tokenizer's", got, ok, err)
			}

			var rec struct {
				Class     string         `json:"class"`
				Model     map[string]any `json:"model"`
				Args      map[string]any `json:"args"`
				LoRA      map[string]any `json:"lora"`
				Example   map[string]any `json:"train_example"`
				TrainN    int            `json:"train_examples"`
				EvalN     int            `json:"eval_examples"`
				Tokenizer map[string]any `json:"tokenizer"`
			}
			b, err := os.ReadFile(filepath.Join(job.Dir, "stub_trainer.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			wantArgs := map[string]any{}
			for k, v := range base {
				wantArgs[k] = v
			}
			for k, v := range tc.args {
				wantArgs[k] = v
			}
			// Without a GPU, the completion's loss is train_sft.py's own
			// (an old TRL without completion_only_loss keeps its trainer).
			wantClass := "CompletionLossTrainer"
			if tc.args["completion_only_loss"] != true {
				wantClass = "SFTTrainer"
			}
			if rec.Class != wantClass {
				t.Errorf("trainer class %s, want %s", rec.Class, wantClass)
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
			if diff := cmp.Diff(tc.model_, rec.Model); diff != "" {
				t.Errorf("model (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.tokenizer, rec.Tokenizer); diff != "" {
				t.Errorf("tokenizer (-want +got):\n%s", diff)
			}
			if tc.example != nil {
				if diff := cmp.Diff(tc.example, rec.Example); diff != "" {
					t.Errorf("training example (-want +got):\n%s", diff)
				}
			} else if _, ok := rec.Example["messages"]; !ok && tc.maxSteps == 0 {
				t.Errorf("training example %v: want the messages as they are", rec.Example)
			}
			if rec.TrainN != tc.trainN || rec.EvalN != tc.evalN {
				t.Errorf("%d training and %d validation examples, want %d and %d", rec.TrainN, rec.EvalN, tc.trainN, tc.evalN)
			}
		})
	}
}

// TestTrainSFTScriptRefuses checks that train_sft.py stops, saying why,
// when the tokenizer has no chat template or no example fits.
func TestTrainSFTScriptRefuses(t *testing.T) {
	python, stubs := stubbedPython(t)
	example := `{"messages": [{"role": "system", "content": "judge"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "{}"}]}` + "\n"
	for _, tc := range []struct {
		name      string
		env       []string
		maxLength int
		want      string
	}{
		{"no chat template", []string{"STUB_NO_TEMPLATE=1"}, 2048, "has no chat template"},
		{"nothing fits", nil, 5, "no training example fits in max_length 5 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(t, false)
			job.Hyper.MaxLength = tc.maxLength
			if err := os.WriteFile(job.Path(job.Files.TrainParquet), []byte(example), 0o644); err != nil {
				t.Fatal(err)
			}
			plan, err := Prepare(job, Options{Python: python})
			if err != nil {
				t.Fatal(err)
			}
			out, err := runStubbed(t, plan, job.Dir, stubs, tc.env...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("got %v and output:\n%s\nwant a failure saying %q", err, out, tc.want)
			}
			if _, err := os.Stat(job.Path(plan.OutputDir)); err == nil {
				t.Error("an adapter directory was left")
			}
		})
	}
}

// TestTrainSFTScriptWithoutLibraries: without torch and the trainers,
// train_sft.py says in one line what is missing and how to get it, and
// the job's failure says that line (Log.Explain).
func TestTrainSFTScriptWithoutLibraries(t *testing.T) {
	python, _ := stubbedPython(t)
	job := testJob(t, false)
	plan, err := Prepare(job, Options{Python: python})
	if err != nil {
		t.Fatal(err)
	}
	// -S: no site-packages, so none of the libraries is found.
	cmd := exec.Command(plan.Command[0], append([]string{"-S"}, plan.Command[1:]...)...)
	cmd.Dir = job.Dir
	out, err := cmd.CombinedOutput()
	want := "train_sft: error: missing Python packages: torch, transformers, peft, trl, datasets"
	if err == nil || !strings.HasPrefix(string(out), want) || strings.Count(string(out), "\n") != 1 ||
		!strings.Contains(string(out), "scripts/local-models install-train") {
		t.Fatalf("got %v and output:\n%s\nwant one line starting %q", err, out, want)
	}
	l, err := scanLog(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if msg := l.Explain("the trainer exited with status 1"); !strings.HasPrefix(msg, "the trainer exited with status 1: missing Python packages: torch") {
		t.Errorf("explanation %q", msg)
	}
}

// stubbedPython returns python3 and the directory of the stand-in
// modules; it skips the test without python3.
func stubbedPython(t *testing.T) (python, stubs string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if stubs, err = filepath.Abs(filepath.Join("testdata", "pystub")); err != nil {
		t.Fatal(err)
	}
	return python, stubs
}

// runStubbed runs a plan's command in dir against the stand-in modules.
func runStubbed(t *testing.T, plan Plan, dir, stubs string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(plan.Command[0], plan.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+stubs, "PYTHONDONTWRITEBYTECODE=1"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// merged returns the settings of a, then b's.
func merged(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// cpuHasAMX says whether this machine's CPU has AMX (amx_bf16 among the
// flags of /proc/cpuinfo): where train_sft.py's precision auto picks bf16
// without a GPU.
func cpuHasAMX(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, flags, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			f := strings.Fields(flags)
			return slices.Contains(f, "amx_bf16")
		}
	}
	return false
}

// TestCPUHasAMX: precision auto trains in bf16 on a CPU only with AMX;
// AVX512-BF16 alone multiplies bfloat16 more slowly than float32.
func TestCPUHasAMX(t *testing.T) {
	python, _ := stubbedPython(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cpuinfo, want string
	}{
		{"amx", "processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n", "True"},
		{"avx512-bf16 only", "processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 avx512_fp16\n", "False"},
		{"no flags line", "processor\t: 0\n", "False"},
		{"missing file", "", "False"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.cpuinfo != "" {
				if err := os.WriteFile(path, []byte(tc.cpuinfo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(python, "-c", "import sys, train_sft; print(train_sft.cpu_has_amx(sys.argv[1]))", path)
			cmd.Env = append(os.Environ(), "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != tc.want {
				t.Fatalf("got %v, %q; want %s", err, out, tc.want)
			}
		})
	}
}
