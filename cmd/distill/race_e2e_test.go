//go:build e2e

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/rollout/runner"
)

// Two processes racing for one output directory, 50 times each way (two
// fresh starts on an absent directory, two resumes of a partial output),
// for rollout and for label: every time at most one of them writes, the
// other exits 2 naming the holder (or, coming after the first has
// finished, finds the output taken), and the output is whole, each unit
// once. Run with make e2e-slow (go test -tags e2e).

const raceTries = 50

// race runs the binary twice at once with the same arguments and returns
// both results.
func race(t *testing.T, bin string, args ...string) [2]result {
	t.Helper()
	var (
		wg  sync.WaitGroup
		out [2]result
	)
	for i := range out {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, append([]string{"--quiet"}, args...)...)
			cmd.Env = append(os.Environ(), "OPENAI_API_KEY=")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			out[i] = result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
		})
	}
	wg.Wait()
	return out
}

// checkRace checks the exit codes of two racers: at least one succeeded,
// and the other succeeded too only where that is allowed (a resume that
// came after the first finished), else exited 2 saying why.
func checkRace(t *testing.T, try int, rs [2]result, bothMayWin bool) (busy int) {
	t.Helper()
	wins := 0
	for _, r := range rs {
		switch {
		case r.code == 0:
			wins++
		case r.code == exitUsage && strings.Contains(r.stderr, "is in use by process"):
			busy++
		case r.code == exitUsage && strings.Contains(r.stderr, "not empty") && !bothMayWin:
		default:
			t.Fatalf("try %d: exit %d, stderr %q", try, r.code, r.stderr)
		}
	}
	if wins == 0 || (wins == 2 && !bothMayWin) {
		t.Fatalf("try %d: %d of the two racers wrote: %+v", try, wins, rs)
	}
	return busy
}

// cutParts makes a partial output of a finished one, as an interrupted
// run leaves it: the finished output's first units in keep parts of per
// units each, and no output file (a finished run keeps no parts).
func cutParts[K comparable, R any](t *testing.T, done, dir, file string, kind data.Kind, key func(*R) K, per, keep int) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(done)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, file))
	os.Remove(filepath.Join(dir, ".distill.lock"))
	rows, err := data.ReadParquet[R](filepath.Join(done, file))
	if err != nil {
		t.Fatal(err)
	}
	parts := filepath.Join(dir, runner.PartsDir)
	if err := os.MkdirAll(parts, 0o755); err != nil {
		t.Fatal(err)
	}
	pw := data.NewPartWriter[R](parts, kind, 0)
	committed := 0
	for i := 0; i < len(rows) && committed < keep; {
		j := i + 1
		for j < len(rows) && key(&rows[j]) == key(&rows[i]) {
			j++
		}
		if err := pw.Write(rows[i:j]); err != nil {
			t.Fatal(err)
		}
		if pw.Units() == per {
			if _, _, _, err := pw.Commit(); err != nil {
				t.Fatal(err)
			}
			committed++
		}
		i = j
	}
	pw.Abort()
	if committed < keep {
		t.Fatalf("%s holds %d parts of %d units, want more than %d", done, committed, per, keep)
	}
}

func TestE2ERacingWriters(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	qs := testkit.QuestionIDs(synth.Sample().Questions[:30])
	roArgs := []string{"rollout", "--policy", "fixed", "--limit", "30", "--checkpoint-questions", "3"}
	ro := filepath.Join(dir, "ro")
	if r := runBinary(t, nil, append(roArgs, "--out", ro)...); r.code != 0 {
		t.Fatalf("rollout: exit %d, stderr %q", r.code, r.stderr)
	}
	states := trajectoryStates(t, ro)
	labArgs := []string{"label", "--in", ro, "--teacher", "retrieval-truth", "--checkpoint-states", "10"}
	lab := filepath.Join(dir, "lab")
	if r := runBinary(t, nil, append(labArgs, "--out", lab)...); r.code != 0 {
		t.Fatalf("label: exit %d, stderr %q", r.code, r.stderr)
	}
	checkRollout := func(out string) { checkTrajectories(t, filepath.Join(out, runner.TrajectoriesFile), qs) }
	checkLabels := func(out string) {
		if ls := testkit.Labels(t, filepath.Join(out, label.LabelsFile)); len(ls) != states {
			t.Fatalf("%s: %d labels, want %d", out, len(ls), states)
		}
	}
	cutRollout := func(t *testing.T, out string) {
		cutParts(t, ro, out, runner.TrajectoriesFile, data.KindTrajectories, func(s *data.State) string { return s.QuestionID }, 3, 2)
	}
	cutLabels := func(t *testing.T, out string) {
		cutParts(t, lab, out, label.LabelsFile, data.KindLabels, func(l *data.Label) data.StateKey { return l.Key() }, 10, 2)
	}
	for _, stage := range []struct {
		name  string
		args  []string
		cut   func(t *testing.T, out string)
		check func(out string)
	}{
		{"rollout", roArgs, cutRollout, checkRollout},
		{"label", labArgs, cutLabels, checkLabels},
	} {
		t.Run(stage.name+"/fresh", func(t *testing.T) {
			busy := 0
			for try := range raceTries {
				out := filepath.Join(t.TempDir(), "out")
				busy += checkRace(t, try, race(t, bin, append(stage.args, "--out", out)...), false)
				stage.check(out)
			}
			t.Logf("%d tries: the second writer was refused as busy %d times, as not empty the other %d", raceTries, busy, raceTries-busy)
		})
		t.Run(stage.name+"/resume", func(t *testing.T) {
			busy := 0
			for try := range raceTries {
				out := filepath.Join(t.TempDir(), "out")
				stage.cut(t, out)
				busy += checkRace(t, try, race(t, bin, append(stage.args, "--out", out, "--resume")...), true)
				stage.check(out)
				if r := runBinary(t, nil, append(stage.args, "--out", out, "--resume")...); r.code != 0 {
					t.Fatalf("try %d: a resume after the race: exit %d, stderr %q", try, r.code, r.stderr)
				}
			}
			t.Logf("%d tries: the second writer was refused as busy %d times (else it came after the first had finished)", raceTries, busy)
		})
	}
}
