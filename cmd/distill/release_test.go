//go:build !fakes

package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// testOnly are the packages of this module that exist for tests: fakes,
// conformance suites and test helpers.
var testOnly = []string{
	"llm/llmtest",
	"retrieve/elastic/elastictest",
	"retrieve/retrievetest",
	"finetune/finetunetest",
	"finetune/trainer/trainertest",
	"internal/testkit",
}

// TestReleaseHasNoTestPackages fails when the release build of distill
// (no build tags) links a test-only package: fakes belong behind the
// fakes tag.
func TestReleaseHasNoTestPackages(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the build's packages")
	}
	// -tags= overrides any tags GOFLAGS may set.
	out, err := exec.Command(goCmd, "list", "-tags=", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/distill-rag/distill/"
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok {
			continue
		}
		// A test-only package added later would be named so.
		last := rel[strings.LastIndexByte(rel, '/')+1:]
		if slices.Contains(testOnly, rel) || strings.HasSuffix(last, "test") {
			t.Errorf("the release build depends on %s, a package for tests", pkg)
		}
	}
}

// TestReleaseHasNoFakeCommands: the fakes are not commands of a release
// build, hidden or not.
func TestReleaseHasNoFakeCommands(t *testing.T) {
	r := runDistill(t, "fake-llm")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown command "fake-llm"`) {
		t.Errorf("fake-llm in a release build: exit %d, stderr %q; want an unknown command", r.code, r.stderr)
	}
}
