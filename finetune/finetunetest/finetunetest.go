// Package finetunetest is the conformance suite of fine-tuning backends:
// every implementation of finetune.Backend runs Run in its tests.
package finetunetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/distill-rag/distill/finetune"
)

// Scenario is what a job of the suite must do.
type Scenario int

const (
	// Succeed: the job trains and succeeds quickly.
	Succeed Scenario = iota
	// Fail: the job fails (the trainer exits with an error, the provider
	// reports it failed).
	Fail
	// Slow: the job runs until cancelled (at least a minute).
	Slow
)

func (s Scenario) String() string {
	return [...]string{"succeed", "fail", "slow"}[s]
}

// Harness connects the suite to a backend.
type Harness struct {
	// New returns a backend; the suite calls it again to stand for another
	// process that finds the job from its recorded state.
	New func(t *testing.T) finetune.Backend
	// Job returns a job of the scenario, in a fresh directory, with its
	// data exported.
	Job func(t *testing.T, s Scenario) finetune.Job
	// Interval is how often to poll (default 20ms).
	Interval time.Duration
	// Timeout bounds each scenario (default 60s).
	Timeout time.Duration
	// Synchronous says the backend's jobs end within Submit: the suite
	// then checks that Cancel leaves an ended job as it is instead of
	// cancelling a slow one.
	Synchronous bool
}

// Run checks the backend contract (see finetune.Backend).
func Run(t *testing.T, h Harness) {
	if h.Interval == 0 {
		h.Interval = 20 * time.Millisecond
	}
	if h.Timeout == 0 {
		h.Timeout = 60 * time.Second
	}
	t.Run("succeed", h.succeed)
	t.Run("fail", h.fail)
	t.Run("cancel", h.cancel)
}

// follow follows a job to its end.
func (h Harness) follow(t *testing.T, ctx context.Context, b finetune.Backend, job finetune.Job, st finetune.State) finetune.State {
	t.Helper()
	st, err := finetune.Follow(ctx, b, job, st, finetune.FollowOptions{Interval: h.Interval})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	return st
}

// submit submits a job, checks its first state and records it.
func (h Harness) submit(t *testing.T, ctx context.Context, b finetune.Backend, job finetune.Job) finetune.State {
	t.Helper()
	st, err := b.Submit(ctx, job)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if st.ID == "" || st.Backend != b.Name() || st.Status == "" {
		t.Fatalf("submitted state %+v: want an id, backend %q and a status", st, b.Name())
	}
	if err := finetune.SaveRecord(job.Dir, finetune.Record{Job: job, State: st}); err != nil {
		t.Fatal(err)
	}
	return st
}

// succeed: a job that succeeds, followed by another process from its
// record, has a result and a log, and is left as it is by Cancel.
func (h Harness) succeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), h.Timeout)
	defer cancel()
	b, job := h.New(t), h.Job(t, Succeed)
	st := h.submit(t, ctx, b, job)
	// Another process follows it from the record.
	rec, err := finetune.LoadRecord(job.Dir)
	if err != nil {
		t.Fatal(err)
	}
	other := h.New(t)
	st = h.follow(t, ctx, other, rec.Job, rec.State)
	if st.Status != finetune.StatusSucceeded {
		t.Fatalf("status %q (%s), want succeeded", st.Status, st.Message)
	}
	if st.Result == nil || (st.Result.FineTunedModel == "" && st.Result.AdapterDir == "" && st.Result.ModelFile == "") {
		t.Fatalf("succeeded without a result: %+v", st.Result)
	}
	for _, p := range []string{st.Result.AdapterDir, st.Result.ModelFile} {
		if p != "" {
			if _, err := os.Stat(job.Path(p)); err != nil {
				t.Errorf("result %s: %v", p, err)
			}
		}
	}
	if st.LogPath == "" {
		t.Error("no log")
	} else if fi, err := os.Stat(job.Path(st.LogPath)); err != nil || fi.Size() == 0 {
		t.Errorf("log %s: empty or missing (%v)", st.LogPath, err)
	}
	again, err := other.Status(ctx, job, st)
	if err != nil || again.Status != finetune.StatusSucceeded {
		t.Errorf("status of a finished job: %q, %v", again.Status, err)
	}
	after, err := other.Cancel(ctx, job, st)
	if err != nil || after.Status != finetune.StatusSucceeded {
		t.Errorf("cancel of a succeeded job: %q, %v; want it unchanged", after.Status, err)
	}
}

// fail: a job that fails says why, has no result, and is left as it is by
// Cancel.
func (h Harness) fail(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), h.Timeout)
	defer cancel()
	b, job := h.New(t), h.Job(t, Fail)
	st := h.follow(t, ctx, b, job, h.submit(t, ctx, b, job))
	if st.Status != finetune.StatusFailed || st.Message == "" {
		t.Fatalf("status %q, message %q: want failed with a reason", st.Status, st.Message)
	}
	if st.Result != nil {
		t.Errorf("a failed job has a result: %+v", st.Result)
	}
	if after, err := b.Cancel(ctx, job, st); err != nil || after.Status != finetune.StatusFailed {
		t.Errorf("cancel of a failed job: %q, %v", after.Status, err)
	}
}

// cancel: a slow job cancelled by another process ends cancelled, and a
// second Cancel changes nothing.
func (h Harness) cancel(t *testing.T) {
	if h.Synchronous {
		t.Skip("the backend's jobs end within Submit; cancelling an ended job is checked by succeed and fail")
	}
	ctx, cancel := context.WithTimeout(t.Context(), h.Timeout)
	defer cancel()
	b, job := h.New(t), h.Job(t, Slow)
	st := h.submit(t, ctx, b, job)
	// Wait until it runs (or is queued), then cancel from another
	// process.
	for deadline := time.Now().Add(h.Timeout / 2); ; {
		next, err := b.Status(ctx, job, st)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		st = next
		if st.Status.Terminal() {
			t.Fatalf("a slow job ended: %q %s", st.Status, st.Message)
		}
		if st.Status == finetune.StatusRunning || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(h.Interval):
		}
	}
	other := h.New(t)
	st, err := other.Cancel(ctx, job, st)
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	st = h.follow(t, ctx, other, job, st)
	if st.Status != finetune.StatusCancelled {
		t.Fatalf("after cancel: %q, want cancelled", st.Status)
	}
	again, err := other.Cancel(ctx, job, st)
	if err != nil || again.Status != finetune.StatusCancelled {
		t.Errorf("second cancel: %q, %v; want cancelled, no error", again.Status, err)
	}
}
