package trainer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/internal/testkit"
)

// testJob is a job with the method's settings and its exported files.
func testJob(t *testing.T, val bool) finetune.Job {
	t.Helper()
	job := finetune.Job{
		Dir:       t.TempDir(),
		BaseModel: "meta-llama/Llama-3.2-3B-Instruct",
		Name:      "s2g-judge",
		Files: finetune.Files{
			TrainShareGPT: "train_sharegpt.json", DatasetInfo: "dataset_info.json",
			TrainParquet: "train.parquet",
		},
		Hyper: finetune.DefaultHyperparameters(),
	}
	if val {
		job.Files.ValShareGPT, job.Files.ValParquet = "val_sharegpt.json", "val.parquet"
	}
	for _, p := range []string{job.Files.TrainShareGPT, job.Files.ValShareGPT, job.Files.DatasetInfo, job.Files.TrainParquet, job.Files.ValParquet} {
		if p != "" {
			if err := os.WriteFile(job.Path(p), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return job
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPrepareLLaMAFactory(t *testing.T) {
	for _, val := range []bool{true, false} {
		name := map[bool]string{true: "val", false: "noval"}[val]
		t.Run(name, func(t *testing.T) {
			job := testJob(t, val)
			plan, err := Prepare(job, Options{Kind: LLaMAFactory})
			if err != nil {
				t.Fatal(err)
			}
			want := Plan{
				Kind: LLaMAFactory, Config: "train.yaml",
				Command:   []string{"llamafactory-cli", "train", "train.yaml"},
				Env:       []string{"PYTHONUNBUFFERED=1", "DISTILL_TRAIN_CONFIG=train.yaml", "DISTILL_OUTPUT_DIR=adapter"},
				OutputDir: "adapter",
			}
			if diff := cmp.Diff(want, plan); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			got := read(t, filepath.Join(job.Dir, LLaMAFactoryConfigFile))
			testkit.Golden(t, "llamafactory_"+name+".yaml", got)

			// What a YAML reader makes of it.
			var m map[string]any
			if err := yaml.Unmarshal([]byte(got), &m); err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]any{
				"lora_rank": 16, "lora_alpha": 32, "lora_dropout": 0.05, "learning_rate": 0.0001,
				"num_train_epochs": 3.0, "cutoff_len": 2048, "dataset": finetune.TrainDataset,
				"save_strategy": "epoch", "bf16": true, "plot_loss": false, "dataset_dir": ".",
				"lora_target": "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
			} {
				if m[k] != v {
					t.Errorf("%s: got %#v, want %#v", k, m[k], v)
				}
			}
			if got, ok := m["eval_dataset"]; val != ok || (ok && got != finetune.ValDataset) {
				t.Errorf("eval_dataset %v (set: %v), want set: %v", got, ok, val)
			}
		})
	}
	// A budget run: max_steps, one evaluation and one save, at the end.
	job := testJob(t, true)
	job.Hyper.MaxSteps = 20
	if _, err := Prepare(job, Options{Kind: LLaMAFactory}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(read(t, filepath.Join(job.Dir, LLaMAFactoryConfigFile))), &m); err != nil {
		t.Fatal(err)
	}
	if m["max_steps"] != 20 || m["do_eval"] != true || m["save_strategy"] != "no" || m["eval_strategy"] != nil {
		t.Errorf("budget run settings %v", m)
	}
	if m["train_on_prompt"] != nil {
		t.Errorf("train_on_prompt %v with the completion loss", m["train_on_prompt"])
	}
	// The full-text loss: the prompt is trained on too.
	job.Hyper.Loss = finetune.LossFull
	if _, err := Prepare(job, Options{Kind: LLaMAFactory}); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(read(t, filepath.Join(job.Dir, LLaMAFactoryConfigFile))), &m); err != nil {
		t.Fatal(err)
	}
	if m["train_on_prompt"] != true {
		t.Errorf("train_on_prompt %v with the full loss, want true", m["train_on_prompt"])
	}
}

func TestPrepareTRL(t *testing.T) {
	job := testJob(t, true)
	plan, err := Prepare(job, Options{Python: "/opt/venv/bin/python", Env: []string{"HF_HOME=/scratch/hf"}})
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{
		Kind: TRL, Config: "train_config.json",
		Command: []string{"/opt/venv/bin/python", "train_sft.py", "train_config.json"},
		Env: []string{"PYTHONUNBUFFERED=1", "DISTILL_TRAIN_CONFIG=train_config.json", "DISTILL_OUTPUT_DIR=adapter",
			"HF_HOME=/scratch/hf"},
		OutputDir: "adapter",
	}
	if diff := cmp.Diff(want, plan); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	testkit.Golden(t, "trl_config.json", read(t, filepath.Join(job.Dir, TRLConfigFile)))
	if got := read(t, filepath.Join(job.Dir, TRLScriptFile)); got != string(trainSFT) || !strings.Contains(got, "SFTTrainer") {
		t.Errorf("%s is not the embedded script", TRLScriptFile)
	}
	testkit.Golden(t, "train.sh", plan.Script("# header"))

	// The full-text loss reaches the script's configuration; the default
	// leaves the configuration as it was.
	if strings.Contains(read(t, filepath.Join(job.Dir, TRLConfigFile)), `"loss"`) {
		t.Errorf("the default loss is written into %s", TRLConfigFile)
	}
	job.Hyper.Loss = finetune.LossFull
	if _, err := Prepare(job, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(job.Dir, TRLConfigFile)); !strings.Contains(got, `"loss": "full"`) {
		t.Errorf("%s lacks the full loss:\n%s", TRLConfigFile, got)
	}
}

func TestPrepareCommand(t *testing.T) {
	job := testJob(t, false)
	plan, err := Prepare(job, Options{Command: []string{"my-trainer", "--fast"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"my-trainer", "--fast"}, plan.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(job.Dir, TRLConfigFile)); err != nil {
		t.Errorf("the configuration is written for an overriding command too: %v", err)
	}
}

func TestPrepareErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*finetune.Job, *Options)
		want string
	}{
		{"no dir", func(j *finetune.Job, _ *Options) { j.Dir = "" }, "no directory"},
		{"missing dir", func(j *finetune.Job, _ *Options) { j.Dir = filepath.Join(j.Dir, "nope") }, "job directory"},
		{"no model", func(j *finetune.Job, _ *Options) { j.BaseModel = "" }, "base model"},
		{"rank", func(j *finetune.Job, _ *Options) { j.Hyper.LoRARank = 0 }, "lora_rank"},
		{"dropout", func(j *finetune.Job, _ *Options) { j.Hyper.LoRADropout = 1 }, "lora_dropout"},
		{"epochs", func(j *finetune.Job, _ *Options) { j.Hyper.Epochs = 0 }, "epochs"},
		{"module", func(j *finetune.Job, _ *Options) { j.Hyper.TargetModules = []string{"q_proj: x"} }, "target module"},
		{"no parquet", func(j *finetune.Job, _ *Options) { j.Files.TrainParquet = "" }, "train_parquet"},
		{"missing val", func(j *finetune.Job, _ *Options) { j.Files.ValParquet = "gone.parquet" }, "gone.parquet"},
		{"no dataset_info", func(j *finetune.Job, o *Options) { o.Kind = LLaMAFactory; j.Files.DatasetInfo = "" }, "dataset_info"},
		{"kind", func(_ *finetune.Job, o *Options) { o.Kind = "axolotl" }, "axolotl"},
		{"env", func(_ *finetune.Job, o *Options) { o.Env = []string{"NOEQUALS"} }, "KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, opts := testJob(t, true), Options{}
			tc.edit(&job, &opts)
			_, err := Prepare(job, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestYAMLScalar(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{true, "true"}, {16, "16"}, {0.05, "0.05"}, {1e-4, "0.0001"}, {5e-5, "5.0e-05"}, {3.0, "3.0"},
		{2e20, "2.0e+20"}, {"llama3", "llama3"}, {"meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B-Instruct"},
		{"no", `"no"`}, {"On", `"On"`}, {".", `"."`}, {"1e-5", `"1e-5"`}, {"a: b", `"a: b"`},
		{"", `""`}, {"it's", `"it's"`}, {"#x", `"#x"`}, {"a\nb", `"a\nb"`},
	} {
		if got := yamlScalar(tc.in); got != tc.want {
			t.Errorf("yamlScalar(%#v): got %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestYAMLReadsBack checks that awkward values come back from a YAML
// reader as they went in.
func TestYAMLReadsBack(t *testing.T) {
	values := []string{"no", "yes", "null", "~", "1_000", "0x1F", "3:20", "1e-5", "-x", "a #b", "a: b", `q"uote`,
		"it's", "tab\there", "ünïcödé", "[x]", "{x}", "*x", "&x", "!x", "|x", ">x", "%x", "@x", "`x", " lead", "trail "}
	var settings []setting
	for i, v := range values {
		settings = append(settings, setting{"k" + string(rune('a'+i)), v})
	}
	var m map[string]any
	if err := yaml.Unmarshal(emitYAML([]section{{"s", settings}}), &m); err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		if m[s.key] != s.value {
			t.Errorf("%q came back as %#v", s.value, m[s.key])
		}
	}
}

func TestQuote(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	words := []string{"plain", "", "two words", "it's", `"dq"`, "$HOME", "`x`", "a\\b", "new\nline", "*", "~", "a=b"}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = Quote(w)
	}
	out, err := exec.Command("sh", "-c", `for w in `+strings.Join(quoted, " ")+`; do printf '%s\0' "$w"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if diff := cmp.Diff(words, got); diff != "" {
		t.Errorf("words through sh (-want +got):\n%s", diff)
	}
}

func TestReadExit(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadExit(dir); ok || err != nil {
		t.Errorf("no exit file: ok %v, err %v; want neither", ok, err)
	}
	os.WriteFile(filepath.Join(dir, ExitFile), []byte("137\n"), 0o644)
	if code, ok, err := ReadExit(dir); code != 137 || !ok || err != nil {
		t.Errorf("got %d, %v, %v; want 137, true, nil", code, ok, err)
	}
	os.WriteFile(filepath.Join(dir, ExitFile), []byte("x\n"), 0o644)
	if _, _, err := ReadExit(dir); err == nil {
		t.Error("a garbled exit file: no error")
	}
}

// TestScript runs a plan's script with a command that fails and checks
// that the exit status is recorded.
func TestScript(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	plan := Plan{Command: []string{"sh", "-c", `echo "$DISTILL_OUTPUT_DIR it's"; exit 3`}, Env: []string{"DISTILL_OUTPUT_DIR=out dir"}}
	os.WriteFile(filepath.Join(dir, ExitFile), []byte("0\n"), 0o644) // from an earlier run
	cmd := exec.Command("sh", "-c", plan.Script())
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("script: %v, want exit status 3", err)
	}
	if want := "out dir it's\ndistill: trainer exited with status 3\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if code, ok, err := ReadExit(dir); code != 3 || !ok || err != nil {
		t.Errorf("exit file: %d, %v, %v; want 3", code, ok, err)
	}
}
