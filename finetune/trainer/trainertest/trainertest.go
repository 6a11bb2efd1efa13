// Package trainertest helps test the backends that run trainers (local,
// slurm) without a GPU: a stand-in trainer, a POSIX sh script that prints
// progress as train_sft.py does and writes a PEFT-like adapter, and jobs
// that tell it what to do.
package trainertest

import (
	_ "embed"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/judge"
)

//go:embed standin.sh
var standIn string

// The modes of the stand-in trainer (see Job).
const (
	Succeed = "succeed" // three quick steps and an adapter; exit 0
	Fail    = "fail"    // a step and a traceback; exit 1
	// Slow runs for over a minute, with a grandchild process in its
	// process group (see Grandchild).
	Slow = "slow"
	// Stubborn is Slow, ignoring SIGTERM.
	Stubborn = "stubborn"
)

// Command is the stand-in trainer's command line, for
// trainer.Options.Command. It needs sh; it runs in the job directory.
func Command() []string {
	return []string{"sh", "-c", standIn, "stand-in-trainer"}
}

// Job returns a job in a fresh directory, with placeholder data files (the
// stand-in reads none of them) and the method's hyper-parameters, whose
// stand-in trainer does what mode says: one of Succeed, Fail, Slow and
// Stubborn, or a finetunetest.Scenario's String.
func Job(t testing.TB, mode string) finetune.Job {
	t.Helper()
	dir := t.TempDir()
	files := finetune.Files{
		TrainOpenAI: "train.jsonl", ValOpenAI: "val.jsonl",
		TrainShareGPT: "train.json", ValShareGPT: "val.json", DatasetInfo: "dataset_info.json",
		TrainParquet: "train.parquet", ValParquet: "val.parquet",
		Split: judge.Split{TrainExamples: 1, ValExamples: 1},
	}
	for _, name := range []string{
		files.TrainOpenAI, files.ValOpenAI, files.TrainShareGPT, files.ValShareGPT,
		files.DatasetInfo, files.TrainParquet, files.ValParquet,
	} {
		write(t, filepath.Join(dir, name), "placeholder\n")
	}
	write(t, filepath.Join(dir, "standin.mode"), mode+"\n")
	return finetune.Job{
		Dir:       dir,
		BaseModel: "stand-in/Llama-3.2-3B-Instruct",
		Name:      "s2g-judge",
		Files:     files,
		Hyper:     finetune.DefaultHyperparameters(),
	}
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Grandchild returns the process id of the grandchild that a Slow or
// Stubborn stand-in started in job's directory, or 0 while there is none.
func Grandchild(job finetune.Job) (int, error) {
	b, err := os.ReadFile(filepath.Join(job.Dir, "grandchild.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// WaitFor polls cond until it holds, for at most 10s: the stand-in
// trainer runs as a process of its own, which the test can only watch.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
