package label

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
)

const teacherModel = "teacher-test"

// noWait makes retries immediate.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// llmTeacher returns a model teacher over srv with the shared stack
// (retries without waiting, accounting at a price of $1 and $2 per million
// tokens) and its meter.
func llmTeacher(t *testing.T, srv *llmtest.Server, temperature float64) (*LLMTeacher, *llm.Meter) {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: teacherModel, Role: "teacher"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.Stack(c, llm.StackOptions{
		Retry:  llm.RetryOptions{MaxAttempts: 8, Seed: 1, Sleep: noWait},
		Prices: map[string]llm.Price{teacherModel: {Input: 1, Output: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &LLMTeacher{Chatter: m, Model: teacherModel, Temperature: temperature}, m
}

func llmOptions(in, out string, qs data.QuestionMap, teacher *LLMTeacher, m *llm.Meter, samples int) Options {
	return Options{
		In: in, Out: out, Questions: qs, Teacher: teacher, Samples: samples, Workers: 4,
		Usage: func() []llm.Stats { return []llm.Stats{m.Snapshot()} },
		Cost:  func() float64 { return m.Snapshot().CostUSD },
		Info:  Info{Teacher: NameLLM, Model: teacherModel, Template: TeacherTemplateHash, Temperature: teacher.Temperature, MaxTokens: DefaultMaxTokens},
	}
}

// seedOf returns the seed member of a request body, -1 when absent.
func seedOf(r llmtest.Request) int {
	raw, ok := r.Member("seed")
	if !ok {
		return -1
	}
	var n int
	json.Unmarshal(raw, &n)
	return n
}

// votingAnswer answers like a teacher whose samples disagree now and then:
// the empty context is insufficient; otherwise sample 2 (seed 2) of every
// state whose question mentions "born" says insufficient, the others say
// sufficient; every 17th request gets prose instead of JSON.
func votingAnswer() func(llmtest.Request) string {
	var n atomic.Int64
	return func(r llmtest.Request) string {
		if n.Add(1)%17 == 0 {
			return "I think the evidence is sufficient."
		}
		user := r.Messages[len(r.Messages)-1].Content
		gap := `{"sufficient": false, "gap_items": [{"category": "bridge entity", "target": "Subject", "slot": "identity", "description": "who it is"}]}`
		switch {
		case strings.Contains(user, "(no evidence yet)"):
			return gap
		case seedOf(r) == 2 && strings.Contains(user, "born"):
			return gap
		}
		return `{"sufficient": true, "gap_items": []}`
	}
}

func TestRunRetrievalTruth(t *testing.T) {
	in, qs := trajectories(t)
	out := filepath.Join(t.TempDir(), "labels")
	sum, ls := runLabels(t, Options{In: in, Out: out, Questions: qs, Teacher: RetrievalTruth{},
		CheckpointStates: 100, Info: Info{Teacher: NameRetrievalTruth, Model: RetrievalTruthModel, Template: RetrievalTruthTemplate}})
	states := stateCount(t, in)
	if len(ls) != states || sum.Counts.Output.States != states {
		t.Fatalf("%d labels (report %d), want %d", len(ls), sum.Counts.Output.States, states)
	}
	traj, err := data.ReadParquet[data.State](in)
	if err != nil {
		t.Fatal(err)
	}
	byKey := make(map[data.StateKey]data.State)
	for _, s := range traj {
		byKey[s.Key()] = s
	}
	for _, l := range ls {
		s := byKey[l.Key()]
		q := qs[l.QuestionID]
		want := TruthVerdict(q, s.Evidence)
		if d := cmp.Diff(want, l.Verdict(), cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("state %s round %d: (-want +got):\n%s", l.QuestionID, l.Round, d)
		}
		if l.Context != s.Context || l.Question != s.Question || l.Agreement != 1 || len(l.Samples) != 1 || l.Teacher != NameRetrievalTruth {
			t.Fatalf("label %+v does not carry its state", l)
		}
		tr := data.JudgeTruth(q, s.Evidence)
		if l.TruthStrength != tr.Strength.String() || l.TruthComplete != tr.Complete {
			t.Fatalf("truth fields %q %v, want %v", l.TruthStrength, l.TruthComplete, tr)
		}
	}
	if o := sum.Counts.Output; o.TruthAgree != o.TruthSettled || o.TruthSettled == 0 {
		t.Errorf("retrieval truth disagrees with itself: %d of %d", o.TruthAgree, o.TruthSettled)
	}
	rep, err := ReadReport(out)
	if err != nil || rep.Status != StatusDone || rep.Counts.Parts != (states+99)/100 {
		t.Errorf("label.json: %+v, %v", rep, err)
	}
}

// TestRunSkipEmpty leaves the states with no evidence unlabelled and
// counts them: every other state is labelled once.
func TestRunSkipEmpty(t *testing.T) {
	in, qs := trajectories(t)
	traj, err := data.ReadParquet[data.State](in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[data.StateKey]bool{}
	empty := 0
	for _, s := range traj {
		switch {
		case s.Failure != "":
		case s.Context == "":
			empty++
		default:
			want[s.Key()] = true
		}
	}
	if empty == 0 {
		t.Fatal("the sample rollout has no state without evidence")
	}
	sum, ls := runLabels(t, Options{In: in, Out: filepath.Join(t.TempDir(), "labels"), Questions: qs, Teacher: RetrievalTruth{},
		SkipEmpty: true, Info: Info{Teacher: NameRetrievalTruth, Model: RetrievalTruthModel, Template: RetrievalTruthTemplate}})
	got := map[data.StateKey]bool{}
	for _, l := range ls {
		got[l.Key()] = true
	}
	if !maps.Equal(got, want) || sum.Counts.EmptyStates != empty {
		t.Errorf("labelled %d states, counted %d empty; want the %d with evidence, %d empty", len(got), sum.Counts.EmptyStates, len(want), empty)
	}
}

// TestRunLLMWithFaults labels with three samples against a server that
// fails a quarter of its requests (5xx, 429, malformed and truncated
// bodies) and gives prose instead of JSON now and then: every state must
// be labelled once, the prose counted as parse failures, the votes and
// seeds right.
func TestRunLLMWithFaults(t *testing.T) {
	in, qs := trajectories(t)
	srv := llmtest.NewServer(llmtest.Options{Seed: 5, ServerError: 0.08, Unavailable: 0.05, RateLimited: 0.04,
		Malformed: 0.05, Truncated: 0.03, Answer: votingAnswer()})
	defer srv.Close()
	teacher, m := llmTeacher(t, srv, 0.7)
	out := filepath.Join(t.TempDir(), "labels")
	opts := llmOptions(in, out, qs, teacher, m, 3)
	opts.Limit = 150
	sum, ls := runLabels(t, opts)
	if len(ls) != 150 {
		t.Fatalf("%d labels, want 150", len(ls))
	}
	var parseFailures, split int
	for _, l := range ls {
		if len(l.Samples) != 3 {
			t.Fatalf("%d samples, want 3", len(l.Samples))
		}
		for k, s := range l.Samples {
			if s.Error != "" {
				t.Errorf("sample failed although retried: %s", s.Error)
			}
			if s.ParseError != "" {
				parseFailures++
			}
			if int(s.Sample) != k || s.Seed != int64(k) || s.Temperature != 0.7 || s.TemplateHash != TeacherTemplateHash || s.PromptTokens == 0 {
				t.Errorf("sample %d: %+v", k, s)
			}
		}
		if l.Agreement < 1 && l.Failure == "" {
			split++
		}
		want := l.Round > 0
		if l.Failure == "" && l.Votes > 0 && l.Sufficient != want && l.Agreement > 0.5 {
			t.Errorf("state %s round %d: sufficient %v with agreement %.2f", l.QuestionID, l.Round, l.Sufficient, l.Agreement)
		}
	}
	o := sum.Counts.Output
	if parseFailures == 0 || int64(parseFailures) != o.ParseFailures || split == 0 {
		t.Errorf("parse failures %d (report %d), split states %d", parseFailures, o.ParseFailures, split)
	}
	seeds := map[int]int{}
	for _, r := range srv.Requests() {
		if r.Path == "/v1/chat/completions" && r.Status == 200 && r.Fault == llmtest.None {
			seeds[seedOf(r)]++
		}
	}
	if seeds[-1] != 150 || seeds[1] != 150 || seeds[2] != 150 {
		t.Errorf("answered requests by seed %v, want 150 each of none, 1 and 2", seeds)
	}
	st := m.Snapshot()
	if st.Retries == 0 || st.CostUSD <= 0 || sum.CostUSD != st.CostUSD {
		t.Errorf("usage %+v, report cost %v", st, sum.CostUSD)
	}
	t.Logf("server: %+v; %d parse failures, %d split states", srv.Counts(), parseFailures, split)
}

func TestRunResume(t *testing.T) {
	in, qs := trajectories(t)
	out := filepath.Join(t.TempDir(), "labels")
	states := stateCount(t, in)
	opts := Options{In: in, Out: out, Questions: qs, Teacher: RetrievalTruth{}, Workers: 3, CheckpointStates: 40,
		Info: Info{Teacher: NameRetrievalTruth, Model: RetrievalTruthModel}}

	// The first invocation is cancelled after its second checkpoint.
	ctx, cancel := context.WithCancel(t.Context())
	first := opts
	first.Progress = func(p Progress) {
		if p.Parts == 2 {
			cancel()
		}
	}
	_, err := Run(ctx, first)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(out, LabelsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an interrupted run wrote labels.parquet: %v", err)
	}
	// A torn part, as kill -9 leaves it.
	os.WriteFile(filepath.Join(out, PartsDir, "."+data.PartName(9)+data.TmpMarker+"1"), []byte("PAR1"), 0o644)

	if _, err := Run(t.Context(), opts); !errors.Is(err, ErrOutExists) {
		t.Errorf("rerun without Resume: %v, want ErrOutExists", err)
	}
	other := opts
	other.Resume, other.Samples = true, 2
	if _, err := Run(t.Context(), other); !errors.Is(err, ErrMismatch) {
		t.Errorf("resume with other samples: %v, want ErrMismatch", err)
	}

	opts.Resume = true
	sum, ls := runLabels(t, opts)
	if sum.Counts.AlreadyDone < 80 || sum.Counts.AlreadyDone+sum.Counts.Run.States != states || sum.Resumes != 1 {
		t.Errorf("resumed: %d already done + %d now, want %d; resumes %d", sum.Counts.AlreadyDone, sum.Counts.Run.States, states, sum.Resumes)
	}
	if len(ls) != states {
		t.Errorf("%d labels, want %d", len(ls), states)
	}
	if left, _ := filepath.Glob(filepath.Join(out, PartsDir, ".*")); len(left) > 0 {
		t.Errorf("leftover temporary files: %v", left)
	}
}

func TestRunBudget(t *testing.T) {
	in, qs := trajectories(t)
	srv := llmtest.NewServer(llmtest.Options{Answer: votingAnswer()})
	defer srv.Close()
	teacher, m := llmTeacher(t, srv, 0)
	out := filepath.Join(t.TempDir(), "labels")
	opts := llmOptions(in, out, qs, teacher, m, 1)
	opts.Workers, opts.BudgetUSD, opts.Limit = 2, 0.01, 200
	sum, runErr := Run(t.Context(), opts)
	if !errors.Is(runErr, ErrBudget) {
		t.Fatalf("run: %v, want ErrBudget", runErr)
	}
	done := sum.Counts.Run.States
	if done == 0 || done >= 200 || !sum.BudgetReached || sum.Status != StatusBudget {
		t.Fatalf("budget stop after %d states, status %q", done, sum.Status)
	}
	// At most the states in flight (Workers) are labelled past the budget.
	maxState := 0.0
	for _, p := range testkit.Parts(t, filepath.Join(out, PartsDir)) {
		ls, err := data.ReadParquet[data.Label](p.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			maxState = max(maxState, (float64(l.PromptTokens)*1+float64(l.CompletionTokens)*2)/1e6)
		}
	}
	if over := m.Snapshot().CostUSD - opts.BudgetUSD; over > float64(opts.Workers)*maxState+1e-12 {
		t.Errorf("spent $%.5f over the budget, more than %d states' worth ($%.5f each at most)", over, opts.Workers, maxState)
	}
	if !strings.Contains(runErr.Error(), fmt.Sprintf("after %d of 200 states", done)) {
		t.Errorf("error %q does not say how far it got", runErr)
	}
	// Resuming with a larger budget finishes the run.
	teacher2, m2 := llmTeacher(t, srv, 0)
	opts2 := llmOptions(in, out, qs, teacher2, m2, 1)
	opts2.Resume, opts2.Limit, opts2.BudgetUSD = true, 200, 100
	sum, ls := runLabels(t, opts2)
	// A state of the first invocation with no usable sample is labelled again.
	if len(ls) != 200 || sum.Counts.AlreadyDone+sum.Retried != done {
		t.Errorf("%d labels after resuming (already done %d), want 200 (%d)", len(ls), sum.Counts.AlreadyDone, done)
	}
	if sum.CostUSD < m.Snapshot().CostUSD+m2.Snapshot().CostUSD-1e-9 {
		t.Errorf("report cost %v does not add up both invocations", sum.CostUSD)
	}
}

func TestPreflightSpendsNothing(t *testing.T) {
	in, qs := trajectories(t)
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	teacher, m := llmTeacher(t, srv, 0.7)
	out := filepath.Join(t.TempDir(), "labels")
	opts := llmOptions(in, out, qs, teacher, m, 3)
	e, err := Preflight(t.Context(), opts, teacherModel, map[string]llm.Price{teacherModel: {Input: 1, Output: 2}})
	if err != nil {
		t.Fatal(err)
	}
	states := stateCount(t, in)
	if e.States != states || e.Requests != int64(3*states) || e.PromptTokens < int64(3*states*300) || !e.Priced {
		t.Errorf("estimate %+v, want %d states", e, states)
	}
	wantMax := (float64(e.PromptTokens)*1 + float64(3*states*DefaultMaxTokens)*2) / 1e6
	if diff := e.CostMaxUSD - wantMax; diff > 1e-9 || diff < -1e-9 || e.CostExpectedUSD >= e.CostMaxUSD {
		t.Errorf("cost %v expected, %v max; want max %v", e.CostExpectedUSD, e.CostMaxUSD, wantMax)
	}
	if n := srv.Counts().Requests; n != 0 {
		t.Errorf("the preflight sent %d requests", n)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the preflight wrote %s: %v", out, err)
	}
}

// TestTeacherPrompt checks that the teacher sees the judge's user message
// byte for byte, and pins the prompt in a golden file.
func TestTeacherPrompt(t *testing.T) {
	ctx := "[The Band]\nThe Band was founded by Jane Roe.\n\n[X (song)]\nX is a song by The Band."
	p := TeacherPrompt("Who founded the band that wrote X?", ctx)
	if j := judge.Prompt("Who founded the band that wrote X?", ctx); p.User != j.User {
		t.Errorf("teacher user message differs from the judge's:\n%s\n---\n%s", p.User, j.User)
	}
	got := "SYSTEM:\n" + p.System + "\n\nUSER:\n" + p.User + "\n"
	testkit.Golden(t, "teacher_prompt.golden", got)
	if TeacherTemplateHash == judge.TemplateHash {
		t.Error("the teacher's template hash is the judge's")
	}
}

// TestShardsAndMerge labels a rollout in three shards and merges them: the
// merge holds every state once, as one run would.
func TestShardsAndMerge(t *testing.T) {
	in, qs := trajectories(t)
	dir := t.TempDir()
	var outs []string
	total := 0
	for i := range 3 {
		sh, err := data.ParseShard(fmt.Sprintf("%d/3", i))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprint("shard", i))
		sum, err := Run(t.Context(), Options{In: in, Out: out, Questions: qs, Teacher: RetrievalTruth{}, Shard: sh,
			Info: Info{Teacher: NameRetrievalTruth, Model: RetrievalTruthModel}})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Counts.Selected == 0 || sum.Counts.OtherShards == 0 {
			t.Errorf("shard %d: %d states, %d of other shards", i, sum.Counts.Selected, sum.Counts.OtherShards)
		}
		total += sum.Counts.Selected
		outs = append(outs, out)
	}
	states := stateCount(t, in)
	if total != states {
		t.Errorf("shards hold %d states, want %d", total, states)
	}
	rep, err := Merge(t.Context(), filepath.Join(dir, "all"), outs)
	if err != nil {
		t.Fatal(err)
	}
	if ls := testkit.Labels(t, filepath.Join(dir, "all", LabelsFile)); len(ls) != states || rep.Counts.Output.States != states {
		t.Errorf("merged %d labels (report %d), want %d", len(ls), rep.Counts.Output.States, states)
	}
	if _, err := Merge(t.Context(), filepath.Join(dir, "twice"), []string{outs[0], outs[0]}); !errors.Is(err, ErrMismatch) {
		t.Errorf("a shard given twice: %v", err)
	}
	if _, err := Merge(t.Context(), filepath.Join(dir, "all"), outs); !errors.Is(err, ErrOutExists) {
		t.Errorf("merge into a full directory: %v", err)
	}
	// Shards of another split, or a run not sharded, do not go with them.
	half := filepath.Join(dir, "half")
	if _, err := Run(t.Context(), Options{In: in, Out: half, Questions: qs, Teacher: RetrievalTruth{}, Shard: data.Shard{I: 1, N: 2},
		Info: Info{Teacher: NameRetrievalTruth, Model: RetrievalTruthModel}}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{outs[0], half}, {half, outs[1]}} {
		if _, err := Merge(t.Context(), filepath.Join(dir, "mixed"), bad); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "split the questions differently") {
			t.Errorf("merge of shards of two splits: %v, want ErrMismatch", err)
		}
	}
	rep, err = Merge(t.Context(), filepath.Join(dir, "part"), outs[:2])
	if err != nil || !cmp.Equal(rep.MissingShards, []string{"2/3"}) || rep.Error != "" {
		t.Errorf("a partial merge: %v, missing shards %v, error %q; want 2/3 missing", err, rep.MissingShards, rep.Error)
	}
}

// TestSeenStates: a state of the input twice is found, whether its
// question's rows are together or come again later.
func TestSeenStates(t *testing.T) {
	k := func(q string, r int32) data.StateKey { return data.StateKey{QuestionID: q, Round: r} }
	tests := []struct {
		name string
		keys []data.StateKey
		want string // the error; "" for none
	}{
		{"distinct", []data.StateKey{k("a", 0), k("a", 1), k("b", 0), k("c", 0), k("c", 1)}, ""},
		{"round twice", []data.StateKey{k("a", 0), k("a", 1), k("a", 1)}, "state a round 1 appears twice"},
		{"question again", []data.StateKey{k("a", 0), k("b", 0), k("a", 1)}, "question a appears twice (again with round 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seenStates
			var err error
			for _, key := range tt.keys {
				if err = s.add(key); err != nil {
					break
				}
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
