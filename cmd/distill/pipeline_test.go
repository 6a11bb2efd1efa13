package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distill-rag/distill/eval"
)

// TestRunSamplePipeline runs examples/sample.yaml (make demo) twice: the
// whole chain, then nothing, every stage up to date.
func TestRunSamplePipeline(t *testing.T) {
	root := filepath.Join(t.TempDir(), "demo")
	example := filepath.Join("..", "..", "examples", "sample.yaml")
	r := runDistill(t, "--quiet", "run", "--root", root, example)
	if r.code != 0 {
		t.Fatalf("run: exit %d, stderr %q", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "LEAKAGE") {
		t.Errorf("the held-out synthetic set overlaps the training questions:\n%s", r.stderr)
	}
	rep, err := eval.ReadReport(filepath.Join(root, "bench", eval.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Variants) != 4 || rep.Questions != 200 {
		t.Errorf("report: %d variants over %d questions, want 4 over 200", len(rep.Variants), rep.Questions)
	}
	for _, want := range []string{"rollout:sample  run", "1000 states of 200 questions", "F1 full ", "loss "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runDistill(t, "--quiet", "run", "--root", root, example)
	if r.code != 0 {
		t.Fatalf("second run: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, "up to date"); n != 9 {
		t.Errorf("second run: %d stages up to date, want all 9:\n%s", n, r.stdout)
	}
}

// TestRunExamplesPlan checks every example's keys against the commands'
// flags, as --dry-run does.
func TestRunExamplesPlan(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(examples) < 3 {
		t.Fatalf("examples: %v, %v", examples, err)
	}
	for _, ex := range examples {
		r := runDistill(t, "run", "--dry-run", "--root", t.TempDir(), ex)
		if r.code != 0 || !strings.Contains(r.stdout, "distill bench ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", ex, r.code, r.stdout, r.stderr)
		}
	}
}

func TestRunStageFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	spec := "datasets: {s: {import: {dataset: sample}}}\ntraining: [s]\nrollout: {policy: sometimes}\n"
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runDistill(t, "--quiet", "run", "--root", filepath.Join(dir, "root"), path)
	if r.code != exitUsage || !strings.Contains(r.stderr, "stage rollout:s: ") || !strings.Contains(r.stderr, "sometimes") {
		t.Errorf("got exit %d, stderr %q; want %d naming the stage and the bad value", r.code, r.stderr, exitUsage)
	}
	if !strings.Contains(r.stdout, "import:s") || !strings.Contains(r.stdout, "not finished") {
		t.Errorf("the summary after a failure lacks the stages:\n%s", r.stdout)
	}
}

// TestRunSamplePipelineReferencePreset runs examples/sample.yaml with
// preset: reference for every stage: each takes it, and label leaves the
// 200 empty first states unlabelled (--skip-empty). distill's sentence
// splitter is set by hand: pysbd, the preset's, is a Python library that
// make test does not install (make e2e runs it).
func TestRunSamplePipelineReferencePreset(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "sample.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "reference.yaml")
	if err := os.WriteFile(file, append(b, "all:\n  preset: reference\n  splitter: distill\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runDistill(t, "--quiet", "run", "--root", filepath.Join(dir, "demo"), file)
	if r.code != 0 {
		t.Fatalf("run: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"1000 states of 200 questions", "800 labelled states", "F1 full "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
}
