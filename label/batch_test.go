package label

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

// batchOptions returns labelling options that go through the batch API of
// srv, polling without waiting.
func batchOptions(t *testing.T, srv *llmtest.Server, out string, samples, limit int) Options {
	t.Helper()
	in, qs := trajectories(t)
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: teacherModel, Role: "teacher"},
		llm.WithBatchRetry(llm.RetryOptions{Sleep: noWait}))
	if err != nil {
		t.Fatal(err)
	}
	teacher := &LLMTeacher{Model: teacherModel, Temperature: 0.7}
	return Options{
		In: in, Out: out, Questions: qs, Samples: samples, Limit: limit,
		Batch: &BatchOptions{Client: c, Teacher: teacher, Prices: map[string]llm.Price{teacherModel: {Input: 1, Output: 2}},
			PollInterval: time.Millisecond},
		Info: Info{Teacher: NameLLM, Model: teacherModel, Template: TeacherTemplateHash, Temperature: 0.7, MaxTokens: DefaultMaxTokens},
	}
}

func TestBatchCompleted(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Answer: batchAnswer, BatchPolls: 2})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "labels")
	opts := batchOptions(t, srv, out, 2, 60)
	opts.Batch.MaxRequests = 50 // 120 requests: three input files
	sum, ls := runLabels(t, opts)
	if len(ls) != 60 {
		t.Fatalf("%d labels, want 60", len(ls))
	}
	for _, l := range ls {
		for k, s := range l.Samples {
			if s.BatchID == "" || s.CustomID == "" || int(s.Sample) != k || s.Error != "" || s.PromptTokens == 0 {
				t.Fatalf("sample %+v", s)
			}
		}
	}
	if c := srv.Counts(); c.Batches != 3 || c.Files != 3 {
		t.Errorf("server counts %+v, want 3 batches of 3 files", c)
	}
	if len(sum.Batches) != 3 || sum.Batches[0].Requests != 50 || sum.Batches[2].Requests != 20 {
		t.Errorf("batches recorded %+v", sum.Batches)
	}
	var tokens llm.Usage
	for _, l := range ls {
		tokens.PromptTokens += int(l.PromptTokens)
		tokens.CompletionTokens += int(l.CompletionTokens)
	}
	want := llm.Price{Input: 0.5, Output: 1}.Cost(tokens)
	if len(sum.Usage) != 1 || sum.Usage[0].Requests != 120 || diff(sum.CostUSD, want) > 1e-12 {
		t.Errorf("usage %+v, cost %v, want %v at half price", sum.Usage, sum.CostUSD, want)
	}
}

// batchAnswer answers every request with a verdict (no prose, unlike
// votingAnswer), so that every failure in these tests is the batch's.
func batchAnswer(r llmtest.Request) string {
	if strings.Contains(r.Messages[len(r.Messages)-1].Content, "(no evidence yet)") {
		return `{"sufficient": false, "gap_items": [{"category": "bridge_entity", "target": "Subject", "slot": "identity", "description": "who"}]}`
	}
	return `{"sufficient": true, "gap_items": []}`
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestBatchResubmitsFailures: the first batch expires with 60% of its
// requests answered and some answered with a 500; the second resubmits
// exactly those that failed, and everything is labelled.
func TestBatchResubmitsFailures(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Seed: 9, Answer: batchAnswer,
		BatchScript: []llmtest.BatchOutcome{{Status: "expired", Complete: 0.6, LineErrorRate: 0.1}}})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "labels")
	sum, err := Run(t.Context(), batchOptions(t, srv, out, 1, 100))
	if err != nil {
		t.Fatal(err)
	}
	bs := srv.Batches()
	if len(bs) != 2 || bs[0].Status != "expired" || bs[0].OutputFileID == "" || bs[0].ErrorFileID == "" {
		t.Fatalf("batches %+v", bs)
	}
	if bs[1].Lines != bs[0].Failed || bs[1].Lines < 40 {
		t.Errorf("second batch has %d lines, want the %d that failed", bs[1].Lines, bs[0].Failed)
	}
	ls := testkit.Labels(t, sum.Labels)
	if len(ls) != 100 {
		t.Fatalf("%d labels", len(ls))
	}
	for _, l := range ls {
		if l.Failure != "" || l.Samples[0].BatchID == "" {
			t.Fatalf("label %s round %d: %q, batch %q", l.QuestionID, l.Round, l.Failure, l.Samples[0].BatchID)
		}
	}
	for _, suffix := range []string{".output.jsonl", ".errors.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, BatchDir, bs[0].ID+suffix)); err != nil {
			t.Errorf("the %s file of the expired batch was not kept: %v", suffix, err)
		}
	}
}

// expiringBatches labels 80 states, one sample each, through two batches
// that both expire with the share complete of their requests answered, and
// one retry; it returns the server, the options, the run's summary and
// labels, and the labels that failed.
func expiringBatches(t *testing.T, complete float64) (*llmtest.Server, Options, Summary, []data.Label, []data.Label) {
	t.Helper()
	part := llmtest.BatchOutcome{Status: "expired", Complete: complete}
	srv := llmtest.NewServer(llmtest.Options{Answer: batchAnswer, BatchScript: []llmtest.BatchOutcome{part, part}})
	t.Cleanup(srv.Close)
	opts := batchOptions(t, srv, filepath.Join(t.TempDir(), "labels"), 1, 80)
	opts.Batch.Retries = 1
	sum, ls := runLabels(t, opts)
	var failed []data.Label
	for _, l := range ls {
		if l.Failure != "" {
			failed = append(failed, l)
		}
	}
	return srv, opts, sum, ls, failed
}

// TestBatchGivesUp: every batch expires half done and there is one retry:
// what never got an answer is recorded in its sample, and no state is lost.
func TestBatchGivesUp(t *testing.T) {
	srv, _, sum, ls, failedLabels := expiringBatches(t, 0.5)
	failed := len(failedLabels)
	for _, l := range failedLabels {
		if !strings.Contains(l.Samples[0].Error, "batch_expired") {
			t.Errorf("failed sample error %q does not say it expired", l.Samples[0].Error)
		}
	}
	if len(ls) != 80 || failed != 20 || sum.Counts.Output.Failed != 20 {
		t.Errorf("%d labels, %d failed (report %d), want 80 and 20", len(ls), failed, sum.Counts.Output.Failed)
	}
	if n := len(srv.Batches()); n != 2 {
		t.Errorf("%d batches, want 2", n)
	}
}

// TestBatchExpiryIsNotADeadServer: batches that keep expiring leave more
// states unanswered in a row than the dead-server stop allows; the run
// still ends, recording them as failed and saying they expired, and a
// resumed run sends them again.
func TestBatchExpiryIsNotADeadServer(t *testing.T) {
	_, opts, sum, ls, failedLabels := expiringBatches(t, 0.3)
	failed := len(failedLabels)
	for _, l := range failedLabels {
		if e := l.Samples[0].Error; !strings.Contains(e, "batch_expired") || !strings.Contains(e, "--resume") {
			t.Errorf("failed sample error %q does not say it expired and how to go on", e)
		}
	}
	if failed <= 20 || sum.Counts.Output.Failed != failed || len(ls) != 80 {
		t.Fatalf("%d labels, %d failed (report %d): want 80, more than the 20 in a row of the dead-server stop", len(ls), failed, sum.Counts.Output.Failed)
	}
	opts.Resume = true
	_, ls = runLabels(t, opts) // the script is spent: the next batch completes
	for _, l := range ls {
		if l.Failure != "" {
			t.Errorf("state %v still failed after --resume: %s", l.Key(), l.Failure)
		}
	}
	if len(ls) != 80 {
		t.Errorf("%d labels after --resume, want 80", len(ls))
	}
}

// TestBatchResumeInFlight kills the run (cancels it) while its batch is in
// progress; the resumed run polls the recorded batch instead of
// submitting again.
func TestBatchResumeInFlight(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Answer: batchAnswer, BatchPolls: 5})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "labels")
	opts := batchOptions(t, srv, out, 1, 50)
	ctx, cancel := context.WithCancel(t.Context())
	opts.Progress = func(p Progress) {
		if strings.Contains(p.Phase, "in_progress") {
			cancel()
		}
	}
	if _, err := Run(ctx, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v, want cancelled", err)
	}
	if _, err := os.Stat(filepath.Join(out, BatchFile)); err != nil {
		t.Fatalf("no batch recorded: %v", err)
	}
	opts = batchOptions(t, srv, out, 1, 50)
	opts.Resume = true
	_, ls := runLabels(t, opts)
	if c := srv.Counts(); c.Batches != 1 {
		t.Errorf("%d batches created, want the one picked up", c.Batches)
	}
	if len(ls) != 50 {
		t.Errorf("%d labels, want 50", len(ls))
	}
}

// TestBatchBudget submits only what fits in the budget at most cost.
func TestBatchBudget(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Answer: batchAnswer})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "labels")
	opts := batchOptions(t, srv, out, 1, 100)
	opts.BudgetUSD = 0.005 // about 8 requests at most cost
	sum, err := Run(t.Context(), opts)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("run: %v, want ErrBudget", err)
	}
	bs := srv.Batches()
	if len(bs) != 1 || bs[0].Lines == 0 || bs[0].Lines >= 100 {
		t.Fatalf("batches %+v", bs)
	}
	if sum.Counts.Run.States != bs[0].Lines || sum.CostUSD > opts.BudgetUSD {
		t.Errorf("%d states written for %d requests, cost %v of %v", sum.Counts.Run.States, bs[0].Lines, sum.CostUSD, opts.BudgetUSD)
	}
	if len(testkit.Parts(t, filepath.Join(out, PartsDir))) == 0 {
		t.Error("nothing checkpointed before the budget stop")
	}
}
