package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

func TestRunWritesEveryUnitOnce(t *testing.T) {
	tests := []struct {
		name              string
		n, workers, every int
		wantParts         int
	}{
		{"one worker, one part", 12, 1, 100, 1},
		{"a part per unit", 7, 3, 1, 7},
		{"parts of 4", 30, 4, 4, 8},
		{"more workers than units", 3, 16, 2, 2},
		{"no units", 0, 4, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStage(tt.n)
			out := filepath.Join(t.TempDir(), "out")
			j := s.job(out, false)
			j.Workers, j.CheckpointUnits = tt.workers, tt.every
			var last Progress
			calls := 0
			j.Progress = func(p Progress) { last, calls = p, calls+1 }
			if err := Run(t.Context(), j); err != nil {
				t.Fatal(err)
			}
			order := checkOutput(t, out, s.ids)
			if !slices.Equal(order, s.wrote) {
				t.Errorf("output order %v, want the order written %v", order, s.wrote)
			}
			rows := 0
			for _, id := range s.ids {
				rows += len(rowsOf(id))
			}
			want := Progress{Selected: tt.n, Total: tt.n, Done: tt.n, Rows: int64(rows), Parts: tt.wantParts}
			if last != want || calls == 0 {
				t.Errorf("last progress %+v (of %d), want %+v", last, calls, want)
			}
			checkNoParts(t, out)
			rep, err := readTestReport(out)
			if err != nil {
				t.Fatal(err)
			}
			wantCounts := testCounts{Selected: tt.n, Done: tt.n, Parts: tt.wantParts, Units: tt.n, Rows: int64(rows)}
			if rep.Status != StatusDone || rep.Counts != wantCounts || s.countPasses != 1 {
				t.Errorf("report: status %q, counts %+v, want %+v; %d counting passes", rep.Status, rep.Counts, wantCounts, s.countPasses)
			}
		})
	}
}

func TestRunReport(t *testing.T) {
	s := newTestStage(10)
	s.usage = []llm.Stats{{Role: "judge", Model: "m", Requests: 3, CostUSD: 0.25}, {Role: "reader", Model: "m", CostUSD: 0.5}}
	out := t.TempDir()
	j := s.job(out, false)
	j.Report.Version = "v1"
	if err := Run(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	rep, err := readTestReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&s.rep, rep, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("the file differs from the report in memory (-memory +file):\n%s", diff)
	}
	want := Header{Status: StatusDone, Version: "v1", Usage: s.usage, CostUSD: 0.75}
	if diff := cmp.Diff(want, rep.Header, cmpopts.IgnoreFields(Header{}, "StartedAt", "FinishedAt", "WallSeconds")); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if rep.StartedAt.IsZero() || rep.FinishedAt.Before(rep.StartedAt) || rep.WallSeconds <= 0 {
		t.Errorf("times: started %v, finished %v, wall %v", rep.StartedAt, rep.FinishedAt, rep.WallSeconds)
	}
	// One flat object: the header's names beside the stage's.
	b, err := os.ReadFile(filepath.Join(out, testReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"status", "version", "started_at", "finished_at", "wall_seconds", "resumes", "usage", "cost_usd", "config", "counts"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("report lacks %q:\n%s", k, b)
		}
	}
	for _, k := range []string{"error", "budget_reached", "inputs", "missing_shards"} {
		if _, ok := keys[k]; ok {
			t.Errorf("report has an empty %q:\n%s", k, b)
		}
	}
}

// TestRunReportAtStart: the report is written, stamped, before any unit
// is done, so that a kill before the first checkpoint keeps the usage of
// the earlier invocations and the counts of the selection.
func TestRunReportAtStart(t *testing.T) {
	out := t.TempDir()
	first := newTestStage(10)
	first.usage = []llm.Stats{{Role: "r", Model: "m", Requests: 3, CostUSD: 0.25}}
	if err := Run(t.Context(), first.job(out, false)); err != nil {
		t.Fatal(err)
	}
	s := newTestStage(20)
	j := s.job(out, true)
	var atStart *testReport
	j.Progress = func(Progress) {
		if atStart == nil {
			rep, err := readTestReport(out)
			if err != nil {
				t.Fatal(err)
			}
			atStart = rep
		}
	}
	if err := Run(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	// The first run's output file is the resumed run's first part.
	want := testCounts{Selected: 20, AlreadyDone: 10, Parts: 1}
	if atStart == nil || atStart.Status != StatusRunning || atStart.Resumes != 1 || !cmp.Equal(atStart.Usage, first.usage) ||
		atStart.CostUSD != 0.25 || atStart.Counts != want {
		t.Errorf("report at the start of the resumed run: %+v; want running, resumed once, the first invocation's usage, counts %+v", atStart, want)
	}
}

// TestRunResumeAfterKill builds what kill -9 leaves at different moments
// (some parts committed, a torn part and a torn output file, the report
// saying "running") and resumes: the output holds every unit once, the
// kept parts' units are not done again, and the earlier usage is kept.
func TestRunResumeAfterKill(t *testing.T) {
	s := newTestStage(40)
	full := t.TempDir()
	s.usage = []llm.Stats{{Role: "r", Model: "m", Requests: 1, CostUSD: 1}}
	parts := runKeepingParts(t, s.job(full, false))
	prev, err := readTestReport(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{0, 1, 3, len(parts)} {
		t.Run(fmt.Sprintf("%d parts kept", keep), func(t *testing.T) {
			out := t.TempDir()
			os.MkdirAll(filepath.Join(out, PartsDir), 0o755)
			kept := 0
			for _, p := range parts[:keep] {
				b, _ := os.ReadFile(p.Path)
				os.WriteFile(filepath.Join(out, PartsDir, filepath.Base(p.Path)), b, 0o644)
				rows, _ := data.ReadParquet[row](p.Path)
				for _, r := range rows {
					if r.Last {
						kept++
					}
				}
			}
			torn := []string{filepath.Join(PartsDir, "."+data.PartName(keep)+data.TmpMarker+"9"), ".out.parquet" + data.TmpMarker + "1"}
			for _, name := range torn {
				os.WriteFile(filepath.Join(out, name), []byte("PAR1 torn"), 0o644)
			}
			killed := *prev
			killed.Status, killed.FinishedAt = StatusRunning, time.Time{}
			if err := WriteReport(out, testReportFile, &killed); err != nil {
				t.Fatal(err)
			}

			s2 := newTestStage(40)
			s2.usage = []llm.Stats{{Role: "r", Model: "m", Requests: 2, CostUSD: 2}}
			if err := Run(t.Context(), s2.job(out, true)); err != nil {
				t.Fatal(err)
			}
			checkOutput(t, out, s.ids)
			if got := int(s2.started.Load()); got != 40-kept {
				t.Errorf("%d units done again, want %d", got, 40-kept)
			}
			rep, err := readTestReport(out)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Resumes != 1 || rep.Counts.AlreadyDone != kept || rep.CostUSD != 3 || rep.Usage[0].Requests != 3 {
				t.Errorf("report: resumes %d, already done %d (want %d), cost %v, usage %+v", rep.Resumes, rep.Counts.AlreadyDone, kept, rep.CostUSD, rep.Usage)
			}
			for _, name := range torn {
				if _, err := os.Stat(filepath.Join(out, name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("leftover %s not removed: %v", name, err)
				}
			}
			checkNoParts(t, out)
		})
	}
}

// TestRunResumeFinished: a finished output keeps its rows once, in its
// file; resuming it (after a kill at any moment of the removal of the
// parts, or of the resume's own start) goes on from that file and does
// nothing again.
func TestRunResumeFinished(t *testing.T) {
	s := newTestStage(23)
	full := t.TempDir()
	parts := runKeepingParts(t, s.job(full, false))
	output, err := os.ReadFile(filepath.Join(full, "out.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(filepath.Join(full, testReportFile))
	if err != nil {
		t.Fatal(err)
	}
	checkNoParts(t, full)
	copyParts := func(t *testing.T, dir string) {
		os.MkdirAll(dir, 0o755)
		for _, p := range parts {
			b, _ := os.ReadFile(p.Path)
			os.WriteFile(filepath.Join(dir, filepath.Base(p.Path)), b, 0o644)
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, out string)
	}{
		{"finished", func(t *testing.T, out string) {}},
		{"killed before the parts were removed", func(t *testing.T, out string) { copyParts(t, filepath.Join(out, PartsDir)) }},
		{"killed while the parts were removed", func(t *testing.T, out string) {
			copyParts(t, filepath.Join(out, "."+PartsDir+data.TmpMarker+"drop"))
		}},
		{"killed after the parts directory was made", func(t *testing.T, out string) { os.Mkdir(filepath.Join(out, PartsDir), 0o755) }},
		{"killed after the output became part 0", func(t *testing.T, out string) {
			os.Mkdir(filepath.Join(out, PartsDir), 0o755)
			os.Rename(filepath.Join(out, "out.parquet"), filepath.Join(out, PartsDir, data.PartName(0)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			os.WriteFile(filepath.Join(out, "out.parquet"), output, 0o644)
			os.WriteFile(filepath.Join(out, testReportFile), report, 0o644)
			tt.setup(t, out)
			s2 := newTestStage(23)
			j := s2.job(out, true)
			var last Progress
			j.Stamp = func(p Progress) { last = p }
			if err := Run(t.Context(), j); err != nil {
				t.Fatal(err)
			}
			if n := s2.started.Load(); n != 0 || last.AlreadyDone != 23 {
				t.Errorf("%d units done again, %d already done; want none, 23", n, last.AlreadyDone)
			}
			if order := checkOutput(t, out, s.ids); !slices.Equal(order, s.wrote) {
				t.Errorf("output order %v, want the first run's %v", order, s.wrote)
			}
			checkNoParts(t, out)
		})
	}
	// Grown: the first run's units stay, the new ones are done.
	s3 := newTestStage(30)
	s3.ids = append(slices.Clone(s.ids), s3.ids[23:]...)
	if err := Run(t.Context(), s3.job(full, true)); err != nil {
		t.Fatal(err)
	}
	if n := s3.started.Load(); n != 7 {
		t.Errorf("%d units done, want the 7 new ones", n)
	}
	checkOutput(t, full, s3.ids)
	checkNoParts(t, full)
}

// TestRunInterruptedThenResumed cancels runs after some units (as Ctrl-C
// or a systemic error would) and resumes them: every unit is written
// exactly once.
func TestRunInterruptedThenResumed(t *testing.T) {
	for _, stopAfter := range []int64{1, 6, 17, 39} {
		for _, workers := range []int{1, 5} {
			t.Run(fmt.Sprintf("after %d, %d workers", stopAfter, workers), func(t *testing.T) {
				s := newTestStage(40)
				out := t.TempDir()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var calls atomic.Int64
				s.work = func(context.Context, string) error {
					if calls.Add(1) == stopAfter {
						cancel()
					}
					return nil
				}
				j := s.job(out, false)
				j.Workers = workers
				err := Run(ctx, j)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Run: %v, want context.Canceled", err)
				}
				rep, _ := readTestReport(out)
				if rep.Status != StatusInterrupted || !strings.Contains(rep.Error, "canceled") {
					t.Errorf("report: status %q, error %q", rep.Status, rep.Error)
				}
				if _, err := os.Stat(filepath.Join(out, "out.parquet")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("an interrupted run wrote its output: %v", err)
				}
				s2 := newTestStage(40)
				if err := Run(t.Context(), s2.job(out, true)); err != nil {
					t.Fatal(err)
				}
				checkOutput(t, out, s.ids)
				rep, _ = readTestReport(out)
				if rep.Counts.AlreadyDone+rep.Counts.Done != 40 || rep.Resumes != 1 {
					t.Errorf("resumed: %d already done + %d now, resumes %d", rep.Counts.AlreadyDone, rep.Counts.Done, rep.Resumes)
				}
			})
		}
	}
}

func TestRunSystemicErrorStops(t *testing.T) {
	errBroken := errors.New("broken")
	s := newTestStage(60)
	s.work = func(_ context.Context, id string) error {
		if id == "u030" {
			return fmt.Errorf("unit %s: %w", id, errBroken)
		}
		return nil
	}
	out := t.TempDir()
	j := s.job(out, false)
	j.Workers = 1
	if err := Run(t.Context(), j); !errors.Is(err, errBroken) {
		t.Fatalf("Run: %v, want the unit's error", err)
	}
	if n := s.started.Load(); n != 31 {
		t.Errorf("%d units started, want 31: the run went on after the error", n)
	}
	rep, _ := readTestReport(out)
	if rep.Status != StatusInterrupted || rep.Error != "unit u030: broken" || rep.Counts.Parts != 6 {
		t.Errorf("report: status %q, error %q, %d parts", rep.Status, rep.Error, rep.Counts.Parts)
	}
}

// TestRunWriteFailureStops: when a part cannot be written, the run stops,
// workers blocked on the writer included, and says why.
func TestRunWriteFailureStops(t *testing.T) {
	s := newTestStage(200)
	out := t.TempDir()
	j := s.job(out, false)
	j.Workers, j.CheckpointUnits = 8, 1
	// From the writer's own goroutine, so that the part being written is
	// lost with its directory.
	written := 0
	j.Wrote = func([]row) {
		if written++; written == 50 {
			os.RemoveAll(filepath.Join(out, PartsDir))
		}
	}
	if err := Run(t.Context(), j); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Run: %v, want the error of the lost parts directory", err)
	}
	// At most the units in flight and those waiting for the writer.
	if n := s.started.Load(); n > 50+2*8 {
		t.Errorf("%d units started: the workers went on after the writer failed", n)
	}
}

func TestRunRefuses(t *testing.T) {
	s := newTestStage(20)
	done := t.TempDir()
	if err := Run(t.Context(), s.job(done, false)); err != nil {
		t.Fatal(err)
	}
	notRun := t.TempDir()
	os.WriteFile(filepath.Join(notRun, "notes.txt"), []byte("mine"), 0o644)
	twice := t.TempDir()
	os.MkdirAll(filepath.Join(twice, PartsDir), 0o755)
	for _, n := range []int{0, 1} {
		b, _ := os.ReadFile(filepath.Join(done, "out.parquet"))
		os.WriteFile(filepath.Join(twice, PartsDir, data.PartName(n)), b, 0o644)
	}
	b, _ := os.ReadFile(filepath.Join(done, testReportFile))
	os.WriteFile(filepath.Join(twice, testReportFile), b, 0o644)

	tests := []struct {
		name   string
		out    string
		change func(*testStage, *Job[string, string, row, *testReport])
		want   error
		text   string
	}{
		{"not empty without resume", done, func(_ *testStage, j *Job[string, string, row, *testReport]) { j.Resume = false }, ErrOutExists, "output directory is not empty"},
		{"not a run", notRun, nil, ErrNotRun, "has no test.json"},
		{"configured differently", done, func(_ *testStage, j *Job[string, string, row, *testReport]) { j.Report.Config.Tag = "b" }, ErrMismatch, "resume"},
		{"other shard", done, func(_ *testStage, j *Job[string, string, row, *testReport]) { j.Report.Config.Shard = "0/2" }, ErrMismatch, "resume"},
		{"other input", done, func(s *testStage, _ *Job[string, string, row, *testReport]) { s.ids = s.ids[:10] }, ErrMismatch, "hold 10 units that this run does not select"},
		{"a unit in two parts", twice, nil, nil, "appears twice (in parts/part-00000.parquet and parts/part-00001.parquet)"},
		{"no output directory", "", nil, ErrOptions, ""},
		{"no work", done, func(_ *testStage, j *Job[string, string, row, *testReport]) { j.Work = nil }, ErrOptions, ""},
		{"no workers", done, func(_ *testStage, j *Job[string, string, row, *testReport]) { j.Workers = 0 }, ErrOptions, ""},
		{"a budget without a meter", done, func(_ *testStage, j *Job[string, string, row, *testReport]) { j.Budget = 1 }, ErrOptions, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStage(20)
			j := s.job(tt.out, true)
			if tt.change != nil {
				tt.change(s, &j)
			}
			err := Run(t.Context(), j)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("Run: %v, want %v with %q", err, tt.want, tt.text)
			}
			if s.started.Load() != 0 {
				t.Errorf("%d units started", s.started.Load())
			}
		})
	}
	// What was refused is untouched, and resumes.
	checkOutput(t, done, s.ids)
	if err := Run(t.Context(), newTestStage(20).job(done, true)); err != nil {
		t.Errorf("resume of the finished run: %v", err)
	}
}

// TestRunFailedStartLeavesNothing: a run that cannot start leaves no
// directory that a rerun would need to resume.
func TestRunFailedStartLeavesNothing(t *testing.T) {
	errRead := errors.New("disk on fire")
	for _, existing := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out")
		if existing {
			os.Mkdir(out, 0o755)
		}
		s := newTestStage(3)
		j := s.job(out, false)
		j.Units = func(context.Context, bool) iter.Seq2[string, error] {
			return func(yield func(string, error) bool) {
				if yield("u000", nil) {
					yield("", errRead)
				}
			}
		}
		if err := Run(t.Context(), j); !errors.Is(err, errRead) {
			t.Fatalf("Run: %v, want the input's error", err)
		}
		_, err := os.Stat(out)
		if existing && err != nil || !existing && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("existing %v: %s after a failed start: %v", existing, out, err)
		}
		if existing {
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a failed start left %v", entries)
			}
		}
	}
}

// TestRunInputChanged: units that are not there the second time the input
// is read end the run.
func TestRunInputChanged(t *testing.T) {
	s := newTestStage(10)
	out := t.TempDir()
	j := s.job(out, false)
	passes := 0
	j.Units = func(ctx context.Context, count bool) iter.Seq2[string, error] {
		passes++
		if passes == 2 {
			s.ids = s.ids[:7]
		}
		return s.units(ctx, count)
	}
	err := Run(t.Context(), j)
	if err == nil || !strings.Contains(err.Error(), "read ids: 3 selected units were not there the second time") {
		t.Fatalf("Run: %v, want the missing units", err)
	}
}

func TestRunCheckpointInterval(t *testing.T) {
	// A unit that comes longer than the interval after the one before
	// finds that one committed in a part of its own.
	s := newTestStage(4)
	release := make(chan struct{})
	s.work = func(context.Context, string) error {
		<-release
		return nil
	}
	out := t.TempDir()
	j := s.job(out, false)
	j.Workers, j.CheckpointUnits, j.CheckpointInterval = 1, 100, time.Millisecond
	progress := make(chan Progress, 100)
	j.Progress = func(p Progress) { progress <- p }
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), j) }()
	for k := 1; k <= len(s.ids); k++ {
		release <- struct{}{}
		for p := range progress {
			if p.Parts == k {
				break
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rep, err := readTestReport(out); err != nil || rep.Counts.Parts != len(s.ids) {
		t.Errorf("report %+v (%v), want %d parts", rep, err, len(s.ids))
	}
	checkOutput(t, out, s.ids)
}

func TestRunBudget(t *testing.T) {
	s := newTestStage(100)
	out := t.TempDir()
	j := s.job(out, false)
	j.Workers, j.Budget = 3, 10
	j.Spent = func() float64 { return float64(s.started.Load()) }
	err := Run(t.Context(), j)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("Run: %v, want ErrBudget", err)
	}
	n := int(s.started.Load())
	if n < 10 || n > 10+j.Workers {
		t.Errorf("%d units done on a budget of 10 with %d workers", n, j.Workers)
	}
	if want := fmt.Sprintf("$%d.0000 spent of $10.0000 after %d of 100 units (0 done before)", n, n); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q in it", err, want)
	}
	rep, _ := readTestReport(out)
	if rep.Status != StatusBudget || !rep.BudgetReached || rep.Error != "" || rep.Counts.Done != n {
		t.Errorf("report: status %q, budget reached %v, error %q, done %d", rep.Status, rep.BudgetReached, rep.Error, rep.Counts.Done)
	}
	// A larger budget goes on; the budget is this invocation's.
	s2 := newTestStage(100)
	j = s2.job(out, true)
	j.Budget = 1000
	j.Spent = func() float64 { return float64(s2.started.Load()) }
	if err := Run(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, out, s.ids)
	if rep, _ := readTestReport(out); rep.BudgetReached || rep.Counts.AlreadyDone != n {
		t.Errorf("resumed: budget reached %v, already done %d", rep.BudgetReached, rep.Counts.AlreadyDone)
	}
}

// TestRunProduce: a stage with its own way of doing units gets the units
// left, in input order, and what it emits is written as Work's would be.
func TestRunProduce(t *testing.T) {
	s := newTestStage(30)
	out := t.TempDir()
	j := s.job(out, false)
	var got []string
	j.Work = nil
	j.Produce = func(ctx context.Context, todo iter.Seq2[string, error], emit func([]row) error) error {
		var held []string
		for id, err := range todo {
			if err != nil {
				return err
			}
			got = append(got, id)
			held = append(held, id)
			if len(held) == 20 {
				break
			}
		}
		// Emitted in another order than the input's.
		slices.Reverse(held)
		for _, id := range held {
			if err := emit(rowsOf(id)); err != nil {
				return err
			}
		}
		return fmt.Errorf("stopped: %w", ErrBudget)
	}
	j.Budget, j.Spent = 5, func() float64 { return 5 }
	if err := Run(t.Context(), j); !errors.Is(err, ErrBudget) {
		t.Fatalf("Run: %v, want ErrBudget", err)
	}
	if !slices.Equal(got, s.ids[:20]) {
		t.Errorf("Produce got %v, want the first 20 units in order", got)
	}
	// The rest is done on resume, with Work.
	s2 := newTestStage(30)
	if err := Run(t.Context(), s2.job(out, true)); err != nil {
		t.Fatal(err)
	}
	order := checkOutput(t, out, s.ids)
	want := slices.Clone(s.ids[:20])
	slices.Reverse(want)
	if want = append(want, s2.wrote...); !slices.Equal(order, want) {
		t.Errorf("output order %v, want the order written %v", order, want)
	}
}

// TestSelectWritesNothing: Select and Plan.Left, as a preflight uses them,
// count and yield the units left without touching the directory.
func TestSelectWritesNothing(t *testing.T) {
	s := newTestStage(20)
	out := t.TempDir()
	j := s.job(out, false)
	j.CheckpointUnits = 7
	s.work = func(_ context.Context, id string) error {
		if id == "u010" {
			return errors.New("stop")
		}
		return nil
	}
	j.Workers = 1
	if err := Run(t.Context(), j); err == nil {
		t.Fatal("the first run did not stop")
	}
	before, _ := os.ReadDir(filepath.Join(out, PartsDir))
	os.WriteFile(filepath.Join(out, PartsDir, ".torn"+data.TmpMarker+"1"), nil, 0o644)

	s2 := newTestStage(20)
	plan, err := Select(t.Context(), s2.job(out, true), filepath.Join(out, PartsDir))
	if err != nil {
		t.Fatal(err)
	}
	// Units 0-6 in part 0, 7-9 in part 1 (committed as the run ended).
	if plan.Selected != 20 || plan.AlreadyDone != 10 || plan.Todo != 10 || plan.Parts != 2 || plan.Next != 2 {
		t.Errorf("plan %+v", plan)
	}
	var left []string
	for id, err := range plan.Left(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if !slices.Equal(left, s.ids[10:]) {
		t.Errorf("left %v, want %v", left, s.ids[10:])
	}
	after, _ := os.ReadDir(filepath.Join(out, PartsDir))
	if len(after) != len(before)+1 || s2.started.Load() != 0 {
		t.Errorf("Select changed the parts: %v, then %v", before, after)
	}
}

// TestRunOneWriter: while a run works in its output directory, a second
// run there, resumed or not, is refused at once (ErrBusy) and touches
// nothing: the first run's part in progress survives, and it ends well.
func TestRunOneWriter(t *testing.T) {
	out := t.TempDir()
	first := newTestStage(30)
	inFlight, release := make(chan struct{}), make(chan struct{})
	first.work = func(ctx context.Context, id string) error {
		if id == "u010" {
			close(inFlight)
			<-release
		}
		return nil
	}
	j := first.job(out, false)
	j.Workers = 1
	j.CheckpointUnits = 4
	done := make(chan error, 1)
	go func() { done <- Run(t.Context(), j) }()
	<-inFlight
	for _, resume := range []bool{false, true} {
		second := newTestStage(30)
		err := Run(t.Context(), second.job(out, resume))
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "in use by process") {
			t.Errorf("resume %v: got %v, want ErrBusy naming the holder", resume, err)
		}
		if n := second.started.Load(); n != 0 {
			t.Errorf("resume %v: the second run started %d units", resume, n)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first run: %v", err)
	}
	checkOutput(t, out, first.ids)
}

// TestRunRetriesFailures: a resumed run does again the units whose record
// is a failure, and the output holds their new record only; with
// KeepFailed it keeps them as they are.
func TestRunRetriesFailures(t *testing.T) {
	failing := map[string]bool{"u003": true, "u007": true, "u011": true}
	for _, keep := range []bool{false, true} {
		out := t.TempDir()
		s := newTestStage(20)
		s.fail = func(id string) string {
			if failing[id] {
				return "server down"
			}
			return ""
		}
		if err := Run(t.Context(), s.job(out, false)); err != nil {
			t.Fatal(err)
		}
		if got := failedIn(t, out); len(got) != 3 || got["u007"] != "server down" {
			t.Fatalf("first run: failed %v, want 3", got)
		}

		s2 := newTestStage(20) // the server is back
		j := s2.job(out, true)
		j.KeepFailed = keep
		var last Progress
		j.Stamp = func(p Progress) { last = p }
		if err := Run(t.Context(), j); err != nil {
			t.Fatal(err)
		}
		rep, err := readTestReport(out)
		if err != nil {
			t.Fatal(err)
		}
		if keep {
			if got := failedIn(t, out); len(got) != 3 || s2.started.Load() != 0 || last.AlreadyDone != 20 || rep.Retried != 0 {
				t.Errorf("keep: failed %v, %d started, %d already done, retried %d; want the 3 failures kept, nothing run",
					got, s2.started.Load(), last.AlreadyDone, rep.Retried)
			}
			continue
		}
		checkOutput(t, out, s.ids)
		if s2.started.Load() != 3 || last.Retry != 3 || last.Retried != 3 || last.AlreadyDone != 17 || rep.Retried != 3 {
			t.Errorf("retry: %d started, progress %+v, report retried %d; want the 3 failures done again", s2.started.Load(), last, rep.Retried)
		}
		// Resumed again: nothing left to do, the output is the same.
		s3 := newTestStage(20)
		if err := Run(t.Context(), s3.job(out, true)); err != nil || s3.started.Load() != 0 {
			t.Fatalf("third run: %v, %d started", err, s3.started.Load())
		}
		checkOutput(t, out, s.ids)
	}
}

// TestRunStopsOnFailures: units failing in a row stop the run early with
// the last failure's reason; what was done is kept, and a resumed run
// does the failures again. A run whose every unit failed, too few to
// stop it, ends with ErrAllFailed once its output is written.
func TestRunStopsOnFailures(t *testing.T) {
	out := t.TempDir()
	s := newTestStage(200)
	s.fail = func(id string) string {
		if id >= "u010" {
			return `Post "http://127.0.0.1:9/v1/chat/completions": connection refused`
		}
		return ""
	}
	j := s.job(out, false)
	j.Workers = 1
	err := Run(t.Context(), j)
	if !errors.Is(err, ErrFailing) || !strings.Contains(err.Error(), "the last 20 units failed") || !strings.Contains(err.Error(), "http://127.0.0.1:9/v1") {
		t.Fatalf("Run: %v, want ErrFailing naming the failure", err)
	}
	if n := s.started.Load(); n > 10+20+2 {
		t.Errorf("%d units started, want the run to stop after 20 failures in a row", n)
	}
	rep, _ := readTestReport(out)
	if rep.Status != StatusInterrupted || len(partsOf(t, out)) == 0 {
		t.Errorf("status %q, %d parts; want interrupted, with what was done kept", rep.Status, len(partsOf(t, out)))
	}
	if err := Run(t.Context(), newTestStage(200).job(out, true)); err != nil {
		t.Fatalf("resumed once fixed: %v", err)
	}
	checkOutput(t, out, s.ids)

	for _, limit := range []int{0, -1} {
		out := t.TempDir()
		s := newTestStage(5)
		s.fail = func(string) string { return "bad key" }
		j := s.job(out, false)
		j.StopAfterFailures = limit
		err := Run(t.Context(), j)
		if !errors.Is(err, ErrAllFailed) || !strings.Contains(err.Error(), "all failed: 5 of 5 units, the first (unit u00") || !strings.HasSuffix(err.Error(), "with: bad key") {
			t.Errorf("limit %d: Run: %v, want ErrAllFailed", limit, err)
		}
		if got := failedIn(t, out); len(got) != 5 {
			t.Errorf("limit %d: output holds %d failures, want 5", limit, len(got))
		}
	}
}

// TestRunRefusesTwoRecords: a unit recorded twice in the parts is an
// error unless every record but the last is a failure.
func TestRunRefusesTwoRecords(t *testing.T) {
	out := t.TempDir()
	s := newTestStage(6)
	s.fail = func(id string) string {
		if id == "u002" {
			return "down"
		}
		return ""
	}
	if err := Run(t.Context(), s.job(out, false)); err != nil {
		t.Fatal(err)
	}
	parts := runKeepingParts(t, newTestStage(6).job(out, true))
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2 (the first run's output, the retry)", len(parts))
	}
	os.MkdirAll(filepath.Join(out, PartsDir), 0o755)
	for _, p := range parts {
		b, _ := os.ReadFile(p.Path)
		os.WriteFile(filepath.Join(out, PartsDir, filepath.Base(p.Path)), b, 0o644)
	}
	// Another copy of the first part (five units, four of them or more
	// successes) records successes twice.
	b, _ := os.ReadFile(parts[0].Path)
	os.WriteFile(filepath.Join(out, PartsDir, data.PartName(9)), b, 0o644)
	err := Run(t.Context(), newTestStage(6).job(out, true))
	if err == nil || !strings.Contains(err.Error(), "appears twice (in parts/part-0000") || !strings.Contains(err.Error(), "and parts/part-00009.parquet)") {
		t.Errorf("Run: %v, want a unit that appears twice", err)
	}
}
