package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestExamples keeps the example job files in examples/ well-formed: the
// shell scripts parse (sh -n), the Kubernetes manifests are YAML documents
// of Jobs, and every distill command line they hold names a real command
// and only flags it has.
func TestExamples(t *testing.T) {
	for _, f := range []string{"examples/slurm-array.sbatch", "examples/slurm-merge.sh"} {
		if out, err := exec.Command("sh", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", f, err, out)
		}
		checkDistillLines(t, f)
	}
	b, err := os.ReadFile("examples/k8s-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	jobs := 0
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				CompletionMode string `yaml:"completionMode"`
			} `yaml:"spec"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("k8s-indexed-job.yaml: %v", err)
		}
		if doc.Kind != "Job" {
			t.Errorf("a %q in k8s-indexed-job.yaml", doc.Kind)
		}
		jobs++
	}
	if jobs != 2 {
		t.Errorf("%d jobs in k8s-indexed-job.yaml, want 2", jobs)
	}
	checkDistillLines(t, "examples/k8s-indexed-job.yaml")
}

// checkDistillLines finds the distill command lines of a file (joined
// across continuation lines) and checks their command and flags against
// the app.
func checkDistillLines(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	app := buildApp(io.Discard, io.Discard, commands())
	for _, line := range strings.Split(text, "\n") {
		i := strings.Index(line, "distill ")
		if i < 0 || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		fields := strings.Fields(line[i:])
		var cmd, sub string
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") && cmd == "" && app.Command(f) != nil {
				cmd = f
				continue
			}
			if cmd != "" && sub == "" && !strings.HasPrefix(f, "-") {
				if c := app.Command(cmd); c != nil && c.Command(f) != nil {
					sub = f
				}
				break
			}
		}
		if cmd == "" {
			t.Errorf("%s: no distill command in %q", path, line)
			continue
		}
		c := app.Command(cmd)
		if sub != "" {
			c = c.Command(sub)
		}
		known := map[string]bool{}
		for _, fl := range append(c.Flags, app.Flags...) {
			for _, n := range fl.Names() {
				known[n] = true
			}
		}
		for _, f := range fields {
			if name, ok := strings.CutPrefix(f, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				if !known[name] {
					t.Errorf("%s: distill %s has no flag --%s", path, cmd, name)
				}
			}
		}
	}
}
