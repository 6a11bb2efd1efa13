package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/rollout/runner"
)

// No test in this package runs in parallel: a signal sent by
// TestRunWithSignalsInterrupt reaches every run in progress.

// result is what a run of the app left behind.
type result struct {
	code           int
	stdout, stderr string
}

// runDistill runs the real app in-process.
func runDistill(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"distill"}, args...), strings.NewReader(""), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// runCommands runs an app made of cmds, with distill's global flags and
// error handling, in-process.
func runCommands(t *testing.T, cmds []*cli.Command, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	app := buildApp(&stdout, &stderr, cmds)
	code := runWithSignals(context.Background(), app, append([]string{"distill"}, args...))
	return result{code, stdout.String(), stderr.String()}
}

func TestExitCode(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"success", live, nil, 0},
		{"success after a cancel", cancelled, nil, 0},
		{"failure", live, errors.New("open x: no such file"), 1},
		{"usage", live, usageErrorf("bad -k %d", -1), 2},
		{"wrapped usage", live, fmt.Errorf("search: %w", usageErrorf("bad -k")), 2},
		{"told already", live, &exitError{code: exitUsage}, 2},
		{"urfave/cli exit", live, cli.Exit("no help topic", 3), 3},
		{"cancelled context", cancelled, errors.New("write states: broken pipe"), 130},
		{"context.Canceled", live, fmt.Errorf("rollout: %w", context.Canceled), 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.ctx, tt.err); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// blockCommand waits for its context to end; started is closed once it runs.
func blockCommand(started chan<- struct{}) *cli.Command {
	return &cli.Command{
		Name: "block",
		Action: func(c *cli.Context) error {
			close(started)
			<-c.Context.Done()
			return fmt.Errorf("block: %w", c.Context.Err())
		},
	}
}

func TestRunWithSignalsParentCancelled(t *testing.T) {
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	var stdout, stderr bytes.Buffer
	app := buildApp(&stdout, &stderr, []*cli.Command{blockCommand(started)})
	code := runWithSignals(ctx, app, []string{"distill", "block"})
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	if got, want := stderr.String(), "distill: block: context canceled\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// TestRunWithSignalsInterrupt sends a real SIGINT to the test process while a
// command runs: runWithSignals catches it, the command's context ends, and
// the exit code is 130.
func TestRunWithSignalsInterrupt(t *testing.T) {
	started := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		<-started
		sent <- syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	var stdout, stderr bytes.Buffer
	app := buildApp(&stdout, &stderr, []*cli.Command{blockCommand(started)})
	code := runWithSignals(context.Background(), app, []string{"distill", "block"})
	if err := <-sent; err != nil {
		t.Fatalf("send SIGINT: %v", err)
	}
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	if got, want := stderr.String(), "distill: block: context canceled (interrupt signal received)\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}

// TestBinary builds distill as the Makefile does and runs it as a process:
// main's wiring, the -ldflags variables and the exit status.
func TestBinary(t *testing.T) {
	bin := binary(t)

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "version")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("distill version: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"distill " + testVersion + "\n", "build time:  " + testBuildTime + "\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("distill version printed %q, want it to contain %q", stdout.String(), want)
		}
	}

	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, "train")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Errorf("distill train: %v, want exit status %d", err, exitUsage)
	}
	if !strings.HasPrefix(stderr.String(), "distill: train: --out is required") || stdout.Len() != 0 {
		t.Errorf("distill train: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

func TestMergeError(t *testing.T) {
	other := errors.New("disk full")
	tests := []struct {
		name, cmd, prefix string
		err, errOptions   error
		wantCode          int // 0: returned as it is
		want              string
	}{
		{"output not empty", "merge", "", fmt.Errorf("merge: %w", runner.ErrOutExists), runner.ErrOptions, exitUsage, "merge: out is not empty: choose another --out"},
		{"inputs apart", "merge", "", fmt.Errorf("merge: a and b: %w", label.ErrMismatch), label.ErrOptions, exitUsage, "merge: a and b: runs configured differently"},
		{"bad options", "bench merge", "bench merge: ", fmt.Errorf("no shards: %w", eval.ErrOptions), eval.ErrOptions, exitUsage, "bench merge: no shards: bad bench options"},
		{"anything else", "merge", "", other, runner.ErrOptions, 0, "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mergeError(tt.cmd, tt.prefix, "out", tt.err, tt.errOptions)
			var ee *exitError
			code := 0
			if errors.As(err, &ee) {
				code = ee.code
			}
			if code != tt.wantCode || err.Error() != tt.want {
				t.Errorf("got exit %d, %q; want %d, %q", code, err, tt.wantCode, tt.want)
			}
			if tt.wantCode == 0 && err != tt.err {
				t.Errorf("got %v, want the error as it is", err)
			}
		})
	}
}
