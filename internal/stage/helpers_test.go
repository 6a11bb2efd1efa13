package stage

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
)

// The test stage: a unit is an id "uNNN" of the input, and its work
// writes NNN%3+1 rows numbered from 0, the last one marked.

const testKind data.Kind = "stage-test"

type row struct {
	Unit string `parquet:"unit"`
	Seq  int32  `parquet:"seq"`
	Last bool   `parquet:"last"`
	// Failed is the reason a failed unit's one row gives.
	Failed string `parquet:"failed"`
}

type testConfig struct {
	Tag   string `json:"tag"`
	Limit int    `json:"limit,omitempty"`
	Shard string `json:"shard,omitempty"`
}

type testCounts struct {
	Selected    int   `json:"selected"`
	AlreadyDone int   `json:"already_done"`
	Done        int   `json:"done"`
	Parts       int   `json:"parts"`
	Units       int   `json:"units"`
	Rows        int64 `json:"rows"`
}

type testReport struct {
	Header
	Config testConfig `json:"config"`
	Counts testCounts `json:"counts"`
}

const testReportFile = "test.json"

func readTestReport(dir string) (*testReport, error) {
	r, err := ReadReport[testReport](dir, testReportFile)
	return &r, err
}

// testStage is a stage over ids; its fields say how it behaves.
type testStage struct {
	ids   []string
	cfg   testConfig
	shard data.Shard
	// work, when set, is called at the start of each unit's work; an
	// error it returns is the unit's (systemic).
	work func(ctx context.Context, id string) error
	// fail, when set, says why a unit fails ("" when it does not): its
	// rows are then one failure row.
	fail func(id string) string
	// usage is reported as this invocation's model usage.
	usage []llm.Stats

	rep testReport
	// counted tallies the output (Count), wrote the units written.
	counted testCounts
	wrote   []string
	started atomic.Int64
	// countPasses counts the passes over the units with count set.
	countPasses int
}

func newTestStage(n int) *testStage {
	s := &testStage{cfg: testConfig{Tag: "a"}}
	for i := range n {
		s.ids = append(s.ids, fmt.Sprintf("u%03d", i))
	}
	return s
}

func rowsOf(id string) []row {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "u"))
	rows := make([]row, n%3+1)
	for i := range rows {
		rows[i] = row{Unit: id, Seq: int32(i), Last: i == len(rows)-1}
	}
	return rows
}

func (s *testStage) layout() Layout[string, row, *testReport] {
	return Layout[string, row, *testReport]{
		File: "out.parquet", ReportFile: testReportFile, Kind: testKind, Unit: "units",
		Key:      func(r *row) string { return r.Unit },
		Describe: func(id string) string { return "unit " + id },
		Failure:  func(rows []row) string { return rows[len(rows)-1].Failed },
		Count: func(rows []row) error {
			for i, r := range rows {
				if int(r.Seq) != i || r.Last != (i == len(rows)-1) {
					return fmt.Errorf("unit %s: row %d is %+v", r.Unit, i, r)
				}
			}
			s.counted.Units++
			s.counted.Rows += int64(len(rows))
			return nil
		},
		Read: readTestReport,
		Same: func(a, b *testReport, shard bool) error {
			x, y := a.Config, b.Config
			if !shard {
				x.Shard, y.Shard = "", ""
			}
			if x != y {
				return fmt.Errorf("%+v vs %+v: %w", x, y, ErrMismatch)
			}
			return nil
		},
	}
}

func (s *testStage) units(_ context.Context, count bool) iter.Seq2[string, error] {
	if count {
		s.countPasses++
	}
	return func(yield func(string, error) bool) {
		for i, id := range s.ids {
			if s.cfg.Limit > 0 && i == s.cfg.Limit {
				return
			}
			if s.shard.Holds(id) && !yield(id, nil) {
				return
			}
		}
	}
}

// job returns the job of one invocation over out.
func (s *testStage) job(out string, resume bool) Job[string, string, row, *testReport] {
	s.cfg.Shard = s.shard.String()
	s.rep = testReport{Config: s.cfg}
	s.counted = testCounts{}
	return Job[string, string, row, *testReport]{
		Layout: s.layout(), Name: "test", Report: &s.rep,
		Out: out, Resume: resume, Input: "ids",
		Units: s.units, UnitKey: func(id string) string { return id },
		Work: func(ctx context.Context, id string) ([]row, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.started.Add(1)
			if s.work != nil {
				if err := s.work(ctx, id); err != nil {
					return nil, err
				}
			}
			if s.fail != nil {
				if reason := s.fail(id); reason != "" {
					return []row{{Unit: id, Last: true, Failed: reason}}, nil
				}
			}
			return rowsOf(id), nil
		},
		Workers: 4, CheckpointUnits: 5, CheckpointInterval: time.Hour,
		Usage: func() []llm.Stats { return s.usage },
		Wrote: func(rows []row) { s.wrote = append(s.wrote, rows[0].Unit) },
		Stamp: func(p Progress) {
			c := &s.rep.Counts
			c.Selected, c.AlreadyDone, c.Done, c.Parts = p.Selected, p.AlreadyDone, p.Done, p.Parts
		},
		Finish: func() { s.rep.Counts.Units, s.rep.Counts.Rows = s.counted.Units, s.counted.Rows },
	}
}

func (s *testStage) mergeJob() MergeJob[string, row, *testReport] {
	s.counted = testCounts{}
	return MergeJob[string, row, *testReport]{
		Layout: s.layout(),
		Combine: func(reps []*testReport) *testReport {
			m := &testReport{Config: reps[0].Config}
			m.Config.Shard = ""
			for _, r := range reps {
				m.Counts.Selected += r.Counts.Selected
			}
			m.Counts.Units, m.Counts.Rows = s.counted.Units, s.counted.Rows
			return m
		},
	}
}

// checkOutput reads the output in dir and checks that it holds each of
// want once, each with its rows; it returns the units in file order.
func checkOutput(t *testing.T, dir string, want []string) []string {
	t.Helper()
	rows, err := data.ReadParquet[row](filepath.Join(dir, "out.parquet"))
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	var order []string
	for i := 0; i < len(rows); {
		id := rows[i].Unit
		n := len(rowsOf(id))
		if i+n > len(rows) || !slices.Equal(rows[i:i+n], rowsOf(id)) {
			t.Fatalf("unit %s at row %d: rows %+v", id, i, rows[i:min(i+n, len(rows))])
		}
		order = append(order, id)
		i += n
	}
	got, w := slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, w) {
		t.Fatalf("output holds %v, want %v", got, w)
	}
	return order
}

// failedIn reads the output in dir and returns the reasons of its failed
// units, by unit.
func failedIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	rows, err := data.ReadParquet[row](filepath.Join(dir, "out.parquet"))
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	failed := map[string]string{}
	for _, r := range rows {
		if r.Failed != "" {
			failed[r.Unit] = r.Failed
		}
	}
	return failed
}

func partsOf(t *testing.T, dir string) []data.Part {
	t.Helper()
	return testkit.Parts(t, filepath.Join(dir, PartsDir))
}

// runKeepingParts runs j to the end and returns copies of the parts it
// assembled its output from (Run removes them once the output is
// written), in a directory of their own.
func runKeepingParts(t *testing.T, j Job[string, string, row, *testReport]) []data.Part {
	t.Helper()
	keep := t.TempDir()
	finish := j.Finish
	j.Finish = func() {
		for _, p := range testkit.Parts(t, filepath.Join(j.Out, PartsDir)) {
			b, err := os.ReadFile(p.Path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(keep, filepath.Base(p.Path)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if finish != nil {
			finish()
		}
	}
	if err := Run(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return testkit.Parts(t, keep)
}

// checkNoParts checks that a finished output in dir holds its rows once:
// no parts directory beside the output file, and no leftover of one.
func checkNoParts(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("a finished output holds the directory %s", e.Name())
		}
	}
}

func (r *testReport) Sharding() (string, int) { return r.Config.Shard, r.Counts.Selected }
