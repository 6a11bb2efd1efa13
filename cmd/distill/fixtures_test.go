package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// What several tests start from is made once per test binary, in a
// directory that TestMain removes at the end, and the tests only read it:
// the distill binary, and the bundled sample's offline chain.

// sharedDir is the directory of the shared fixtures, made on first use.
var sharedDir = sync.OnceValues(func() (string, error) {
	return os.MkdirTemp("", "distill-test-")
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := sharedDir(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// Build stamps of the shared binary, which TestBinary checks.
const (
	testVersion   = "v9.8.7-test"
	testBuildTime = "2026-01-02T03:04:05Z"
)

// distillBinary builds distill once, as the Makefile does (with -ldflags
// stamps), for the tests that run it as a process.
var distillBinary = sync.OnceValues(func() (string, error) {
	dir, err := sharedDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "distill")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X main.version="+testVersion+" -X main.buildTime="+testBuildTime, ".")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// binary returns the shared binary; the test is skipped with -short.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := distillBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runBinary runs the shared binary as a process, with the test's
// environment and env added.
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run distill: %v", err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// killAfterCheckpoint starts the shared binary, with the test's
// environment and env added, and kills it with SIGKILL once it has logged
// its first checkpoint (args must ask for JSON logs; the debug level,
// which checkpoints are logged at, is added); it returns false if
// the run ended first.
func killAfterCheckpoint(t *testing.T, env []string, args ...string) bool {
	t.Helper()
	// Checkpoints are logged at debug level.
	cmd := exec.Command(binary(t), append([]string{"--log-level", "debug"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct{ Msg string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "checkpoint" && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if killed && !errors.As(err, &exit) {
		t.Fatalf("distill after SIGKILL: %v, want it killed", err)
	}
	return killed
}

// chain is the bundled sample's offline chain: a fixed-policy rollout of
// every question, its labels from the retrieval-truth teacher, the
// filtered SFT sets, and a judge trained on them by the built-in backend.
type chain struct {
	Rollout, Labels, SFT, Judge string
}

var sampleChain = sync.OnceValues(func() (chain, error) {
	dir, err := sharedDir()
	if err != nil {
		return chain{}, err
	}
	c := chain{Rollout: filepath.Join(dir, "ro"), Labels: filepath.Join(dir, "lab"), SFT: filepath.Join(dir, "sft"),
		Judge: filepath.Join(dir, "judge")}
	for _, args := range [][]string{
		{"rollout", "--policy", "fixed", "--out", c.Rollout},
		{"label", "--in", c.Rollout, "--teacher", "retrieval-truth", "--out", c.Labels},
		{"filter", "--in", c.Labels, "--out", c.SFT},
		{"train", "--in", c.SFT, "--out", c.Judge, "--backend", "builtin"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"distill", "--quiet"}, args...), strings.NewReader(""), &stdout, &stderr); code != 0 {
			return chain{}, fmt.Errorf("%s: exit %d, stderr %q", args[0], code, stderr.String())
		}
	}
	return c, nil
})

// offlineChain returns the sample's offline chain, made on first use.
func offlineChain(t *testing.T) chain {
	t.Helper()
	c, err := sampleChain()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
