package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/judge"
)

// TestBenchOffline benchmarks the sample with the built-in components and
// a judge trained by the built-in backend: every variant is reported, the
// reports agree, the comparison of two benchmarks prints, and a judge of
// another prompt template is refused.
func TestBenchOffline(t *testing.T) {
	t.Chdir(t.TempDir())
	// A copy of the shared judge, whose hand-back is changed below.
	if err := os.CopyFS("judge", os.DirFS(offlineChain(t).Judge)); err != nil {
		t.Fatal(err)
	}
	r := runDistill(t, "--quiet", "bench", "--limit", "20")
	if r.code != 0 {
		t.Fatalf("bench: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, v := range eval.DefaultVariants() {
		if !strings.Contains(r.stdout, "| "+v+" |") {
			t.Errorf("report lacks variant %s:\n%s", v, r.stdout)
		}
	}
	rep, err := eval.ReadReport(filepath.Join(defaultBenchOut, eval.ReportJSON))
	if err != nil || len(rep.Variants) != len(eval.DefaultVariants()) || rep.Questions != 20 {
		t.Fatalf("report.json: %d variants, %d questions, %v", len(rep.Variants), rep.Questions, err)
	}
	for _, f := range []string{eval.TracesHTML, eval.PlotEMF1, eval.PlotRounds, eval.PlotCalibration, eval.PlotCompressionF1} {
		if _, err := os.Stat(filepath.Join(defaultBenchOut, f)); err != nil {
			t.Error(err)
		}
	}

	r = runDistill(t, "--quiet", "bench", "--limit", "20", "--judge-from", "judge", "--out", "trained", "--variants", "full,no-sft")
	if r.code != 0 {
		t.Fatalf("bench --judge-from: exit %d, stderr %q", r.code, r.stderr)
	}
	trained, err := eval.ReadReport(filepath.Join("trained", eval.ReportJSON))
	if err != nil || len(trained.Variants) != 2 || !strings.Contains(trained.Variants[0].Roles["judge"], "builtin-linear-judge") {
		t.Fatalf("trained report: %+v, %v", trained.Variants, err)
	}
	// The judge was trained on the sample's questions, which the benchmark
	// ran again: it says so, loudly, in its log and its report.
	if l := trained.Leakage; l == nil || !l.Known || l.Overlap == 0 || l.Questions != 20 {
		t.Errorf("trained report: leakage %+v, want the overlap of the 20 questions with the training questions", l)
	}
	if !strings.Contains(r.stdout, "WARNING: LEAKAGE") || !strings.Contains(r.stderr, "LEAKAGE") {
		t.Errorf("bench on the judge's training questions does not warn: stdout %q, stderr %q", r.stdout[:min(len(r.stdout), 400)], r.stderr)
	}
	r = runDistill(t, "bench", "compare", defaultBenchOut, "trained")
	if r.code != 0 || !strings.Contains(r.stdout, "full") || !strings.Contains(r.stdout, "only in") {
		t.Errorf("compare: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "bench", "compare", "--pair", "no-judge:no-sft", defaultBenchOut, "trained")
	if r.code != 0 || !strings.Contains(r.stdout, "variant no-judge of A, no-sft of B") || !strings.Contains(r.stdout, "paired, B-A") {
		t.Errorf("compare --pair: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, bad := range []string{"full", "full:nope"} {
		if r = runDistill(t, "bench", "compare", "--pair", bad, defaultBenchOut, "trained"); r.code != exitUsage || r.stdout != "" {
			t.Errorf("compare --pair %s: exit %d, stderr %q; want a usage error", bad, r.code, r.stderr)
		}
	}

	// A judge trained on another prompt template is refused.
	h, err := judge.ReadHandback("judge")
	if err != nil {
		t.Fatal(err)
	}
	h.TemplateHash = strings.Repeat("0", 64)
	b, _ := json.Marshal(h)
	if err := os.WriteFile(filepath.Join("judge", judge.HandbackFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runDistill(t, "--quiet", "bench", "--limit", "5", "--judge-from", "judge", "--out", "refused")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--allow-template-mismatch") {
		t.Errorf("mismatched template: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "bench", "--limit", "5", "--judge-from", "judge", "--out", "allowed", "--variants", "full", "--allow-template-mismatch")
	if r.code != 0 {
		t.Errorf("with --allow-template-mismatch: exit %d, stderr %q", r.code, r.stderr)
	}
	// A hand-back that names no judge is refused, not replaced by the
	// default --judge.
	h.ModelFile = ""
	b, _ = json.Marshal(h)
	if err := os.WriteFile(filepath.Join("judge", judge.HandbackFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runDistill(t, "--quiet", "bench", "--limit", "5", "--judge-from", "judge", "--out", "nothing", "--allow-template-mismatch")
	if r.code != exitUsage || !strings.Contains(r.stderr, "names no trained judge") {
		t.Errorf("hand-back without a judge: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "bench", "--variants", "full,bogus", "--out", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, "bogus") {
		t.Errorf("unknown variant: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestBenchJudgeUsageErrors: judges that cannot be opened are usage
// errors, reported before anything runs, in the flags' words.
func TestBenchJudgeUsageErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	adapter := judge.Handback{Backend: "local", BaseModel: "base", AdapterDir: "/runs/lora/adapter", TemplateHash: judge.TemplateHash}
	adapter.SetCommands()
	if err := os.Mkdir("lora", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := judge.WriteHandback("lora", adapter); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		inStderr string
	}{
		{"unknown judge", []string{"--judge", "oracle"}, `unknown --judge "oracle" (want lexical, never, always, llm, builtin:PATH)`},
		{"unknown base judge", []string{"--base-judge", "oracle"}, `unknown --base-judge "oracle"`},
		{"llm without model", []string{"--base-judge", "llm"}, "--base-judge llm needs --base-judge-model"},
		{"missing model file", []string{"--judge", "builtin:nowhere.json"}, "--judge builtin:nowhere.json: open nowhere.json"},
		{"judge and judge-from", []string{"--judge", "never", "--judge-from", "lora"}, "give --judge or --judge-from, not both"},
		{"missing hand-back", []string{"--judge-from", "nowhere"}, "--judge-from: open " + filepath.Join("nowhere", judge.HandbackFile)},
		{"adapter not served", []string{"--judge-from", "lora"}, "is a LoRA adapter: serve it (" + adapter.Serve + ") and give --judge-base-url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runDistill(t, append([]string{"--quiet", "bench", "--out", "x"}, tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.inStderr) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", r.code, r.stdout, r.stderr, exitUsage, tc.inStderr)
			}
		})
	}
	if _, err := os.Stat("x"); err == nil {
		t.Error("a refused benchmark wrote its output")
	}
}

// TestBenchShardsCLI runs the sample's benchmark in two shards and merges
// them with distill bench merge.
func TestBenchShardsCLI(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, s := range []string{"0/2", "1/2"} {
		r := runDistill(t, "--quiet", "bench", "--limit", "30", "--variants", "full,single-round", "--shard", s, "--out", "b"+s[:1])
		if r.code != 0 {
			t.Fatalf("bench --shard %s: exit %d, stderr %q", s, r.code, r.stderr)
		}
	}
	r := runDistill(t, "--quiet", "bench", "merge", "--out", "all", "--dataset", "sample", "b0", "b1")
	if r.code != 0 || !strings.Contains(r.stdout, "| full |") {
		t.Fatalf("bench merge: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	rep, err := eval.ReadReport(filepath.Join("all", eval.ReportJSON))
	if err != nil || rep.Questions != 30 || len(rep.Variants) != 2 {
		t.Errorf("merged report: %d questions, %d variants, %v", rep.Questions, len(rep.Variants), err)
	}
}

// TestReportHead: bench prints the report up to its results table.
func TestReportHead(t *testing.T) {
	md := "# Benchmark: x\n\n> **WARNING: LEAKAGE.** ...\n\n## Results\n\n| variant | F1 |\n|---|---:|\n| full | 1.0 |\n\nEM and F1: ...\n\n## Variants\n\n| a |\n"
	want := "# Benchmark: x\n\n> **WARNING: LEAKAGE.** ...\n\n## Results\n\n| variant | F1 |\n|---|---:|\n| full | 1.0 |\n"
	if got := reportHead(md); got != want {
		t.Errorf("head %q, want %q", got, want)
	}
	if got := reportHead("no table"); got != "no table" {
		t.Errorf("a report without results: %q", got)
	}
}
