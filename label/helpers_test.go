package label

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/rollout/runner/runnertest"
)

// sampleRun is a rollout of the bundled sample with the built-in roles,
// made once per test binary: its trajectories and questions.
var sampleRun = sync.OnceValues(func() (string, error) {
	dir, err := tempDirOutsideTests()
	if err != nil {
		return "", err
	}
	return runnertest.Sample(context.Background(), dir)
})

// trajectories returns the path of the sample rollout's trajectories and
// the sample's questions by id.
func trajectories(t *testing.T) (string, data.QuestionMap) {
	t.Helper()
	path, err := sampleRun()
	if err != nil {
		t.Fatal(err)
	}
	qs := make(data.QuestionMap)
	for _, q := range synth.Sample().Questions {
		qs[q.ID] = q
	}
	return path, qs
}

// runLabels runs opts to the end and returns the summary and the labels
// (testkit.Labels), failing the test if the run fails.
func runLabels(t *testing.T, opts Options) (Summary, []data.Label) {
	t.Helper()
	sum, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return sum, testkit.Labels(t, sum.Labels)
}

// stateCount counts the states (rows of questions that did not fail) of a
// trajectories file.
func stateCount(t *testing.T, path string) int {
	t.Helper()
	rows, err := data.ReadParquet[data.State](path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range rows {
		if s.Failure == "" {
			n++
		}
	}
	return n
}

// tempDirOutsideTests makes a directory that lives as long as the test
// binary (t.TempDir would remove it after the first test).
func tempDirOutsideTests() (string, error) {
	return os.MkdirTemp("", "distill-label-test-")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if path, err := sampleRun(); err == nil {
		os.RemoveAll(filepath.Dir(filepath.Dir(path)))
	}
	os.Exit(code)
}
