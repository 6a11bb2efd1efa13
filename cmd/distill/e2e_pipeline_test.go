//go:build e2e

package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/judge"
)

// TestRealTrainingPipeline runs examples/local-models.yaml as its header
// says (make e2e-train): distill run --until train (the shared training
// slices rolled out and labelled, LoRA on SmolLM2-135M with TRL), the
// adapter served by scripts/local-models start --adapter, then distill run
// again for the benchmark, every earlier stage up to date. Shrunk to a few
// questions and two training steps; every other setting is the example's.
func TestRealTrainingPipeline(t *testing.T) {
	shared := filepath.Dir(sharedData(t, "hotpotqa"))
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	env := startLocalModels(t, filepath.Join(dir, "models"))
	vars := envVars(env)
	for _, k := range []string{"DISTILL_TRAIN_PYTHON", "DISTILL_TRAIN_BASE_GGUF"} {
		if vars[k] == "" {
			t.Skipf("scripts/local-models start wrote no %s: the trainer is not installed (make e2e-train installs it)", k)
		}
	}

	raw, err := os.ReadFile(filepath.Join(repo, "examples", "local-models.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := yaml.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	rebase(spec, map[string]string{"../shared/data/": shared + "/", ".cache/": filepath.Join(repo, ".cache") + "/"})
	root := filepath.Join(dir, "pipe")
	spec["root"] = root
	section := func(name string) map[string]any { return spec[name].(map[string]any) }
	section("rollout")["limit"] = 3
	maps.Copy(section("train"), map[string]any{"max-steps": 2, "grad-accum": 1, "max-length": 1024, "max-eval-examples": 2,
		"logging-steps": 1, "poll-interval": "2s"})
	section("bench")["limit"] = 1
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "local.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}

	d := &e2eRun{t: t, bin: bin, dir: dir, env: env, report: &strings.Builder{}}
	sum := d.distill("run", "--until", "train", "local.yaml")
	if !strings.Contains(sum, "succeeded, step 2 of 2") || !regexp.MustCompile(`\bbench +not selected`).MatchString(sum) {
		t.Errorf("run --until train: summary\n%s", sum)
	}
	judgeDir := filepath.Join(root, "judge")
	served := startLocalModels(t, filepath.Join(dir, "models-judge"), "--adapter", judgeDir, "--base-judge")
	ds := &e2eRun{t: t, bin: bin, dir: dir, env: served, report: d.report}
	sum = ds.distill("run", "local.yaml")
	t.Logf("summary:\n%s", sum)
	// 3 imports, 3 indexes, 2 rollouts, 2 labels, filter, train.
	if n := strings.Count(sum, "up to date"); n != 12 || !strings.Contains(sum, "F1 full ") {
		t.Errorf("the second run: %d stages up to date (want 12), then the bench:\n%s", n, sum)
	}
	rep := readJSON[eval.Report](t, filepath.Join(root, "bench", eval.ReportJSON))
	judges := map[string]string{}
	for _, v := range rep.Variants {
		judges[v.Name] = v.Roles["judge"]
	}
	want := map[string]string{"full": judge.AdapterName, "no-sft": "s2g-base", "no-judge": judges["no-judge"]}
	if !maps.Equal(judges, want) || rep.Questions != 1 {
		t.Errorf("the bench's judges were %v over %d questions, want %v over 1", judges, rep.Questions, want)
	}
}

// rebase rewrites the string values of a decoded YAML document that begin
// with one of the prefixes.
func rebase(v any, prefixes map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok {
				for from, to := range prefixes {
					if strings.HasPrefix(s, from) {
						v[k] = to + strings.TrimPrefix(s, from)
					}
				}
				continue
			}
			rebase(x, prefixes)
		}
	}
}
