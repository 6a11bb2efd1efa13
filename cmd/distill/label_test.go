package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/rollout/runner"
)

// sampleRollout returns the output directory of a fixed-policy rollout of
// the bundled sample (shared: read it only).
func sampleRollout(t *testing.T) string {
	t.Helper()
	return offlineChain(t).Rollout
}

func trajectoryStates(t *testing.T, dir string) int {
	t.Helper()
	rows, err := data.ReadParquet[data.State](filepath.Join(dir, runner.TrajectoriesFile))
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

func TestLabelRetrievalTruth(t *testing.T) {
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	states := trajectoryStates(t, ro)
	r := runDistill(t, "--quiet", "label", "--in", ro, "--teacher", "retrieval-truth", "--out", "lab")
	if r.code != 0 {
		t.Fatalf("label: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"retrieval-truth (built-in baseline)", "labelled now:", "agrees with retrieval truth:", "labels:", "lab/labels.parquet"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("label output lacks %q:\n%s", want, r.stdout)
		}
	}
	if ls := testkit.Labels(t, filepath.Join("lab", label.LabelsFile)); len(ls) != states {
		t.Errorf("%d labels, want %d", len(ls), states)
	}
	r = runDistill(t, "data", "show", "-n", "1", filepath.Join("lab", label.LabelsFile))
	if r.code != 0 || !strings.Contains(r.stdout, `"samples"`) {
		t.Errorf("data show of labels: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, "--quiet", "label", "--in", ro, "--teacher", "retrieval-truth", "--out", "lab")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--resume") {
		t.Errorf("second label: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestLabelUsageErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no input", []string{"--out", "x"}, "--in is required"},
		{"no output", []string{"--in", ro}, "--out is required"},
		{"unknown teacher", []string{"--in", ro, "--out", "x", "--teacher", "oracle"}, "unknown --teacher"},
		{"zero samples", []string{"--in", ro, "--out", "x", "--samples", "0"}, "--samples must be at least 1"},
		{"batch with the built-in teacher", []string{"--in", ro, "--out", "x", "--teacher", "retrieval-truth", "--batch"}, "--batch is for --teacher llm"},
		{"budget without a price", []string{"--in", ro, "--out", "x", "--teacher-model", "local-llama", "--budget-usd", "1"}, "has no price"},
		{"both question sources", []string{"--in", ro, "--out", "x", "--dataset", "sample", "--questions", "q.parquet"}, "not both"},
		{"not a trajectories file", []string{"--in", "nope.parquet", "--out", "x", "--dataset", "sample", "--teacher", "retrieval-truth"}, "nope.parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runDistill(t, append([]string{"--quiet", "label"}, tt.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want an error with %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

// TestLabelLLMFaultsAndDryRun labels 200 states with K = 3 against a
// server that fails a quarter of its requests: every state is kept. The
// dry run before sends nothing.
func TestLabelLLMFaultsAndDryRun(t *testing.T) {
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	const states = 200
	srv := llmtest.NewServer(llmtest.Options{Seed: 3, ServerError: 0.06, Unavailable: 0.03, Malformed: 0.03, Truncated: 0.03,
		Answer: func(r llmtest.Request) string {
			if strings.Contains(r.Messages[len(r.Messages)-1].Content, "(no evidence yet)") {
				return `{"sufficient": false, "gap_items": [{"category": "bridge_entity", "target": "Answer", "slot": "x", "description": "y"}]}`
			}
			return `{"sufficient": true, "gap_items": []}`
		}})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	base := []string{"--quiet", "label", "--in", ro, "--out", "lab", "--teacher-base-url", srv.URL(), "--samples", "3", "--temperature", "0.7", "--limit", fmt.Sprint(states)}

	r := runDistill(t, append(base, "--dry-run")...)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing was sent") || !strings.Contains(r.stdout, "$") {
		t.Fatalf("dry run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := srv.Counts().Requests; n != 0 {
		t.Errorf("the dry run sent %d requests", n)
	}
	if _, err := os.Stat("lab"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dry run wrote its output directory: %v", err)
	}

	r = runDistill(t, base...)
	if r.code != 0 {
		t.Fatalf("label: exit %d, stderr %q", r.code, r.stderr)
	}
	ls := testkit.Labels(t, filepath.Join("lab", label.LabelsFile))
	if len(ls) != states {
		t.Fatalf("%d labels, want %d", len(ls), states)
	}
	// A sample whose every retry failed is recorded as such; the state
	// is kept either way.
	for _, l := range ls {
		failed := 0
		for _, s := range l.Samples {
			if s.Error != "" {
				failed++
			}
		}
		if len(l.Samples) != 3 || (l.Agreement != 1 && float64(3-failed)/3 != l.Agreement) {
			t.Fatalf("label of %s round %d: %d samples (%d failed), agreement %v", l.QuestionID, l.Round, len(l.Samples), failed, l.Agreement)
		}
	}
	c := srv.Counts()
	if c.ServerError == 0 || c.Malformed == 0 {
		t.Errorf("the server injected no faults: %+v", c)
	}
	rep, err := label.ReadReport("lab")
	if err != nil || len(rep.Usage) != 1 || rep.Usage[0].Retries == 0 || rep.Usage[0].Requests != int64(3*states) {
		t.Errorf("label.json usage %+v, %v", rep.Usage, err)
	}

	// A finished output keeps no parts: a dry run of its resume counts
	// what labels.parquet holds, and changes nothing.
	if _, err := os.Stat(filepath.Join("lab", label.PartsDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a finished label run kept its parts: %v", err)
	}
	sent := srv.Counts().Requests
	r = runDistill(t, append(base, "--resume", "--dry-run")...)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d already labelled, 0 to label", states)) || !strings.Contains(r.stdout, "$0 (nothing to label)") {
		t.Errorf("dry run of a finished output's resume: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := srv.Counts().Requests; n != sent {
		t.Errorf("the dry run sent %d requests", n-sent)
	}
	if got := testkit.DirNames(t, "lab"); !slices.Equal(got, []string{label.ReportFile, label.LabelsFile}) && !slices.Equal(got, []string{label.LabelsFile, label.ReportFile}) {
		t.Errorf("after the dry run, lab holds %q", got)
	}
}

func TestLabelBudget(t *testing.T) {
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	srv := llmtest.NewServer(llmtest.Options{Answer: func(llmtest.Request) string { return `{"sufficient": true}` }})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	const states = 200
	args := []string{"--quiet", "label", "--in", ro, "--out", "lab", "--limit", fmt.Sprint(states), "--teacher-base-url", srv.URL(),
		"--teacher-model", "gpt-4o-mini", "--workers", "2", "--budget-usd", "0.005", "--price", "gpt-4o-mini=10:10"}
	r := runDistill(t, args...)
	if r.code != exitIncomplete || !strings.Contains(r.stderr, "budget reached") || !strings.Contains(r.stdout, "--resume goes on") {
		t.Fatalf("label over budget: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runDistill(t, append(args[:len(args)-4], "--resume", "--price", "gpt-4o-mini=10:10")...)
	if r.code != 0 {
		t.Fatalf("resume without a budget: exit %d, stderr %q", r.code, r.stderr)
	}
	if ls := testkit.Labels(t, filepath.Join("lab", label.LabelsFile)); len(ls) != states {
		t.Errorf("%d labels after resuming, want %d", len(ls), states)
	}
}

// TestLabelKill9 kills a labelling run with SIGKILL after its first
// checkpoint, twice, and resumes it: every state ends up labelled once.
func TestLabelKill9(t *testing.T) {
	binary(t) // skipped with -short, before the rollout is made
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	states := trajectoryStates(t, ro)
	srv := llmtest.NewServer(llmtest.Options{Latency: 3 * time.Millisecond,
		Answer: func(llmtest.Request) string {
			return `{"sufficient": false, "gap_items": [{"category": "other", "target": "a", "slot": "b", "description": "c"}]}`
		}})
	defer srv.Close()
	noKey := []string{"OPENAI_API_KEY="}
	args := []string{"--log-format", "json", "label", "--in", ro, "--out", "lab", "--teacher-base-url", srv.URL(),
		"--workers", "2", "--checkpoint-states", "25"}
	if !killAfterCheckpoint(t, noKey, args...) {
		t.Fatal("the run finished before it could be killed")
	}
	if _, err := os.Stat(filepath.Join("lab", label.LabelsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a killed run left labels.parquet: %v", err)
	}
	resumed := append(args, "--resume")
	killAfterCheckpoint(t, noKey, resumed...)
	if r := runBinary(t, noKey, append([]string{"--quiet"}, resumed...)...); r.code != 0 {
		t.Fatalf("final resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if ls := testkit.Labels(t, filepath.Join("lab", label.LabelsFile)); len(ls) != states {
		t.Errorf("%d labels, want %d", len(ls), states)
	}
	rep, err := label.ReadReport("lab")
	if err != nil || rep.Resumes != 2 || rep.Counts.AlreadyDone == 0 || rep.Status != label.StatusDone {
		t.Errorf("label.json: resumes %d, already done %d, status %q, %v", rep.Resumes, rep.Counts.AlreadyDone, rep.Status, err)
	}
	if left, _ := filepath.Glob(filepath.Join("lab", label.PartsDir, ".*")); len(left) > 0 {
		t.Errorf("leftover temporary files: %v", left)
	}
}

// TestLabelBatch labels through the Batch API of a loopback server whose
// first batch expires with a third of its requests unanswered: the second
// batch resubmits them, and every state is labelled.
func TestLabelBatch(t *testing.T) {
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	srv := llmtest.NewServer(llmtest.Options{
		Answer:      func(llmtest.Request) string { return `{"sufficient": true, "gap_items": []}` },
		BatchScript: []llmtest.BatchOutcome{{Status: "expired", Complete: 0.66}},
	})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	r := runDistill(t, "--quiet", "label", "--in", ro, "--out", "lab", "--teacher-base-url", srv.URL(), "--batch",
		"--batch-poll-interval", "1ms", "--limit", "90")
	if r.code != 0 {
		t.Fatalf("label --batch: exit %d, stderr %q", r.code, r.stderr)
	}
	if ls := testkit.Labels(t, filepath.Join("lab", label.LabelsFile)); len(ls) != 90 {
		t.Errorf("%d labels, want 90", len(ls))
	}
	bs := srv.Batches()
	if len(bs) != 2 || bs[0].Status != "expired" || bs[1].Lines != bs[0].Failed {
		t.Errorf("batches %+v: want an expired one and one resubmitting its failures", bs)
	}
	rep, err := label.ReadReport("lab")
	if err != nil || len(rep.Batches) != 2 || !rep.Config.Batch {
		t.Errorf("label.json batches %+v, %v", rep.Batches, err)
	}
}

// TestLabelShardsMerge labels the sample's rollout in two shards and
// merges them with distill merge.
func TestLabelShardsMerge(t *testing.T) {
	t.Chdir(t.TempDir())
	ro := sampleRollout(t)
	for _, s := range []string{"0/2", "1/2"} {
		r := runDistill(t, "--quiet", "label", "--in", ro, "--teacher", "retrieval-truth", "--out", "lab"+s[:1], "--shard", s)
		if r.code != 0 {
			t.Fatalf("label --shard %s: exit %d, stderr %q", s, r.code, r.stderr)
		}
	}
	r := runDistill(t, "--quiet", "merge", "--out", "lab", "lab0", "lab1")
	if r.code != 0 || !strings.Contains(r.stdout, "labels.parquet") {
		t.Fatalf("merge: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if ls := testkit.Labels(t, filepath.Join("lab", label.LabelsFile)); len(ls) != trajectoryStates(t, ro) {
		t.Errorf("%d merged labels, want %d", len(ls), trajectoryStates(t, ro))
	}
	r = runDistill(t, "--quiet", "merge", "--out", "mixed", "lab0", ro)
	if r.code != exitUsage || !strings.Contains(r.stderr, "mix") {
		t.Errorf("mixed merge: exit %d, stderr %q", r.code, r.stderr)
	}
}
