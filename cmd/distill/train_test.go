package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/gguf"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/rollout/runner"
)

// offlineSFT runs rollout (with rolloutArgs), label and filter on the
// sample in the current directory and returns the filter's output
// directory. Tests that need no rollout of their own take the shared one,
// offlineChain(t).SFT.
func offlineSFT(t *testing.T, rolloutArgs ...string) string {
	t.Helper()
	args := append([]string{"--quiet", "rollout", "--policy", "fixed", "--out", "ro"}, rolloutArgs...)
	if r := runDistill(t, args...); r.code != 0 {
		t.Fatalf("rollout: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runDistill(t, "--quiet", "label", "--in", "ro", "--teacher", "retrieval-truth", "--out", "lab"); r.code != 0 {
		t.Fatalf("label: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runDistill(t, "--quiet", "filter", "--in", "lab", "--out", "sft"); r.code != 0 {
		t.Fatalf("filter: exit %d, stderr %q", r.code, r.stderr)
	}
	return "sft"
}

// TestTrainBuiltinChain: the whole offline chain, then the built-in
// backend trains a judge that rollout uses; the job can be re-attached to,
// shown and cancelled (a no-op once it has ended) from its directory.
func TestTrainBuiltinChain(t *testing.T) {
	t.Chdir(t.TempDir())
	sft := offlineChain(t).SFT
	r := runDistill(t, "--quiet", "train", "--in", sft, "--out", "exp", "--export-only")
	if r.code != 0 || !strings.Contains(r.stdout, "tokens p50") || !strings.Contains(r.stdout, "data hash") {
		t.Fatalf("export-only: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join("exp", finetune.JobFile)); !os.IsNotExist(err) {
		t.Errorf("export-only submitted a job: %v", err)
	}

	r = runDistill(t, "--quiet", "train", "--in", sft, "--out", "judge", "--backend", "builtin")
	if r.code != 0 || !strings.Contains(r.stdout, "succeeded") || !strings.Contains(r.stdout, "--judge builtin:") {
		t.Fatalf("train: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	h, err := judge.ReadHandback("judge")
	if err != nil || h.ModelFile == "" || h.Metrics["val_accuracy"] < 0.8 || h.TemplateHash == "" || h.DataHash == "" {
		t.Fatalf("model.json %+v, %v", h, err)
	}

	r = runDistill(t, "--quiet", "rollout", "--judge", "builtin:judge", "--out", "ro-trained", "--limit", "40")
	if r.code != 0 {
		t.Fatalf("rollout with the trained judge: exit %d, stderr %q", r.code, r.stderr)
	}
	rows := checkTrajectories(t, filepath.Join("ro-trained", runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:40]))
	if !strings.HasPrefix(rows[0].JudgeModel, judge.LinearPrefix) {
		t.Errorf("judge model %q, want the trained judge", rows[0].JudgeModel)
	}

	for _, args := range [][]string{
		{"train", "--out", "judge"},
		{"train", "status", "judge"},
		{"train", "cancel", "judge"},
	} {
		r := runDistill(t, append([]string{"--quiet"}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "succeeded") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	r = runDistill(t, "--quiet", "train", "status", "nowhere")
	if r.code != exitUsage || !strings.Contains(r.stderr, "no fine-tuning job") {
		t.Errorf("status of no job: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "rollout", "--judge", "builtin:nowhere.json", "--out", "x")
	if r.code != exitUsage {
		t.Errorf("rollout with a missing judge file: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := judge.LoadLinear(h.ModelFile); err != nil {
		t.Error(err)
	}
}

// TestExportedPromptsAreTheJudges: a rollout whose judge is a model
// records the requests its judge sent; after labelling and filtering, the
// exported examples' system and user messages are byte for byte requests
// the judge sent.
func TestExportedPromptsAreTheJudges(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := llmtest.NewServer(llmtest.Options{Answer: func(r llmtest.Request) string {
		if strings.Contains(r.Messages[len(r.Messages)-1].Content, "(no evidence yet)") {
			return `{"sufficient": false, "gap_items": [{"category": "bridge_entity", "target": "Answer", "slot": "x", "description": "y"}]}`
		}
		return `{"sufficient": false, "gap_items": [{"category": "attribute", "target": "Answer", "slot": "more", "description": "y"}]}`
	}})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	sft := offlineSFT(t, "--limit", "40", "--judge", "llm", "--judge-model", "judge-test", "--judge-base-url", srv.URL())
	sent := map[[2]string]bool{}
	for _, req := range srv.Requests() {
		if len(req.Messages) == 2 {
			sent[[2]string{req.Messages[0].Content, req.Messages[1].Content}] = true
		}
	}
	if r := runDistill(t, "--quiet", "train", "--in", sft, "--out", "exp", "--export-only"); r.code != 0 {
		t.Fatalf("export: exit %d, stderr %q", r.code, r.stderr)
	}
	f, err := os.Open(filepath.Join("exp", finetune.DataDir, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var ex struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			t.Fatal(err)
		}
		if !sent[[2]string{ex.Messages[0].Content, ex.Messages[1].Content}] {
			t.Fatalf("example %d's prompt was never sent by the judge:\n%s", n+1, ex.Messages[1].Content)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no examples")
	}
	t.Logf("%d exported prompts, all among the %d distinct prompts the judge sent", n, len(sent))
}

// TestTrainOpenAI fine-tunes through an OpenAI-compatible API that fails a
// fifth of its requests: the job is followed to its end and handed back.
func TestTrainOpenAI(t *testing.T) {
	t.Chdir(t.TempDir())
	sft := offlineChain(t).SFT
	srv := llmtest.NewServer(llmtest.Options{Seed: 4, ServerError: 0.1, RateLimited: 0.05, Malformed: 0.05})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	r := runDistill(t, "--quiet", "train", "--in", sft, "--out", "ft", "--backend", "openai", "--train-base-url", srv.URL(),
		"--base-model", "gpt-4o-mini-2024-07-18", "--poll-interval", "5ms", "--extra", "method={\"type\":\"supervised\"}")
	if r.code != 0 || !strings.Contains(r.stdout, "succeeded") {
		t.Fatalf("train: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	h, err := judge.ReadHandback("ft")
	if err != nil || !strings.HasPrefix(h.FineTunedModel, "ft:gpt-4o-mini") || !strings.Contains(h.Use, h.FineTunedModel) {
		t.Fatalf("model.json %+v, %v", h, err)
	}
	jobs := srv.FineTuneJobs()
	// With a "method" passed through, the hyper-parameters go inside it,
	// as the API wants them: 3 epochs, batch 2 x accumulation 8.
	if len(jobs) != 1 || !strings.Contains(string(jobs[0].Extra["method"]), `"batch_size":16,"n_epochs":3`) {
		t.Errorf("%d jobs on the server, method %s", len(jobs), jobs[0].Extra["method"])
	}
	if c := srv.Counts(); c.ServerError+c.RateLimited+c.Malformed == 0 {
		t.Errorf("no fault was injected: %+v", c)
	}
}

// standInTrainer is a trainer command for --trainer-command: it reports
// steps steps of progress, one every pause seconds, then writes an adapter.
func standInTrainer(steps int, pause string) string {
	return `i=0; while [ $i -lt ` + fmt.Sprint(steps) + ` ]; do i=$((i+1)); echo "DISTILL_PROGRESS {\"step\": $i, \"total_steps\": ` + fmt.Sprint(steps) + `, \"loss\": 0.5}"; sleep ` + pause + `; done
mkdir -p "$DISTILL_OUTPUT_DIR" && printf '{"r": 16, "lora_alpha": 32}' > "$DISTILL_OUTPUT_DIR/adapter_config.json" && printf 'weights' > "$DISTILL_OUTPUT_DIR/adapter_model.safetensors"`
}

// TestTrainLocalCancelAndReattach: a local job submitted with --detach is
// seen running and cancelled from other invocations; another is
// re-attached to by running distill train again, and handed back.
func TestTrainLocalCancelAndReattach(t *testing.T) {
	t.Chdir(t.TempDir())
	sft := offlineChain(t).SFT
	r := runDistill(t, "--quiet", "train", "--in", sft, "--out", "slow", "--trainer-command", standInTrainer(600, "0.1"), "--detach")
	if r.code != 0 || !strings.Contains(r.stdout, "on local") {
		t.Fatalf("submit: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "status", "slow")
	if r.code != 0 || !strings.Contains(r.stdout, "running") {
		t.Fatalf("status: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "--in", sft, "--out", "slow", "--overwrite")
	if r.code != 2 || !strings.Contains(r.stderr, "still running") {
		t.Errorf("--overwrite of a running job: exit %d, stderr %q; want 2, refused", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "cancel", "--grace", "0s", "slow")
	if r.code != 0 || !strings.Contains(r.stdout, "cancelled the job") {
		t.Fatalf("cancel: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "--out", "slow", "--poll-interval", "20ms")
	if r.code != 2 || !strings.Contains(r.stderr, "cancelled") || !strings.Contains(r.stderr, "--overwrite replaces it") {
		t.Errorf("train again on the cancelled job: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "--in", sft, "--out", "slow", "--backend", "openai")
	if r.code != 2 || !strings.Contains(r.stderr, "not of --backend openai") {
		t.Errorf("another --backend on the cancelled job: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "cancel", "slow")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to cancel") {
		t.Errorf("second cancel: exit %d, stdout %q", r.code, r.stdout)
	}
	// A job that has ended is replaced with --overwrite.
	r = runDistill(t, "--quiet", "train", "--in", sft, "--out", "slow", "--overwrite", "--trainer-command", standInTrainer(2, "0.01"), "--poll-interval", "20ms")
	if r.code != 0 || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("--overwrite of the cancelled job: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	r = runDistill(t, "--quiet", "train", "--in", sft, "--out", "fast", "--trainer-command", standInTrainer(5, "0.05"), "--detach")
	if r.code != 0 {
		t.Fatalf("submit: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "train", "--out", "fast", "--poll-interval", "20ms")
	if r.code != 0 || !strings.Contains(r.stdout, "succeeded") || !strings.Contains(r.stdout, "vllm serve") {
		t.Fatalf("re-attach: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	h, err := judge.ReadHandback("fast")
	var hp finetune.Hyperparameters
	if err == nil && len(h.Hyperparameters) > 0 {
		err = json.Unmarshal(h.Hyperparameters, &hp)
	}
	if err != nil || h.AdapterDir == "" || len(h.Hyperparameters) == 0 || hp.LoRARank != 16 {
		t.Errorf("model.json %+v, %v", h, err)
	}
	rec, err := finetune.LoadRecord("fast")
	if err != nil || rec.State.Step != 5 || rec.State.TotalSteps != 5 {
		t.Errorf("job.json progress %d/%d, %v", rec.State.Step, rec.State.TotalSteps, err)
	}
}

// TestTrainLocalChatTemplate: a local job trained with a chat template
// (the stand-in trainer saves one with its adapter) and a GGUF base model
// hands back llama.cpp's commands, its training data and the comparison of
// the templates; when the GGUF's template differs, train fails saying how,
// and bench refuses the judge while rollout, which records what it is
// given, takes it.
func TestTrainLocalChatTemplate(t *testing.T) {
	t.Chdir(t.TempDir())
	sft := offlineSFT(t)
	const trained = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
	trainerCmd := standInTrainer(2, "0") + ` && printf '%s' '` + trained + `' > "$DISTILL_OUTPUT_DIR/chat_template.jinja"`
	for _, tc := range []struct {
		name, served string
		code         int
		status       string
	}{
		{"same", trained, 0, judge.ChatTemplatesMatch},
		{"other", strings.Replace(trained, "<|im_start|>", "<start_of_turn>", 1), 1, judge.ChatTemplatesDiffer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.name + ".gguf"
			if err := os.WriteFile(base, gguf.Header(map[string]string{gguf.ChatTemplateKey: tc.served}), 0o644); err != nil {
				t.Fatal(err)
			}
			out := "judge-" + tc.name
			r := runDistill(t, "--quiet", "train", "--in", sft, "--out", out, "--trainer-command", trainerCmd,
				"--base-model", "HuggingFaceTB/SmolLM2-135M-Instruct", "--base-gguf", base, "--max-steps", "2", "--poll-interval", "20ms")
			if r.code != tc.code || !strings.Contains(r.stdout, "chat template:  "+tc.status) {
				t.Fatalf("train: exit %d, stdout %q, stderr %q; want exit %d", r.code, r.stdout, r.stderr, tc.code)
			}
			if tc.code != 0 && !strings.Contains(r.stderr, `differ from byte 24: trained "...or m in messages %}<|im_start|>`) {
				t.Errorf("stderr %q, want the difference", r.stderr)
			}
			h, err := judge.ReadHandback(out)
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(base)
			if h.ChatTemplate == nil || h.ChatTemplate.Status != tc.status || h.ChatTemplate.ServedFrom != abs || h.ChatTemplate.Trained == "" {
				t.Errorf("chat template record %+v", h.ChatTemplate)
			}
			if h.LlamaCpp == nil || h.LlamaCpp.BaseGGUF != abs || !strings.Contains(h.LlamaCpp.Serve, "--lora_path") ||
				!strings.Contains(h.LlamaCpp.Convert, "--base-model-id HuggingFaceTB/SmolLM2-135M-Instruct") {
				t.Errorf("llama.cpp commands %+v", h.LlamaCpp)
			}
			td := h.TrainingData
			if td == nil || td.Train != filepath.Join("..", sft, "train.parquet") || td.Val != filepath.Join("..", sft, "val.parquet") ||
				len(h.TrainQuestions) == 0 || len(h.ValQuestions) == 0 {
				t.Errorf("training data %+v, questions %d and %d", td, len(h.TrainQuestions), len(h.ValQuestions))
			}
			var hp finetune.Hyperparameters
			if err := json.Unmarshal(h.Hyperparameters, &hp); err != nil || hp.MaxSteps != 2 {
				t.Errorf("hyper-parameters %s, %v; want max_steps 2", h.Hyperparameters, err)
			}

			bench := runDistill(t, "--quiet", "bench", "--limit", "2", "--variants", "full", "--judge-from", out,
				"--judge-base-url", "http://127.0.0.1:9/v1", "--out", "bench-"+tc.name)
			refused := bench.code == exitUsage && strings.Contains(bench.stderr, "chat template")
			if refused != (tc.code != 0) {
				t.Errorf("bench --judge-from: exit %d, stderr %q", bench.code, bench.stderr)
			}
		})
	}
}

// TestRolloutJudgeFrom: rollout takes the judge a hand-back names, as
// bench does; the model flags of an adapter's server in the environment
// (scripts/local-models writes them) do not stop another judge.
func TestRolloutJudgeFrom(t *testing.T) {
	t.Chdir(t.TempDir())
	srv := llmtest.NewServer(llmtest.Options{Answer: func(llmtest.Request) string {
		return `{"sufficient": true, "gap_items": []}`
	}})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	if err := os.Mkdir("lora", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := judge.WriteHandback("lora", judge.Handback{Backend: "local", AdapterDir: "/a", TemplateHash: judge.TemplateHash, Use: "u"}); err != nil {
		t.Fatal(err)
	}
	r := runDistill(t, "--quiet", "rollout", "--limit", "3", "--judge-from", "lora", "--out", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "is a LoRA adapter: serve it") {
		t.Errorf("adapter not served: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "rollout", "--limit", "3", "--judge", "never", "--judge-from", "lora", "--out", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "not both") {
		t.Errorf("--judge and --judge-from: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Setenv("DISTILL_JUDGE_BASE_URL", srv.URL())
	t.Setenv("DISTILL_JUDGE_MODEL", judge.AdapterName)
	r = runDistill(t, "--quiet", "rollout", "--limit", "3", "--judge-from", "lora", "--out", "served")
	if r.code != 0 {
		t.Fatalf("served adapter: exit %d, stderr %q", r.code, r.stderr)
	}
	rows := checkTrajectories(t, filepath.Join("served", runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:3]))
	if rows[0].JudgeModel != judge.AdapterName {
		t.Errorf("judge model %q, want %q", rows[0].JudgeModel, judge.AdapterName)
	}
	if r = runDistill(t, "--quiet", "rollout", "--limit", "3", "--out", "lexical"); r.code != 0 {
		t.Errorf("the lexical judge with an adapter's server in the environment: exit %d, stderr %q", r.code, r.stderr)
	}
	if r = runDistill(t, "--quiet", "rollout", "--limit", "3", "--judge-model", "m", "--out", "flags"); r.code != exitUsage {
		t.Errorf("--judge-model with the lexical judge: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestTrainTargetJSON: --target-json spaced writes the verdicts of the
// exported examples as Python's json.dumps does; another value is refused.
func TestTrainTargetJSON(t *testing.T) {
	t.Chdir(t.TempDir())
	sft := offlineChain(t).SFT
	for _, tt := range []struct{ value, want string }{{"compact", `{"sufficient":`}, {"spaced", `{"sufficient": `}} {
		out := "exp-" + tt.value
		r := runDistill(t, "--quiet", "train", "--in", sft, "--out", out, "--export-only", "--target-json", tt.value)
		if r.code != 0 {
			t.Fatalf("--target-json %s: exit %d, stderr %q", tt.value, r.code, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, finetune.DataDir, "train.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var ex struct{ Messages []finetune.Message }
		if err := json.Unmarshal(b[:bytes.IndexByte(b, '\n')], &ex); err != nil {
			t.Fatal(err)
		}
		if got := ex.Messages[len(ex.Messages)-1].Content; !strings.HasPrefix(got, tt.want) {
			t.Errorf("--target-json %s: the target is %s, want it to start with %s", tt.value, got, tt.want)
		}
	}
	r := runDistill(t, "--quiet", "train", "--in", sft, "--out", "exp-bad", "--export-only", "--target-json", "pretty")
	if r.code != 2 || !strings.Contains(r.stderr, "--target-json must be compact or spaced") {
		t.Errorf("--target-json pretty: exit %d, stderr %q, want 2 and the choices", r.code, r.stderr)
	}
}
