package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/rollout"
)

// runShards runs the questions as n shards and returns their directories.
func runShards(t *testing.T, qs []data.Question, n int, opts Options) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		o := opts
		o.Questions, o.Out, o.Shard = Slice(qs), filepath.Join(t.TempDir(), "shard"), data.Shard{I: i, N: n}
		if o.Roles.Judge == nil {
			o.Roles, _ = fakeRoles()
		}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, o.Out)
	}
	return dirs
}

func TestShardsThenMerge(t *testing.T) {
	qs := makeQuestions(90, func(i int) int {
		if i%11 == 0 {
			return 0
		}
		return -1
	})
	usage := []llm.Stats{{Role: "judge", Model: "m", Requests: 10, PromptTokens: 5, CostUSD: 0.5}}
	dirs := runShards(t, qs, 3, Options{CheckpointQuestions: 8, Usage: func() []llm.Stats { return usage }})

	// The shards partition the questions.
	seen := map[string]int{}
	for _, d := range dirs {
		rows, err := data.ReadParquet[data.State](filepath.Join(d, TrajectoriesFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.IsFinal {
				seen[r.QuestionID]++
			}
		}
	}
	for _, q := range qs {
		if seen[q.ID] != 1 {
			t.Errorf("question %s is in %d shards", q.ID, seen[q.ID])
		}
	}

	out := filepath.Join(t.TempDir(), "merged")
	rep, err := Merge(context.Background(), out, dirs)
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, out, testkit.QuestionIDs(qs))
	onDisk, err := ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, onDisk); diff != "" {
		t.Errorf("merged run.json differs from the returned report (-returned +file):\n%s", diff)
	}
	c := rep.Counts
	if rep.Status != StatusDone || c.Selected != 90 || c.Output.Questions != 90 || c.Output.Failed != 9 || rep.Config.Shard != "" || len(rep.MissingShards) != 0 {
		t.Errorf("merged report: status %s, counts %+v, shard %q, missing %v", rep.Status, c, rep.Config.Shard, rep.MissingShards)
	}
	if len(rep.Inputs) != 3 || rep.Inputs[0].Shard != "0/3" || rep.Inputs[0].Units+rep.Inputs[1].Units+rep.Inputs[2].Units != 90 {
		t.Errorf("inputs %+v", rep.Inputs)
	}
	if len(rep.Usage) != 1 || rep.Usage[0].Requests != 30 || rep.CostUSD != 1.5 {
		t.Errorf("usage %+v, cost %v; want the sum of the shards'", rep.Usage, rep.CostUSD)
	}
	if len(rep.Roles.Judge.Seen) != 1 || rep.Roles.Judge.Seen[0].Rows != c.Output.States {
		t.Errorf("judge seen %+v, states %d", rep.Roles.Judge.Seen, c.Output.States)
	}

	// Two of three shards: merged, with the missing one named.
	part, err := Merge(context.Background(), filepath.Join(t.TempDir(), "m"), dirs[:2])
	if err != nil || !cmp.Equal(part.MissingShards, []string{"2/3"}) {
		t.Errorf("merge of 2 shards: missing %v, %v; want [2/3]", part.MissingShards, err)
	}
}

func TestMergeErrors(t *testing.T) {
	qs := makeQuestions(20, nil)
	shards := runShards(t, qs, 2, Options{})
	plain := func(qs []data.Question) string {
		roles, _ := fakeRoles()
		out := filepath.Join(t.TempDir(), "plain")
		if _, err := Run(context.Background(), Options{Questions: Slice(qs), Roles: roles, Out: out}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first, overlapping := plain(qs[:10]), plain(qs[8:])
	fixed := runShards(t, qs, 2, Options{Loop: rollout.Options{Policy: rollout.Fixed}})
	other4 := runShards(t, qs, 4, Options{})
	unfinished := filepath.Join(t.TempDir(), "unfinished")
	os.MkdirAll(unfinished, 0o755)
	stage.WriteReport(unfinished, ReportFile, Report{Header: stage.Header{Status: StatusRunning}})

	// What the stage engine refuses whatever the stage (no inputs, a shard
	// twice, a missing input, the output directory) is tested in package
	// stage; these are the refusals that rest on what runner gives it:
	// its rows' key, its report's shard and configuration, its status.
	tests := []struct {
		name   string
		inputs []string
		want   error  // errors.Is
		text   string // in the message
	}{
		{"a question twice", []string{first, overlapping}, ErrMismatch, "appears twice"},
		{"sharded and not", []string{shards[0], first}, ErrMismatch, "split the questions differently"},
		{"other loop", []string{shards[0], fixed[1]}, ErrMismatch, "loop"},
		{"other split", []string{shards[0], other4[1]}, ErrMismatch, "split the questions differently"},
		{"unfinished", []string{shards[0], unfinished}, nil, "has not finished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			_, err := Merge(context.Background(), out, tt.inputs)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("Merge: %v; want %v with %q", err, tt.want, tt.text)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed merge left %s behind", out)
			}
		})
	}
}
