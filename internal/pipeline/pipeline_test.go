package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeFlags takes every flag but those named "bogus", and global flags
// only "log-level".
type fakeFlags struct{}

func (fakeFlags) Has(command []string, name string) bool {
	if command == nil {
		return name == "log-level"
	}
	return name != "bogus" && name != "log-level"
}

func (fakeFlags) TakesFile(_ []string, name string) bool { return name == "in" || name == "corpus" }

const sampleSpec = `
root: ROOT
all: {log-level: debug, cache: ROOT/../cache}
datasets:
  a: {import: {dataset: sample}}
  b: {synth: {seed: 7, count: 20}, rollout: {limit: 5}}
training: [a, b]
evaluation: b
rollout: {policy: fixed, limit: 10}
label: {teacher: retrieval-truth}
bench: {variants: [full, no-sft]}
`

func writeSpec(t *testing.T, text string) (Spec, string) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(text, "ROOT", root)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

func TestPlan(t *testing.T) {
	s, root := writeSpec(t, sampleSpec)
	stages, err := Plan(s, fakeFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range stages {
		got = append(got, strings.ReplaceAll(strings.Join(st.CommandLine(), " "), root, "R"))
	}
	want := []string{
		"--log-level=debug data import --cache=R/../cache --dataset=sample --out=R/data/a",
		"--log-level=debug data synth --cache=R/../cache --count=20 --seed=7 --out=R/data/b",
		"--log-level=debug index --cache=R/../cache --corpus=R/data/a/corpus.parquet --out=R/index/a",
		"--log-level=debug index --cache=R/../cache --corpus=R/data/b/corpus.parquet --out=R/index/b",
		"--log-level=debug rollout --cache=R/../cache --limit=10 --policy=fixed --questions=R/data/a/questions.parquet --index=R/index/a --out=R/rollout/a",
		"--log-level=debug rollout --cache=R/../cache --limit=5 --policy=fixed --questions=R/data/b/questions.parquet --index=R/index/b --out=R/rollout/b",
		"--log-level=debug label --cache=R/../cache --teacher=retrieval-truth --in=R/rollout/a --out=R/labels/a",
		"--log-level=debug label --cache=R/../cache --teacher=retrieval-truth --in=R/rollout/b --out=R/labels/b",
		"--log-level=debug filter --cache=R/../cache --in=R/labels/a --in=R/labels/b --out=R/sft",
		"--log-level=debug train --cache=R/../cache --in=R/sft --out=R/judge",
		"--log-level=debug bench --cache=R/../cache --variants=full,no-sft --questions=R/data/b/questions.parquet --index=R/index/b --judge-from=R/judge --out=R/bench",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("command lines (-want +got):\n%s", diff)
	}
}

func TestPlanRejects(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"unknown key", "datasets: {a: {import: {}}}\ntraining: [a]\nroolout: {}\n", "field roolout not found"},
		{"unknown flag", "datasets: {a: {import: {}}}\ntraining: [a]\nrollout: {bogus: 1}\n", "takes no flag --bogus"},
		{"owned flag", "datasets: {a: {import: {}}}\ntraining: [a]\nlabel: {out: x}\n", "--out is set by the pipeline"},
		{"unknown dataset", "datasets: {a: {import: {}}}\ntraining: [b]\n", `no dataset "b"`},
		{"import and synth", "datasets: {a: {import: {}, synth: {}}}\ntraining: [a]\n", "exactly one of import"},
		{"nothing", "datasets: {a: {import: {}}}\n", "nothing to run"},
		{"a map value", "datasets: {a: {import: {dataset: {x: 1}}}}\ntraining: [a]\n", "want a string, number"},
		{"all: unknown", "datasets: {a: {import: {}}}\ntraining: [a]\nall: {bogus: 1}\n", "no command of the pipeline takes --bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "p.yaml")
			if err := os.WriteFile(path, []byte(tc.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Parse(path)
			if err == nil {
				_, err = Plan(s, fakeFlags{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// recorder is an Exec that records the commands it ran, by the stage's
// output directory, and writes a file there; fail makes the command whose
// line contains it fail once.
type recorder struct {
	ran  []string
	fail string
}

func (r *recorder) exec(_ context.Context, args []string) error {
	out := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--out="); ok {
			out = v
		}
	}
	name := filepath.Base(filepath.Dir(out)) + "/" + filepath.Base(out)
	if slices.Contains(args, "--resume") {
		name += " --resume"
	}
	r.ran = append(r.ran, name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if r.fail != "" && strings.Contains(strings.Join(args, " "), r.fail) {
		r.fail = ""
		return errors.New("boom")
	}
	return os.WriteFile(filepath.Join(out, "out"), []byte("x"), 0o644)
}

func (r *recorder) run(t *testing.T, s Spec, opts Options) ([]Step, error) {
	t.Helper()
	stages, err := Plan(s, fakeFlags{})
	if err != nil {
		t.Fatal(err)
	}
	r.ran = nil
	opts.Exec = r.exec
	return Run(context.Background(), s.Root, stages, opts)
}

func TestRunCaches(t *testing.T) {
	s, _ := writeSpec(t, sampleSpec)
	r := &recorder{}
	all := []string{"data/a", "data/b", "index/a", "index/b", "rollout/a", "rollout/b", "labels/a", "labels/b", "root/sft", "root/judge", "root/bench"}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, r.ran); diff != "" {
		t.Fatalf("first run (-want +got):\n%s", diff)
	}
	steps, err := r.run(t, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ran) != 0 {
		t.Errorf("second run ran %v, want nothing", r.ran)
	}
	for _, st := range steps {
		if st.Action != ActionSkip {
			t.Errorf("%s: got %q, want %q", st.Stage.Name, st.Action, ActionSkip)
		}
	}

	// A changed setting runs its stage and every stage after it.
	s.Label = Settings{"teacher": "retrieval-truth", "samples": 3}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"labels/a", "labels/b", "root/sft", "root/judge", "root/bench"}, r.ran); diff != "" {
		t.Errorf("after a label change (-want +got):\n%s", diff)
	}

	// Forced, the selected stage runs, and so do those after it.
	if _, err := r.run(t, s, Options{Only: "train", Force: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"root/judge"}, r.ran); diff != "" {
		t.Errorf("--only train --force (-want +got):\n%s", diff)
	}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"root/bench"}, r.ran); diff != "" {
		t.Errorf("after a forced train (-want +got):\n%s", diff)
	}
}

func TestRunResumesInterrupted(t *testing.T) {
	s, _ := writeSpec(t, sampleSpec)
	r := &recorder{fail: "--out=" + filepath.Join(s.Root, "labels", "b")}
	steps, err := r.run(t, s, Options{})
	if err == nil || !strings.Contains(err.Error(), "stage label:b: boom") {
		t.Fatalf("got error %v, want stage label:b's", err)
	}
	if got := steps[len(steps)-1].Stage.Name; got != "label:b" {
		t.Errorf("last step %s, want label:b", got)
	}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"labels/b --resume", "root/sft", "root/judge", "root/bench"}, r.ran); diff != "" {
		t.Errorf("after the interruption (-want +got):\n%s", diff)
	}
}

func TestRunSelectsAndDries(t *testing.T) {
	s, root := writeSpec(t, sampleSpec)
	r := &recorder{}
	if _, err := r.run(t, s, Options{Only: "bench"}); err == nil || !strings.Contains(err.Error(), "which has not finished and is not selected") {
		t.Errorf("--only bench before anything ran: got %v, want a 'has not run yet' error", err)
	}
	steps, err := r.run(t, s, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ran) != 0 || len(steps) != 11 || steps[0].Action != ActionRun {
		t.Errorf("dry run ran %v and planned %d steps (first %q), want nothing run and 11 planned", r.ran, len(steps), steps[0].Action)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dry run created %s", root)
	}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(t, s, Options{From: "label", Force: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"labels/a", "labels/b", "root/sft", "root/judge", "root/bench"}, r.ran); diff != "" {
		t.Errorf("--from label --force (-want +got):\n%s", diff)
	}
	if _, err := r.run(t, s, Options{From: "nosuch"}); err == nil || !strings.Contains(err.Error(), "the stages are import:a") {
		t.Errorf("--from nosuch: got %v, want the list of stages", err)
	}
}

func TestRunNoticesChangedInputFiles(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "q.jsonl")
	if err := os.WriteFile(in, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _ := writeSpec(t, "root: ROOT\ndatasets: {a: {import: {in: "+in+"}}}\ntraining: [a]\n")
	r := &recorder{}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("12"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(r.ran) == 0 || r.ran[0] != "data/a" {
		t.Errorf("after the input changed: ran %v, want data/a first", r.ran)
	}
}

func TestRunUntil(t *testing.T) {
	s, _ := writeSpec(t, sampleSpec)
	r := &recorder{}
	if _, err := r.run(t, s, Options{Until: "train"}); err != nil {
		t.Fatal(err)
	}
	if got := r.ran[len(r.ran)-1]; len(r.ran) != 10 || got != "root/judge" {
		t.Errorf("--until train ran %v, want 10 stages ending with root/judge", r.ran)
	}
	if _, err := r.run(t, s, Options{From: "filter", Until: "index:a"}); err != nil {
		t.Fatal(err)
	}
	if len(r.ran) != 0 {
		t.Errorf("--from filter --until index:a ran %v, want nothing", r.ran)
	}
	if _, err := r.run(t, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"root/bench"}, r.ran); diff != "" {
		t.Errorf("the rest (-want +got):\n%s", diff)
	}
}
