package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScoreCommand(t *testing.T) {
	dir := t.TempDir()
	questions := filepath.Join(dir, "dev.jsonl")
	predictions := filepath.Join(dir, "pred.jsonl")
	badPredictions := filepath.Join(dir, "bad.jsonl")
	for path, content := range map[string]string{
		questions: `{"id": "a", "question": "?", "golden_answers": ["Paris"]}
{"id": "b", "question": "?", "golden_answers": ["the"]}
{"id": "c", "question": "?", "golden_answers": ["yes"]}
`,
		predictions:    `{"id": "a", "prediction": "paris"}` + "\n" + `{"id": "b", "prediction": ""}` + "\n" + `{"id": "x", "prediction": "?"}` + "\n",
		badPredictions: `{"id": "a", "pred": "paris"}` + "\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	r := runDistill(t, "score", "--questions", questions, "--format", "flashrag", "--predictions", predictions)
	if r.code != 0 {
		t.Fatalf("score: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"EM:", "66.67", "missing:", "extra ids:", "x", "scoring:", "reference"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("score output %q lacks %q", r.stdout, want)
		}
	}

	r = runDistill(t, "score", "--questions", questions, "--format", "flashrag", "--predictions", predictions, "--per-question", "--scoring", "squad")
	if r.code != 0 {
		t.Fatalf("score --per-question: exit %d, stderr %q", r.code, r.stderr)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, m)
	}
	want := []map[string]any{
		{"id": "a", "em": 1.0, "f1": 1.0},
		{"id": "b", "em": 1.0, "f1": 0.0},
		{"id": "c", "em": 0.0, "f1": 0.0, "missing": true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-question lines mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.stderr, "EM:") || !strings.Contains(r.stderr, "squad") {
		t.Errorf("with --per-question the summary should go to stderr: got %q", r.stderr)
	}

	r = runDistill(t, "score", "--questions", questions, "--format", "flashrag", "--predictions", predictions, "--json")
	var sum struct {
		Questions int     `json:"questions"`
		F1        float64 `json:"f1"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || r.code != 0 || sum.Questions != 3 {
		t.Errorf("score --json: exit %d, stdout %q (%v); want a JSON summary of 3 questions", r.code, r.stdout, err)
	}

	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no format", []string{"--questions", questions, "--predictions", predictions}, 2, "--format"},
		{"no predictions", []string{"--questions", questions}, 2, "--predictions"},
		{"bad scoring", []string{"--questions", questions, "--format", "flashrag", "--predictions", predictions, "--scoring", "v2"}, 2, "scoring"},
		{"bad prediction", []string{"--questions", questions, "--format", "flashrag", "--predictions", badPredictions}, 1, `field "pred"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runDistill(t, append([]string{"score"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
}
