package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/finetunetest"
	"github.com/distill-rag/distill/finetune/trainer"
	"github.com/distill-rag/distill/finetune/trainer/trainertest"
)

// submitEnv names the job directory in which the test binary, started
// again by TestReattach, submits the job recorded there and exits.
const submitEnv = "DISTILL_LOCAL_TEST_SUBMIT"

func TestMain(m *testing.M) {
	if dir := os.Getenv(submitEnv); dir != "" {
		if err := submitRecorded(dir); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func submitRecorded(dir string) error {
	rec, err := finetune.LoadRecord(dir)
	if err != nil {
		return err
	}
	st, err := standIn(0).Submit(context.Background(), rec.Job)
	if err != nil {
		return err
	}
	return finetune.SaveRecord(dir, finetune.Record{Job: rec.Job, State: st})
}

// standIn returns the backend running the stand-in trainer.
func standIn(grace time.Duration) *Backend {
	return New(Options{Trainer: trainer.Options{Command: trainertest.Command()}, Grace: grace})
}

// job returns a stand-in job whose processes are stopped when the test
// ends, before its directory is removed.
func job(t *testing.T, mode string) finetune.Job {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	j := trainertest.Job(t, mode)
	t.Cleanup(func() {
		rec, err := finetune.LoadRecord(j.Dir)
		if err != nil || rec.State.Status.Terminal() {
			return
		}
		if p, err := procOf(rec.State); err == nil {
			p.signal(syscall.SIGKILL)
		}
	})
	return j
}

// save records the state as the caller of a backend does.
func save(t *testing.T, j finetune.Job, st finetune.State) {
	t.Helper()
	if err := finetune.SaveRecord(j.Dir, finetune.Record{Job: j, State: st}); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	finetunetest.Run(t, finetunetest.Harness{
		New: func(t *testing.T) finetune.Backend { return standIn(2 * time.Second) },
		Job: func(t *testing.T, s finetunetest.Scenario) finetune.Job { return job(t, s.String()) },
	})
}

func follow(t *testing.T, b finetune.Backend, j finetune.Job, st finetune.State) finetune.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := finetune.Follow(ctx, b, j, st, finetune.FollowOptions{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	return st
}

func submit(t *testing.T, b *Backend, j finetune.Job) finetune.State {
	t.Helper()
	st, err := b.Submit(t.Context(), j)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	save(t, j, st)
	return st
}

func TestSucceed(t *testing.T) {
	j := job(t, trainertest.Succeed)
	st := follow(t, standIn(0), j, submit(t, standIn(0), j))
	if st.Status != finetune.StatusSucceeded {
		t.Fatalf("status %q (%s), want succeeded", st.Status, st.Message)
	}
	if st.Step != 3 || st.TotalSteps != 3 || st.Loss != 1.3 {
		t.Errorf("progress %d/%d, loss %v; want 3/3, 1.3", st.Step, st.TotalSteps, st.Loss)
	}
	if st.Result.AdapterDir != trainer.AdapterDir || st.Result.Metrics["train_loss"] != 1.2 || st.Result.Metrics["eval_loss"] != 1.1 {
		t.Errorf("result %+v", st.Result)
	}
	if err := trainer.CheckAdapter(j.Path(st.Result.AdapterDir)); err != nil {
		t.Error(err)
	}
	if st.FinishedAt.IsZero() || st.Data[keyHost] == "" || st.Data[keyPID] != st.ID {
		t.Errorf("state %+v: want a finish time, the host and the process", st)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, trainer.ScriptFile)); err != nil {
		t.Errorf("the script is not left for people to read: %v", err)
	}
}

func TestFailMessage(t *testing.T) {
	j := job(t, trainertest.Fail)
	st := follow(t, standIn(0), j, submit(t, standIn(0), j))
	if st.Status != finetune.StatusFailed {
		t.Fatalf("status %q, want failed", st.Status)
	}
	for _, want := range []string{"exited with status 1", "CUDA out of memory"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("message %q: want it to say %q", st.Message, want)
		}
	}
	if st.Step != 1 || st.Loss != 2.5 {
		t.Errorf("progress %d, loss %v; want 1, 2.5", st.Step, st.Loss)
	}
}

func TestNoAdapter(t *testing.T) {
	j := job(t, trainertest.Succeed)
	b := New(Options{Trainer: trainer.Options{Command: []string{"true"}}})
	st := follow(t, b, j, submit(t, b, j))
	if st.Status != finetune.StatusFailed || !strings.Contains(st.Message, "status 0 but adapter") {
		t.Errorf("status %q (%s): want failed for want of an adapter", st.Status, st.Message)
	}
}

func TestSubmitBadJob(t *testing.T) {
	j := job(t, trainertest.Succeed)
	j.Files.TrainParquet = "missing.parquet"
	if _, err := standIn(0).Submit(t.Context(), j); err == nil || !strings.Contains(err.Error(), "missing.parquet") {
		t.Errorf("got %v, want an error about the missing data", err)
	}
}

// gone reports whether process pid has ended (a zombie has).
func gone(pid int) bool {
	st, err := readStat(pid)
	if err == nil {
		return st.state == "Z" || st.state == "X"
	}
	return syscall.Kill(pid, 0) != nil
}

// grandchild waits for the stand-in's grandchild and returns its pid.
func grandchild(t *testing.T, j finetune.Job) int {
	t.Helper()
	var pid int
	trainertest.WaitFor(t, "the grandchild", func() bool {
		var err error
		pid, err = trainertest.Grandchild(j)
		if err != nil {
			t.Fatal(err)
		}
		return pid > 0
	})
	if gone(pid) {
		t.Fatalf("grandchild %d is not running", pid)
	}
	return pid
}

func TestCancelKillsGroup(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		grace time.Duration
	}{
		{trainertest.Slow, 10 * time.Second},
		// Everything ignores SIGTERM: SIGKILL after the grace.
		{trainertest.Stubborn, 100 * time.Millisecond},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			j := job(t, tc.mode)
			b := standIn(tc.grace)
			st := submit(t, b, j)
			pid := grandchild(t, j)
			st, err := b.Cancel(t.Context(), j, st)
			if err != nil {
				t.Fatal(err)
			}
			save(t, j, st)
			if st.Status != finetune.StatusCancelled || st.Data[keyCancel] == "" {
				t.Fatalf("status %q (%s), data %v: want cancelled, the request recorded", st.Status, st.Message, st.Data)
			}
			if !gone(pid) {
				t.Errorf("grandchild %d outlived the cancel", pid)
			}
			if alive, err := (proc{pid: pidOf(t, st)}).alive(); alive || err != nil {
				t.Errorf("group alive %v (%v) after the cancel", alive, err)
			}
			again, err := b.Cancel(t.Context(), j, st)
			if err != nil || again.Status != finetune.StatusCancelled {
				t.Errorf("second cancel: %q, %v", again.Status, err)
			}
		})
	}
}

// TestStatusKillsLate: a trainer that ignored SIGTERM for longer than the
// grace is killed by Status, which then reports it cancelled.
func TestStatusKillsLate(t *testing.T) {
	j := job(t, trainertest.Stubborn)
	b := standIn(time.Hour)
	st := submit(t, b, j)
	pid := grandchild(t, j)
	p, err := procOf(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st.Data[keyCancel] = time.Now().Add(-2 * time.Hour).Format(time.RFC3339Nano) // a Cancel long ago
	st, err = b.Status(t.Context(), j, st)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != finetune.StatusRunning || !strings.Contains(st.Message, "cancel requested") {
		t.Errorf("status %q (%s): want running, cancel requested", st.Status, st.Message)
	}
	st = follow(t, New(Options{Grace: time.Hour}), j, st)
	if st.Status != finetune.StatusCancelled {
		t.Errorf("status %q, want cancelled", st.Status)
	}
	if !gone(pid) {
		t.Errorf("grandchild %d outlived the kill", pid)
	}
}

func pidOf(t *testing.T, st finetune.State) int {
	t.Helper()
	pid, err := strconv.Atoi(st.Data[keyPID])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestReattach: another process submits, exits, and this one follows the
// job from its record, and cancels it.
func TestReattach(t *testing.T) {
	for _, mode := range []string{trainertest.Succeed, trainertest.Slow} {
		t.Run(mode, func(t *testing.T) {
			j := job(t, mode)
			save(t, j, finetune.State{})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			// (The race detector's 1s pause at exit is not needed.)
			cmd.Env = append(os.Environ(), submitEnv+"="+j.Dir, "GORACE=atexit_sleep_ms=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("submit in another process: %v\n%s", err, out)
			}
			rec, err := finetune.LoadRecord(j.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec.State.Backend != Name || rec.State.Status != finetune.StatusRunning {
				t.Fatalf("recorded state %+v", rec.State)
			}
			b := standIn(time.Second)
			if mode == trainertest.Succeed {
				if st := follow(t, b, rec.Job, rec.State); st.Status != finetune.StatusSucceeded {
					t.Errorf("status %q (%s), want succeeded", st.Status, st.Message)
				}
				return
			}
			pid := grandchild(t, j)
			st, err := b.Status(t.Context(), rec.Job, rec.State)
			if err != nil || st.Status != finetune.StatusRunning {
				t.Fatalf("status %q (%v), want running", st.Status, err)
			}
			st, err = b.Cancel(t.Context(), rec.Job, st)
			if err != nil || st.Status != finetune.StatusCancelled {
				t.Fatalf("cancel: %q (%s), %v; want cancelled", st.Status, st.Message, err)
			}
			save(t, j, st)
			if !gone(pid) {
				t.Errorf("grandchild %d outlived the cancel", pid)
			}
		})
	}
}

// TestProcessIdentity: a recorded process group is recognised by its
// start time and boot id, and looked for only on its host.
func TestProcessIdentity(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	ticks, boot := identify(pid)
	if ticks == "" || boot == "" {
		t.Fatalf("identify: start %q, boot %q", ticks, boot)
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name string
		p    proc
		want bool
	}{
		{"same", proc{pid: pid, ticks: ticks, boot: boot}, true},
		{"unknown start", proc{pid: pid}, true},
		{"reused pid", proc{pid: pid, ticks: ticks + "0", boot: boot}, false},
		{"rebooted", proc{pid: pid, ticks: ticks, boot: "another-boot"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.p.alive()
			if err != nil || got != tc.want {
				t.Errorf("alive: got %v (%v), want %v", got, err, tc.want)
			}
		})
	}

	// A State for that process, on this host and on another.
	j := job(t, trainertest.Succeed)
	st := finetune.State{Backend: Name, ID: strconv.Itoa(pid), Status: finetune.StatusRunning, LogPath: trainer.LogFile,
		Data: map[string]string{keyPID: strconv.Itoa(pid), keyTicks: ticks, keyBoot: boot, keyHost: host}}
	if got, err := New(Options{}).Status(t.Context(), j, st); err != nil || got.Status != finetune.StatusRunning {
		t.Errorf("status %q, %v; want running", got.Status, err)
	}
	st.Data[keyTicks] = ticks + "0"
	got, err := New(Options{}).Status(t.Context(), j, st)
	if err != nil || got.Status != finetune.StatusFailed || !strings.Contains(got.Message, "without an exit status") {
		t.Errorf("a reused pid: status %q (%s), %v; want failed, killed", got.Status, got.Message, err)
	}
	st.Data[keyTicks], st.Data[keyHost] = ticks, "elsewhere.example"
	if _, err := New(Options{}).Status(t.Context(), j, st); err == nil || !strings.Contains(err.Error(), "elsewhere.example") {
		t.Errorf("another host: got %v, want an error naming it", err)
	}
	// The exit status, on a shared file system, is read from anywhere.
	os.WriteFile(filepath.Join(j.Dir, trainer.ExitFile), []byte("2\n"), 0o644)
	if got, err := New(Options{}).Status(t.Context(), j, st); err != nil || got.Status != finetune.StatusFailed {
		t.Errorf("exited on another host: status %q, %v; want failed", got.Status, err)
	}
}
