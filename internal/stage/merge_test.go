package stage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

// runShards runs the units as n shards and returns their directories.
func runShards(t *testing.T, units, n int, change func(*testStage)) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		s := newTestStage(units)
		s.shard = data.Shard{I: i, N: n}
		s.usage = []llm.Stats{{Role: "r", Model: "m", Requests: 1, CostUSD: 0.5}}
		if change != nil {
			change(s)
		}
		out := filepath.Join(t.TempDir(), "shard")
		if err := Run(t.Context(), s.job(out, false)); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, out)
	}
	return dirs
}

func TestMerge(t *testing.T) {
	s := newTestStage(90)
	dirs := runShards(t, 90, 3, nil)
	out := filepath.Join(t.TempDir(), "merged")
	rep, err := Merge(t.Context(), out, dirs, s.mergeJob())
	if err != nil {
		t.Fatal(err)
	}
	order := checkOutput(t, out, s.ids)
	onDisk, err := readTestReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, onDisk); diff != "" {
		t.Errorf("the file differs from the returned report (-returned +file):\n%s", diff)
	}
	units, rows := 0, int64(0)
	var inOrder []string
	for i, in := range rep.Inputs {
		if in.Dir != dirs[i] || in.Shard != (data.Shard{I: i, N: 3}).String() {
			t.Errorf("input %d: %+v", i, in)
		}
		units += in.Units
		rows += in.Rows
		got := checkOutput(t, in.Dir, order[len(inOrder):len(inOrder)+in.Units])
		inOrder = append(inOrder, got...)
	}
	if !slices.Equal(inOrder, order) {
		t.Errorf("the merge is not the inputs in order")
	}
	if rep.Status != StatusDone || units != 90 || rep.Counts.Selected != 90 || rep.Counts.Units != 90 || rep.Counts.Rows != rows ||
		rep.Config.Shard != "" || len(rep.MissingShards) != 0 || rep.CostUSD != 1.5 || rep.Usage[0].Requests != 3 {
		t.Errorf("merged report %+v", rep)
	}

	// Two of three shards: merged, with the missing one named.
	part, err := Merge(t.Context(), filepath.Join(t.TempDir(), "m"), dirs[:2], newTestStage(90).mergeJob())
	if err != nil || !cmp.Equal(part.MissingShards, []string{"2/3"}) {
		t.Errorf("merge of 2 shards: missing %v, %v; want [2/3]", part.MissingShards, err)
	}
}

func TestMergeErrors(t *testing.T) {
	shards := runShards(t, 20, 2, nil)
	plain := func(from, to int) string {
		s := newTestStage(to)
		s.ids = s.ids[from:]
		out := filepath.Join(t.TempDir(), "plain")
		if err := Run(t.Context(), s.job(out, false)); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first, overlapping := plain(0, 10), plain(8, 20)
	otherTag := runShards(t, 20, 2, func(s *testStage) { s.cfg.Tag = "b" })
	other4 := runShards(t, 20, 4, nil)
	unfinished := filepath.Join(t.TempDir(), "unfinished")
	os.MkdirAll(unfinished, 0o755)
	WriteReport(unfinished, testReportFile, &testReport{Header: Header{Status: StatusRunning}})
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)

	tests := []struct {
		name   string
		out    string
		inputs []string
		want   error
		text   string
	}{
		{"no inputs", "", nil, ErrOptions, "no inputs"},
		{"same shard twice", "", []string{shards[0], shards[0]}, ErrMismatch, "both shard 0/2"},
		{"a unit twice", "", []string{first, overlapping}, ErrMismatch, "appears twice (in " + first},
		{"sharded and not", "", []string{shards[0], first}, ErrMismatch, "split the questions differently"},
		{"configured differently", "", []string{shards[0], otherTag[1]}, ErrMismatch, "Tag:b"},
		{"other split", "", []string{shards[0], other4[1]}, ErrMismatch, "split the questions differently"},
		{"unfinished", "", []string{shards[0], unfinished}, nil, "has not finished"},
		{"missing input", "", []string{shards[0], filepath.Join(full, "none")}, os.ErrNotExist, ""},
		{"output not empty", full, shards, ErrOutExists, ""},
		{"output is an input", shards[0], shards, ErrOptions, "is the output directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged")
			}
			_, err := Merge(t.Context(), out, tt.inputs, newTestStage(20).mergeJob())
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("Merge: %v; want %v with %q", err, tt.want, tt.text)
			}
			if tt.out == "" {
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a failed merge left %s behind", out)
				}
			}
		})
	}
}
