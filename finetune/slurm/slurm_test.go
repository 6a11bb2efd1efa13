package slurm

import (
	"context"
	"os"
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
	"github.com/distill-rag/distill/internal/testkit"
)

// fakeSlurm puts the stand-in sbatch, squeue, sacct and scancel
// (testdata/bin) first on PATH, with a fresh queue, which it returns. Jobs
// still running when the test ends are killed.
func fakeSlurm(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	bin, queue := t.TempDir(), t.TempDir()
	for _, name := range []string{"sbatch", "squeue", "sacct", "scancel"} {
		b, err := os.ReadFile(filepath.Join("testdata", "bin", name))
		if err != nil {
			t.Fatal(err)
		}
		// Executable whatever mode the checkout gave the file.
		if err := os.WriteFile(filepath.Join(bin, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_SLURM_DIR", queue)
	return queue
}

// killJobs kills the sessions of the queue's jobs.
func killJobs(queue string) {
	pids, _ := filepath.Glob(filepath.Join(queue, "*.pid"))
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// job returns a stand-in job whose Slurm jobs are killed when the test
// ends, before its directory is removed.
func job(t *testing.T, queue, mode string) finetune.Job {
	t.Helper()
	j := trainertest.Job(t, mode)
	t.Cleanup(func() { killJobs(queue) })
	return j
}

func standIn() *Backend {
	return New(Options{Trainer: trainer.Options{Command: trainertest.Command()}})
}

func TestConformance(t *testing.T) {
	queue := fakeSlurm(t)
	finetunetest.Run(t, finetunetest.Harness{
		New: func(t *testing.T) finetune.Backend { return standIn() },
		Job: func(t *testing.T, s finetunetest.Scenario) finetune.Job { return job(t, queue, s.String()) },
	})
}

func TestSbatchScript(t *testing.T) {
	b := New(Options{
		Partition: "gpu", Account: "nlp", GPUs: 2, Time: "12:00:00", CPUs: 8, Mem: "64G",
		ExtraSBATCH: []string{"--constraint=h100", "#SBATCH --qos=high"},
	})
	job := finetune.Job{Dir: "/scratch/distill/judge 100%", Name: "s2g judge/v1"}
	plan := trainer.Plan{
		Kind: trainer.TRL, Config: trainer.TRLConfigFile,
		Command:   []string{"python3", trainer.TRLScriptFile, trainer.TRLConfigFile},
		Env:       []string{"PYTHONUNBUFFERED=1", "DISTILL_TRAIN_CONFIG=train_config.json", "DISTILL_OUTPUT_DIR=adapter"},
		OutputDir: trainer.AdapterDir,
	}
	if _, err := b.sbatchScript(job, plan); err == nil || !strings.Contains(err.Error(), "white space") {
		t.Errorf("a directory with a space: got %v, want an error", err)
	}
	job.Dir = "/scratch/distill/judge-100%"
	got, err := b.sbatchScript(job, plan)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "job.sbatch", got)

	// The defaults ask for one GPU and leave the rest to the cluster.
	got, err = New(Options{}).sbatchScript(job, plan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "#SBATCH --gres=gpu:1\n") || strings.Contains(got, "--time") || strings.Contains(got, "--mem") {
		t.Errorf("default directives:\n%s", got)
	}
	if got, _ := New(Options{GPUs: -1}).sbatchScript(job, plan); strings.Contains(got, "--gres") {
		t.Errorf("GPUs -1 asks for GPUs:\n%s", got)
	}
	if _, err := New(Options{ExtraSBATCH: []string{"--a\n--b"}}).sbatchScript(job, plan); err == nil {
		t.Error("an extra directive of two lines: no error")
	}
}

func TestParseSbatch(t *testing.T) {
	for _, tc := range []struct {
		out, id, cluster string
		ok               bool
	}{
		{"12345\n", "12345", "", true},
		{"12345;gpucluster\n", "12345", "gpucluster", true},
		{"sbatch: warning: something\n678\n", "678", "", true},
		{"Submitted batch job 12345\n", "12345", "", true},
		{"", "", "", false},
		{"abc;x\n", "", "", false},
	} {
		id, cluster, err := parseSbatch(tc.out)
		if (err == nil) != tc.ok || id != tc.id || cluster != tc.cluster {
			t.Errorf("parseSbatch(%q): got %q, %q, %v; want %q, %q, ok %v", tc.out, id, cluster, err, tc.id, tc.cluster, tc.ok)
		}
	}
}

func TestClassify(t *testing.T) {
	for state, want := range map[string]finetune.Status{
		"PENDING": finetune.StatusQueued, "CONFIGURING": finetune.StatusQueued, "REQUEUED": finetune.StatusQueued,
		"RUNNING": finetune.StatusRunning, "COMPLETING": finetune.StatusRunning, "SUSPENDED": finetune.StatusRunning,
		"COMPLETED": finetune.StatusSucceeded,
		"FAILED":    finetune.StatusFailed, "TIMEOUT": finetune.StatusFailed, "OUT_OF_MEMORY": finetune.StatusFailed,
		"NODE_FAIL": finetune.StatusFailed, "PREEMPTED": finetune.StatusFailed,
		"CANCELLED": finetune.StatusCancelled, "CANCELLED by 1000": finetune.StatusCancelled, "CANCELLED+": finetune.StatusCancelled,
		"": "", "WEIRD": "",
	} {
		if got := classify(state); got != want {
			t.Errorf("classify(%q): got %q, want %q", state, got, want)
		}
	}
}

// TestStates: what Status makes of each state Slurm may give an ended or
// waiting job (queue files written by hand, no process).
func TestStates(t *testing.T) {
	queue := fakeSlurm(t)
	for i, tc := range []struct {
		state, exit string
		adapter     bool
		want        finetune.Status
		message     string
	}{
		{"PENDING", "", false, finetune.StatusQueued, ""},
		{"CONFIGURING", "", false, finetune.StatusQueued, ""},
		{"RUNNING", "", false, finetune.StatusRunning, ""},
		{"COMPLETING", "", false, finetune.StatusRunning, ""},
		{"COMPLETED", "0:0", true, finetune.StatusSucceeded, ""},
		{"COMPLETED", "0:0", false, finetune.StatusFailed, "no adapter_config.json"},
		{"FAILED", "1:0", false, finetune.StatusFailed, "ended FAILED (exit code 1:0)"},
		{"TIMEOUT", "0:0", true, finetune.StatusFailed, "ended TIMEOUT"},
		{"OUT_OF_MEMORY", "0:125", false, finetune.StatusFailed, "ended OUT_OF_MEMORY"},
		{"NODE_FAIL", "0:0", false, finetune.StatusFailed, "ended NODE_FAIL"},
		{"CANCELLED by 1000", "0:15", false, finetune.StatusCancelled, "cancelled"},
	} {
		id := strconv.Itoa(5000 + i)
		t.Run(tc.state+map[bool]string{true: "+adapter"}[tc.adapter], func(t *testing.T) {
			j := job(t, queue, trainertest.Succeed)
			os.WriteFile(filepath.Join(queue, id+".state"), []byte(tc.state+"\n"), 0o644)
			if tc.exit != "" {
				os.WriteFile(filepath.Join(queue, id+".exit"), []byte(tc.exit+"\n"), 0o644)
			}
			os.WriteFile(j.Path(trainer.LogFile), []byte("DISTILL_PROGRESS {\"step\": 2, \"total_steps\": 9, \"loss\": 0.7}\n"), 0o644)
			if tc.adapter {
				dir := j.Path(trainer.AdapterDir)
				os.Mkdir(dir, 0o755)
				os.WriteFile(filepath.Join(dir, trainer.AdapterConfigFile), []byte(`{"r": 16, "lora_alpha": 32}`), 0o644)
				os.WriteFile(filepath.Join(dir, trainer.AdapterWeightsFile), []byte("w"), 0o644)
			}
			st := finetune.State{Backend: Name, ID: id, Status: finetune.StatusQueued, LogPath: trainer.LogFile}
			got, err := standIn().Status(t.Context(), j, st)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want || !strings.Contains(got.Message, tc.message) {
				t.Errorf("status %q (%s), want %q saying %q", got.Status, got.Message, tc.want, tc.message)
			}
			if got.Step != 2 || got.TotalSteps != 9 || got.Loss != 0.7 {
				t.Errorf("progress %d/%d loss %v, want 2/9 0.7 from the log", got.Step, got.TotalSteps, got.Loss)
			}
			if (got.Result != nil) != (tc.want == finetune.StatusSucceeded) {
				t.Errorf("result %+v with status %q", got.Result, got.Status)
			}
			if got.Data[keyState] != tc.state {
				t.Errorf("recorded state %q, want %q", got.Data[keyState], tc.state)
			}
		})
	}
}

func TestUnknownJob(t *testing.T) {
	fakeSlurm(t)
	j := trainertest.Job(t, trainertest.Succeed)
	_, err := standIn().Status(t.Context(), j, finetune.State{Backend: Name, ID: "999999", Status: finetune.StatusRunning})
	if err == nil || !strings.Contains(err.Error(), "Invalid job id") {
		t.Errorf("got %v, want an error with squeue's answer", err)
	}
}

// TestNoAccounting: where sacct fails, the exit status the script
// recorded says how the job ended.
func TestNoAccounting(t *testing.T) {
	queue := fakeSlurm(t)
	t.Setenv("FAKE_SLURM_NO_ACCOUNTING", "1")
	for _, tc := range []struct {
		mode    string
		want    finetune.Status
		message string
	}{
		{trainertest.Succeed, finetune.StatusSucceeded, ""},
		{trainertest.Fail, finetune.StatusFailed, "ended FAILED (exit code 1:0)"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			j := job(t, queue, tc.mode)
			st := follow(t, j, submit(t, j))
			if st.Status != tc.want || !strings.Contains(st.Message, tc.message) {
				t.Errorf("status %q (%s), want %q saying %q", st.Status, st.Message, tc.want, tc.message)
			}
		})
	}
}

func submit(t *testing.T, j finetune.Job) finetune.State {
	t.Helper()
	st, err := standIn().Submit(t.Context(), j)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return st
}

func follow(t *testing.T, j finetune.Job, st finetune.State) finetune.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := finetune.Follow(ctx, standIn(), j, st, finetune.FollowOptions{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("follow: %v", err)
	}
	return st
}

func TestFailMessage(t *testing.T) {
	queue := fakeSlurm(t)
	j := job(t, queue, trainertest.Fail)
	st := follow(t, j, submit(t, j))
	for _, want := range []string{"ended FAILED (exit code 1:0)", "CUDA out of memory"} {
		if !strings.Contains(st.Message, want) {
			t.Errorf("message %q: want it to say %q", st.Message, want)
		}
	}
}

func TestCluster(t *testing.T) {
	queue := fakeSlurm(t)
	t.Setenv("FAKE_SLURM_CLUSTER", "gpucluster")
	j := job(t, queue, trainertest.Succeed)
	st := submit(t, j)
	if st.Data[keyCluster] != "gpucluster" {
		t.Errorf("cluster %q, want gpucluster", st.Data[keyCluster])
	}
	if st = follow(t, j, st); st.Status != finetune.StatusSucceeded {
		t.Errorf("status %q (%s), want succeeded", st.Status, st.Message)
	}
}

// TestCancel kills a running job's whole session, and cancels a job
// before it runs.
func TestCancel(t *testing.T) {
	queue := fakeSlurm(t)
	j := job(t, queue, trainertest.Slow)
	st := submit(t, j)
	if st.Status != finetune.StatusQueued {
		t.Errorf("submitted: %q, want queued", st.Status)
	}
	var pid int
	trainertest.WaitFor(t, "the slow stand-in's grandchild", func() bool {
		var err error
		if pid, err = trainertest.Grandchild(j); err != nil {
			t.Fatal(err)
		}
		return pid > 0
	})
	st, err := standIn().Cancel(t.Context(), j, st)
	if err != nil || st.Status != finetune.StatusCancelled {
		t.Fatalf("cancel: %q, %v", st.Status, err)
	}
	// scancel is asynchronous: the job goes soon after.
	trainertest.WaitFor(t, "the grandchild to end", func() bool { return syscall.Kill(pid, 0) != nil || zombie(pid) })

	j2 := job(t, queue, trainertest.Slow)
	st = submit(t, j2)
	st, err = standIn().Cancel(t.Context(), j2, st)
	if err != nil || st.Status != finetune.StatusCancelled {
		t.Fatalf("cancel queued: %q, %v", st.Status, err)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}
