package pysbd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePython writes an executable that stands in for Python: a shell
// script, for the faults a real pysbd process cannot be made to show.
func fakePython(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStartRefused: an interpreter that cannot run, or runs without
// pysbd, is refused at Start with the reason.
func TestStartRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-python")
	if _, err := Start(t.Context(), missing); err == nil || !strings.Contains(err.Error(), "no-python") {
		t.Errorf("a missing interpreter: got %v, want an error naming it", err)
	}
	if _, err := Start(t.Context(), ""); err == nil {
		t.Error("no interpreter: no error")
	}
	silent := fakePython(t, "echo 'Traceback: boom' >&2; exit 1")
	if _, err := Start(t.Context(), silent); err == nil || !strings.Contains(err.Error(), "process ended") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("an interpreter that dies: got %v, want the end and its standard error", err)
	}
	// A Python without pysbd (the test's venv-less python3, when there is one).
	if python, err := exec.LookPath("python3"); err == nil && exec.Command(python, "-c", "import pysbd").Run() != nil {
		if _, err := Start(t.Context(), python); err == nil || !strings.Contains(err.Error(), "pysbd is not installed") {
			t.Errorf("python3 without pysbd: got %v, want it said", err)
		}
	}
}

// TestSplitFaults: a process that dies or answers what cannot be read
// fails the split, and every later one, with the reason; an answer of the
// wrong length is refused.
func TestSplitFaults(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
		sticky           bool
	}{
		{"dies", `echo '{"pysbd": "0.3.4"}'; read line; echo 'killed' >&2; exit 3`, "process ended", true},
		{"garbage", `echo '{"pysbd": "0.3.4"}'; read line; echo 'not json'; sleep 1`, "unreadable answer", true},
		{"error answered", `echo '{"pysbd": "0.3.4"}'; read line; echo '{"error": "ValueError: bad"}'; read line`, "ValueError: bad", false},
		{"wrong length", `echo '{"pysbd": "0.3.4"}'; read line; echo '{"sentences": []}'; read line`, "1 texts sent, 0 split", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(t.Context(), fakePython(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Name() != "pysbd 0.3.4" {
				t.Errorf("name %q", s.Name())
			}
			if _, err := s.Split([]string{"One. Two."}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
			if tt.sticky {
				if _, err := s.Split([]string{"Three."}); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("the next split: got %v, want the same failure", err)
				}
			}
		})
	}
}
