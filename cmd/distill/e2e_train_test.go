//go:build e2e

package main

import (
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/filter"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/trainer"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/rollout/runner"
)

// TestRealTraining is the real training path (make e2e-train, which
// installs the trainer first): LoRA SFT of SmolLM2-135M-Instruct, loaded
// from its GGUF file dequantized by transformers, with the TRL script kept
// in distill, for two steps on the sample's filtered labels; the hand-back
// checked (chat templates compared with the GGUF that llama.cpp serves,
// llama.cpp's commands, the training questions); the adapter converted by
// llama.cpp's own converter and served over the quantized base by
// scripts/local-models start --adapter; and the loop run with it through
// --judge-from, in rollout and bench.
func TestRealTraining(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	env := startLocalModels(t, filepath.Join(dir, "models"))
	vars := envVars(env)
	for _, k := range []string{"DISTILL_TRAIN_PYTHON", "DISTILL_TRAIN_BASE_MODEL", "DISTILL_TRAIN_BASE_GGUF"} {
		if vars[k] == "" {
			t.Skipf("scripts/local-models start wrote no %s: the trainer is not installed (make e2e-train installs it)", k)
		}
	}
	d := &e2eRun{t: t, bin: bin, dir: dir, env: env, report: &strings.Builder{}}

	// The sample's labels, offline: rollout, the retrieval-truth teacher,
	// the method's filter.
	d.distill("rollout", "--policy", "fixed", "--out", "ro")
	d.distill("label", "--in", "ro", "--teacher", "retrieval-truth", "--out", "lab")
	d.distill("filter", "--in", "lab", "--out", "sft")

	start := time.Now()
	d.distill("train", "--in", "sft", "--out", "judge", "--max-steps", "2", "--batch-size", "1", "--grad-accum", "1",
		"--max-length", "1024", "--precision", "auto", "--logging-steps", "1", "--max-eval-examples", "2", "--poll-interval", "2s")
	t.Logf("trained 2 steps in %s", time.Since(start).Round(time.Second))
	judgeDir := filepath.Join(dir, "judge")
	h, err := judge.ReadHandback(judgeDir)
	if err != nil {
		t.Fatal(err)
	}
	checkHandback(t, h, judgeDir, vars["DISTILL_TRAIN_BASE_GGUF"], filepath.Join(dir, "sft"))
	rec, err := finetune.LoadRecord(judgeDir)
	if err != nil || rec.State.Step != 2 || rec.State.TotalSteps != 2 {
		t.Errorf("job.json: step %d of %d, %v; want 2 of 2", rec.State.Step, rec.State.TotalSteps, err)
	}
	log, err := os.ReadFile(filepath.Join(judgeDir, trainer.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `DISTILL_PROGRESS {"step": 2, "total_steps": 2, "elapsed_s"`) || !strings.Contains(string(log), `"eta_s"`) {
		t.Errorf("train.log has no per-step progress with an ETA:\n%s", tail(string(log), 20))
	}

	// The authors' training: the loss over the whole text, over-long
	// examples cut (the sample's are about 650 tokens) rather than left out.
	d.distill("train", "--in", "sft", "--out", "judge-full", "--loss", "full", "--max-steps", "1", "--batch-size", "1",
		"--grad-accum", "1", "--max-length", "512", "--max-eval-examples", "1", "--poll-interval", "2s")
	full, err := finetune.LoadRecord(filepath.Join(dir, "judge-full"))
	if err != nil || full.State.Status != finetune.StatusSucceeded || full.Job.Hyper.Loss != finetune.LossFull ||
		full.State.Result == nil || full.State.Result.Metrics["train_examples_cut"] < 1 {
		t.Errorf("train --loss full: %+v, %v; want a success that cut examples", full.State, err)
	}

	// A hand-back whose server would apply another chat template is
	// refused by start --adapter, which leaves nothing running.
	refused := filepath.Join(dir, "refused")
	copyHandback(t, judgeDir, refused, func(h *judge.Handback) { h.ChatTemplate.Status = judge.ChatTemplatesDiffer })
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "local-models"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "start", filepath.Join(dir, "models-refused"), "--owner", "0", "--adapter", refused).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another chat template") {
		t.Errorf("start --adapter with templates that differ: %v\n%s", err, out)
	}
	if out, err := exec.Command(script, "status", filepath.Join(dir, "models-refused")).CombinedOutput(); err == nil {
		t.Errorf("a refused start left servers running:\n%s", out)
	}

	// The adapter served by llama.cpp, used through --judge-from.
	start = time.Now()
	served := startLocalModels(t, filepath.Join(dir, "models-judge"), "--adapter", judgeDir, "--base-judge")
	t.Logf("converted and served in %s", time.Since(start).Round(time.Second))
	sv := envVars(served)
	if sv["DISTILL_JUDGE_MODEL"] != judge.AdapterName || sv["DISTILL_JUDGE_BASE_URL"] == "" {
		t.Fatalf("start --adapter wrote DISTILL_JUDGE_MODEL %q, DISTILL_JUDGE_BASE_URL %q", sv["DISTILL_JUDGE_MODEL"], sv["DISTILL_JUDGE_BASE_URL"])
	}
	if sv["DISTILL_BASE_JUDGE_MODEL"] != "s2g-base" || sv["DISTILL_BASE_JUDGE_BASE_URL"] == "" {
		t.Fatalf("start --base-judge wrote DISTILL_BASE_JUDGE_MODEL %q, DISTILL_BASE_JUDGE_BASE_URL %q", sv["DISTILL_BASE_JUDGE_MODEL"], sv["DISTILL_BASE_JUDGE_BASE_URL"])
	}
	if fi, err := os.Stat(filepath.Join(judgeDir, finetune.AdapterGGUF)); err != nil || fi.Size() == 0 {
		t.Errorf("the converted adapter: %v", err)
	}
	jlog, err := os.ReadFile(filepath.Join(dir, "models-judge", "judge.log"))
	if err != nil || !strings.Contains(string(jlog), "llama_adapter_lora_init") {
		t.Errorf("the judge's server log does not show the adapter loaded (%v):\n%s", err, tail(string(jlog), 20))
	}
	ds := &e2eRun{t: t, bin: bin, dir: dir, env: served, report: d.report}
	qs := synth.Sample().Questions[:3]
	ds.distill("rollout", "--limit", "3", "--judge-from", "judge", "--out", "ro-judge")
	rows := checkTrajectories(t, filepath.Join(dir, "ro-judge", runner.TrajectoriesFile), testkit.QuestionIDs(qs))
	usable := 0
	for _, r := range rows {
		if r.JudgeModel != judge.AdapterName || r.Failure != "" {
			t.Errorf("question %s round %d: judge %q, failure %q; want %s and none", r.QuestionID, r.Round, r.JudgeModel, r.Failure, judge.AdapterName)
		}
		if r.JudgeParseError == "" {
			usable++
		}
	}
	t.Logf("the served adapter judged %d states, %d usable", len(rows), usable)
	// The trained judge against the same base untuned (start
	// --base-judge), as make experiment measures them.
	ds.distill("bench", "--limit", "2", "--variants", "full,no-sft", "--judge-from", "judge", "--base-judge", "llm", "--out", "bench")
	rep := readJSON[eval.Report](t, filepath.Join(dir, "bench", "report.json"))
	judges := map[string]string{}
	for _, v := range rep.Variants {
		judges[v.Name] = v.Roles["judge"]
	}
	if want := map[string]string{"full": judge.AdapterName, "no-sft": "s2g-base"}; !maps.Equal(judges, want) {
		t.Errorf("the bench's judges were %v, want %v", judges, want)
	}
}

// checkHandback checks the hand-back of the real training run.
func checkHandback(t *testing.T, h judge.Handback, dir, gguf, sft string) {
	t.Helper()
	if err := trainer.CheckAdapter(h.AdapterDir); err != nil {
		t.Error(err)
	}
	if ct := h.ChatTemplate; ct == nil || ct.Status != judge.ChatTemplatesMatch || ct.ServedFrom != gguf || ct.Trained == "" {
		t.Errorf("chat templates %+v, want a match with %s", ct, gguf)
	}
	if lc := h.LlamaCpp; lc == nil || lc.BaseGGUF != gguf || lc.AdapterGGUF != finetune.AdapterGGUF {
		t.Errorf("llama.cpp serving %+v", lc)
	}
	for _, split := range []struct {
		file string
		got  []string
	}{{filter.TrainFile, h.TrainQuestions}, {filter.ValFile, h.ValQuestions}} {
		labels, err := data.ReadParquet[data.Label](filepath.Join(sft, split.file))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, l := range labels {
			want = append(want, l.QuestionID)
		}
		slices.Sort(want)
		if want = slices.Compact(want); !slices.Equal(want, split.got) {
			t.Errorf("model.json: %d questions of %s, want the %d of %s", len(split.got), split.file, len(want), filepath.Join(sft, split.file))
		}
	}
	for _, k := range []string{"train_loss", "eval_loss", "train_examples_used"} {
		if v, ok := h.Metrics[k]; !ok || v <= 0 || math.IsInf(v, 0) {
			t.Errorf("metric %s: %v (present %v), want a positive number", k, v, ok)
		}
	}
	t.Logf("metrics: %v", h.Metrics)
}

// copyHandback writes the hand-back of from, changed by edit, into to.
func copyHandback(t *testing.T, from, to string, edit func(*judge.Handback)) {
	t.Helper()
	h, err := judge.ReadHandback(from)
	if err != nil {
		t.Fatal(err)
	}
	edit(&h)
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := judge.WriteHandback(to, h); err != nil {
		t.Fatal(err)
	}
}

// envVars maps the KEY=VALUE lines of an environment.
func envVars(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
