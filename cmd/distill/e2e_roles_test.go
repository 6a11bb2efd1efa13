//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/rollout/runner"
)

// TestModelRoles measures each local chat model in each role of the loop
// (judge, extractor, reader) and as the teacher: usable answers, median
// latency, prompt and completion tokens per call. It runs only when
// DISTILL_E2E_ROLE_MODELS names the models (make model-roles), as
// scripts/local-models start --chat knows them, e.g.
// "smollm2,qwen-0.5b,qwen-1.5b". Each model runs the loop with every role
// its own over DISTILL_E2E_QUESTIONS questions of the shared 2Wiki slice
// (default 5), then labels the same STATES states as teacher (one sample,
// temperature 0, as the method's teacher): the states of a rollout with
// the built-in roles, so that every teacher sees the same ones. The
// table goes to DISTILL_E2E_REPORT when set.
func TestModelRoles(t *testing.T) {
	models := strings.Split(os.Getenv("DISTILL_E2E_ROLE_MODELS"), ",")
	if models[0] == "" {
		t.Skip("DISTILL_E2E_ROLE_MODELS names no model (make model-roles sets it)")
	}
	const states = 12
	questionsN := 5
	if e2eQuestions != 20 { // DISTILL_E2E_QUESTIONS given
		questionsN = e2eQuestions
	}
	slice := sharedData(t, "2wikimultihopqa")
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	d := &e2eRun{t: t, bin: bin, dir: dir, report: &strings.Builder{}}
	ds := filepath.Join(dir, "2wiki")
	d.distill("data", "import", "--format", "flashrag", "--in", filepath.Join(slice, "2wiki_dev_sample_40.jsonl"),
		"--corpus", filepath.Join(slice, "2wiki_corpus.jsonl"), "--out", ds)
	d.distill("index", "--corpus", filepath.Join(ds, data.CorpusFile), "--out", filepath.Join(ds, "bm25"))
	questions, index := filepath.Join(ds, data.QuestionsFile), filepath.Join(ds, "bm25")
	builtin := filepath.Join(dir, "builtin-rollout")
	d.distill("rollout", "--questions", questions, "--index", index, "--out", builtin, "--policy", "fixed")

	fmt.Fprintf(d.report, "Measured by `make model-roles` (%s): each model behind llama.cpp's server on this machine's cores, "+
		"%d questions of the 2WikiMultiHopQA dev slice (BM25 over its 6,119 passages) with every role the model, one request at a time; "+
		"as teacher, the same %d states for every model (one sample, temperature 0).\n\n",
		time.Now().UTC().Format("2006-01-02"), questionsN, states)
	fmt.Fprintf(d.report, "| model | role %s\n| --- | --- %s\n", roleHeader, roleRule)
	for _, m := range models {
		d.env = startLocalModels(t, filepath.Join(dir, "models-"+m), "--chat", m)
		ro := filepath.Join(dir, "rollout-"+m)
		d.distill("rollout", "--questions", questions, "--index", index, "--out", ro, "--limit", fmt.Sprint(questionsN),
			"--judge", "llm", "--extractor", "llm", "--reader", "llm", "--workers", "1")
		sts, err := data.ReadParquet[data.State](filepath.Join(ro, runner.TrajectoriesFile))
		if err != nil {
			t.Fatal(err)
		}
		lab := filepath.Join(dir, "labels-"+m)
		d.distill("label", "--in", builtin, "--out", lab, "--teacher", "llm", "--limit", fmt.Sprint(states), "--workers", "1")
		labels, err := data.ReadParquet[data.Label](filepath.Join(lab, label.LabelsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append(roleFigures(sts), teacherFigures(labels, "teacher")) {
			if r.calls == 0 {
				continue
			}
			fmt.Fprintf(d.report, "| %s | %s %s\n", m, r.role, r.cells())
		}
		stopLocalModels(t, filepath.Join(dir, "models-"+m))
	}
	t.Log("\n" + d.report.String())
	if p := os.Getenv("DISTILL_E2E_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(d.report.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
