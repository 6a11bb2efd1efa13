package finetune_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/finetune"
)

// TestRecordMoves: job.json names its directory ".", so that a job's
// directory can be moved and its job read, followed and handed back from
// where it is now.
func TestRecordMoves(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "job")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := finetune.Record{
		Job:   finetune.Job{Dir: dir, BaseModel: "base", Files: finetune.Files{TrainOpenAI: "data/train.jsonl"}},
		State: finetune.State{ID: "j1", Backend: "local", Status: finetune.StatusRunning},
	}
	if err := finetune.SaveRecord(dir, want); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, finetune.JobFile))
	if strings.Contains(string(b), root) {
		t.Errorf("job.json holds an absolute path:\n%s", b)
	}
	moved := filepath.Join(root, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	got, err := finetune.LoadRecord(moved)
	if err != nil {
		t.Fatal(err)
	}
	want.Job.Dir = moved
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if p := got.Job.Path(got.Job.Files.TrainOpenAI); p != filepath.Join(moved, "data", "train.jsonl") {
		t.Errorf("a file of the moved job: got %s", p)
	}
	if _, err := finetune.LoadRecord(root); !errors.Is(err, finetune.ErrNoJob) {
		t.Errorf("no job: got %v, want ErrNoJob", err)
	}
}
