//go:build e2e

package main

// The many-machines recipe (docs/commands.md "Many machines", cmd/distill/examples/), run on one
// machine by make e2e-shards: each step as four shards in separate
// processes at once, joined by distill merge or distill bench merge, must
// give what one unsharded run of the same questions gives.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/rollout/runner"
)

const shardCount = 4

// TestShardsMatchOneRun runs a rollout, its labelling and a benchmark of
// 200 generated questions once whole and once as four shards (four
// processes at a time, as four machines would), with an LLM judge and
// teacher served on loopback that answer as a function of the prompt, and
// compares: the same rows (stage timings aside) and the same counts and
// metrics (latencies aside).
func TestShardsMatchOneRun(t *testing.T) {
	bin := buildDistill(t)
	dir := t.TempDir()
	model := llmtest.NewServer(llmtest.Options{Answer: verdictFor})
	defer model.Close()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--quiet"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("distill %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// shards runs the command of each shard as a process of its own, all
	// at once, and returns their output directories.
	shards := func(name string, args ...string) []string {
		t.Helper()
		outs := make([]string, shardCount)
		errs := make([]error, shardCount)
		var wg sync.WaitGroup
		for i := range shardCount {
			outs[i] = fmt.Sprintf("%s-%d", name, i)
			cmd := exec.Command(bin, append([]string{"--quiet"}, append(args, "--shard", fmt.Sprintf("%d/%d", i, shardCount), "--out", outs[i])...)...)
			cmd.Dir = dir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if err := cmd.Wait(); err != nil {
					errs[i] = fmt.Errorf("shard %d: %w\n%s", i, err, out.String())
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("distill %s: %v", name, err)
			}
		}
		return outs
	}
	at := func(name string) string { return filepath.Join(dir, name) }

	run("data", "synth", "--seed", "11", "--count", "200", "--out", "ds")
	run("index", "--corpus", filepath.Join("ds", data.CorpusFile), "--out", "idx")
	questions := filepath.Join("ds", data.QuestionsFile)

	llmJudge := []string{"--judge", "llm", "--judge-model", "fake-judge", "--judge-base-url", model.URL()}
	rollout := append([]string{"rollout", "--questions", questions, "--index", "idx", "--workers", "4"}, llmJudge...)
	run(append(rollout, "--out", "rollout")...)
	run(append([]string{"merge", "--out", "rollout-merged"}, shards("rollout", rollout...)...)...)
	if len(model.Requests()) == 0 {
		t.Fatal("the rollouts asked the judge's server nothing")
	}
	want, got := trajectories(t, at("rollout")), trajectories(t, at("rollout-merged"))
	if len(want) == 0 {
		t.Fatal("the rollout wrote no rows")
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("merged rollout shards differ from one rollout (-one +shards):\n%s", diff)
	}
	compareRecords(t, at("rollout"), at("rollout-merged"), runner.ReportFile, "counts.output", "roles")

	// Labelling: the whole rollout at once, or the merged one by shards.
	teacher := []string{"--teacher", "llm", "--teacher-model", "fake-teacher", "--teacher-base-url", model.URL(), "--workers", "4"}
	run(append([]string{"label", "--in", "rollout", "--out", "labels"}, teacher...)...)
	labelShards := shards("labels", append([]string{"label", "--in", "rollout-merged"}, teacher...)...)
	run(append([]string{"merge", "--out", "labels-merged"}, labelShards...)...)
	wantLabels, gotLabels := labels(t, at("labels")), labels(t, at("labels-merged"))
	if len(wantLabels) != len(want) {
		t.Fatalf("%d labels for %d states", len(wantLabels), len(want))
	}
	if diff := gocmp.Diff(wantLabels, gotLabels); diff != "" {
		t.Errorf("merged label shards differ from one labelling (-one +shards):\n%s", diff)
	}
	compareRecords(t, at("labels"), at("labels-merged"), label.ReportFile, "counts.output")

	bench := append([]string{"bench", "--questions", questions, "--index", "idx", "--variants", "full,no-judge,single-round", "--workers", "4"}, llmJudge...)
	run(append(bench, "--out", "bench")...)
	run(append([]string{"bench", "merge", "--questions", questions, "--out", "bench-merged"}, shards("bench", bench...)...)...)
	compareRecords(t, at("bench"), at("bench-merged"), eval.ReportJSON, "questions", "variants", "paired")
}

// verdictFor answers every chat request with a judge's JSON verdict that
// depends on the prompt alone: sufficient for one prompt in three, else a
// gap naming a word of the prompt.
func verdictFor(r llmtest.Request) string {
	var prompt strings.Builder
	for _, m := range r.Messages {
		prompt.WriteString(m.Content)
	}
	h := fnv.New64a()
	h.Write([]byte(prompt.String()))
	sum := h.Sum64()
	if sum%3 == 0 {
		return `{"sufficient": true, "gap_items": []}`
	}
	words := strings.Fields(prompt.String())
	target := strings.Trim(words[int(sum/3)%len(words)], `"[]{}()|,.:;`)
	return fmt.Sprintf(`{"sufficient": false, "gap_items": [{"category": "bridge_entity", "target": %q, "slot": "", "description": "more about it"}]}`, target)
}

// trajectories reads a rollout's rows in question and round order, with
// the stage timings (which no two runs share) cleared.
func trajectories(t *testing.T, dir string) []data.State {
	t.Helper()
	rows := sortedRows(t, filepath.Join(dir, runner.TrajectoriesFile), func(s data.State) (string, int32) { return s.QuestionID, s.Round })
	for i := range rows {
		rows[i].JudgeMS, rows[i].RetrieveMS, rows[i].ExtractMS, rows[i].ReadMS = 0, 0, 0, 0
	}
	return rows
}

// labels reads a labelling's rows in question and round order, with the
// teacher's latencies cleared.
func labels(t *testing.T, dir string) []data.Label {
	t.Helper()
	rows := sortedRows(t, filepath.Join(dir, label.LabelsFile), func(l data.Label) (string, int32) { return l.QuestionID, l.Round })
	for i := range rows {
		for j := range rows[i].Samples {
			rows[i].Samples[j].LatencyMS = 0
		}
	}
	return rows
}

// sortedRows reads a parquet file's rows ordered by key.
func sortedRows[T any](t *testing.T, path string, key func(T) (string, int32)) []T {
	t.Helper()
	rows, err := data.ReadParquet[T](path)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b T) int {
		ida, ra := key(a)
		idb, rb := key(b)
		return cmp.Or(cmp.Compare(ida, idb), cmp.Compare(ra, rb))
	})
	return rows
}

// compareRecords compares members (dotted paths) of the JSON record file
// name in two output directories, with every "latency" member dropped
// (wall times are not the same from run to run) and "parts" (how many
// files the rows were written in), numbers equal to 12 digits.
func compareRecords(t *testing.T, one, sharded, name string, members ...string) {
	t.Helper()
	read := func(dir string) map[string]any {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", filepath.Join(dir, name), err)
		}
		return v
	}
	a, b := read(one), read(sharded)
	for _, m := range members {
		want, got := dropLatency(member(a, m)), dropLatency(member(b, m))
		if want == nil {
			t.Errorf("%s: no %s", filepath.Join(one, name), m)
			continue
		}
		// Means summed in another order may differ in their last bits.
		if diff := gocmp.Diff(want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
			t.Errorf("%s %s: the shards differ from one run (-one +shards):\n%s", name, m, diff)
		}
	}
}

func member(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func dropLatency(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k != "latency" && k != "parts" {
				out[k] = dropLatency(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropLatency(x)
		}
		return out
	}
	return v
}
