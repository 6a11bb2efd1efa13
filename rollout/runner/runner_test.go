package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/dataset"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/stage"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/rollout"
)

func TestRunWritesEveryQuestionOnce(t *testing.T) {
	failEvery5 := func(i int) int {
		if i%5 == 0 {
			return 0
		}
		return -1
	}
	tests := []struct {
		name       string
		n          int
		workers    int
		checkpoint int
		fail       func(int) int
		wantParts  int
	}{
		{"one worker, one part", 20, 1, 0, nil, 1},
		{"a part per question", 9, 3, 1, nil, 9},
		{"parts of 7", 50, 4, 7, failEvery5, 8},
		{"many workers", 200, 32, 64, failEvery5, 4},
		{"no questions", 0, 4, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs := makeQuestions(tt.n, tt.fail)
			roles, _ := fakeRoles()
			out := filepath.Join(t.TempDir(), "run")
			var last Progress
			sum, err := Run(context.Background(), Options{
				Questions: Slice(qs), Roles: roles, Out: out, Workers: tt.workers,
				CheckpointQuestions: tt.checkpoint, CheckpointInterval: time.Hour,
				Progress: func(p Progress) { last = p },
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			by := checkOutput(t, out, testkit.QuestionIDs(qs))
			wantFailed := 0
			for i, q := range qs {
				if tt.fail != nil && tt.fail(i) >= 0 {
					wantFailed++
					st := by[q.ID][0]
					if !strings.Contains(st.Failure, "judge at round 0") || !strings.Contains(st.Failure, "model unreachable") {
						t.Errorf("question %s: failure %q, want the judge's error at round 0", q.ID, st.Failure)
					}
					if st.Question != q.Text || st.Dataset != q.Dataset {
						t.Errorf("question %s: failure row %+v lacks the question", q.ID, st)
					}
					continue
				}
				if got, want := len(by[q.ID]), i%4+2; got != want {
					t.Errorf("question %s: %d states, want %d", q.ID, got, want)
				}
			}
			c := sum.Counts
			if c.Selected != tt.n || c.Run.Done != tt.n-wantFailed || c.Run.Failed != wantFailed ||
				c.Output.Questions != tt.n || c.Output.Failed != wantFailed || c.Output.Parts != tt.wantParts {
				t.Errorf("counts %+v, want %d selected, %d failed, %d parts", c, tt.n, wantFailed, tt.wantParts)
			}
			if c.Run.States != c.Output.States {
				t.Errorf("states written %d, output states %d", c.Run.States, c.Output.States)
			}
			if last.Done != tt.n-wantFailed || last.Failed != wantFailed || last.Total != tt.n || last.States != c.Run.States || last.Parts != tt.wantParts {
				t.Errorf("last progress %+v", last)
			}
			checkStoredOnce(t, out)
		})
	}
}

func TestRunReport(t *testing.T) {
	qs := makeQuestions(40, func(i int) int {
		if i == 7 {
			return 0
		}
		return -1
	})
	roles, _ := fakeRoles()
	out := t.TempDir()
	usage := []llm.Stats{{Role: "judge", Model: "m", Requests: 3, PromptTokens: 100, CostUSD: 0.25}}
	sum, err := Run(context.Background(), Options{
		Questions: Slice(qs), Roles: roles, Out: out, Workers: 3, Limit: 40,
		Loop: rollout.Options{Policy: rollout.EarlyStop, TopK: 3},
		Info: Info{
			Version: "v9", Questions: "fake questions", Retriever: "fake index",
			Judge: Role{Name: "fake", Model: "fake-judge", BaseURL: "http://x"}, Extractor: Role{Name: "fake"}, Reader: Role{Name: "fake"},
		},
		Usage: func() []llm.Stats { return usage },
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sum.Report, rep, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("run.json differs from the summary (-summary +file):\n%s", diff)
	}
	// Question i needs i%4+1 retrievals, so i%4+2 states; question 7
	// (4 retrievals) failed.
	const states = 10*2 + 10*3 + 10*4 + 9*5
	want := Report{
		Header: stage.Header{Status: StatusDone, Version: "v9", Usage: usage, CostUSD: 0.25},
		Config: Config{
			Questions: "fake questions", Retriever: "fake index", Limit: 40, Workers: 3,
			CheckpointQuestions: DefaultCheckpointQuestions, CheckpointSeconds: DefaultCheckpointInterval.Seconds(),
			Loop: Loop{Policy: "early-stop", MaxRetrievals: 4, TopK: 3, MaxEvidence: 6, MaxSentences: 40, Dedup: "doc-id"},
		},
		Roles: Roles{
			Judge:     Role{Name: "fake", Model: "fake-judge", BaseURL: "http://x", Seen: []Seen{{Model: fakeJudgeModel, Template: "judge-v1", Rows: states}}},
			Extractor: Role{Name: "fake", Seen: []Seen{{Model: fakeExtractorModel, Template: "extractor-v1", Rows: states - 39}}},
			Reader:    Role{Name: "fake", Seen: []Seen{{Model: fakeReaderModel, Template: "reader-v1", Rows: 39}}},
		},
		Counts: Counts{
			Selected: 40, InputQuestions: 40,
			Run: RunCounts{Done: 39, Failed: 1, States: states},
			Output: OutputCounts{
				Questions: 40, Done: 39, Failed: 1, Rows: states + 1, States: states, Parts: 1,
				Rounds:   map[int]int{1: 10, 2: 10, 3: 10, 4: 9},
				Tokens:   TokenCounts{JudgePrompt: states * 10, JudgeCompletion: states * 2},
				Failures: []Failure{{QuestionID: "q0007", Reason: `judge at round 0: model unreachable for "question 7 needs 4 fail at 0"`}},
			},
		},
	}
	ignore := cmpopts.IgnoreFields(Report{}, "Header.StartedAt", "Header.FinishedAt", "Header.WallSeconds", "QuestionsPerSecond")
	if diff := cmp.Diff(want, rep, ignore); diff != "" {
		t.Errorf("run.json (-want +got):\n%s", diff)
	}
	if rep.StartedAt.IsZero() || rep.FinishedAt.Before(rep.StartedAt) || rep.WallSeconds <= 0 || rep.QuestionsPerSecond <= 0 {
		t.Errorf("times: started %v, finished %v, wall %v, q/s %v", rep.StartedAt, rep.FinishedAt, rep.WallSeconds, rep.QuestionsPerSecond)
	}
	// The file is plain JSON with the documented names.
	b, _ := os.ReadFile(filepath.Join(out, ReportFile))
	for _, key := range []string{`"status": "done"`, `"rounds": {`, `"template": "judge-v1"`, `"cost_usd": 0.25`, `"questions_per_second"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("run.json lacks %s:\n%s", key, b)
		}
	}
}

func TestRunLimitAndDuplicates(t *testing.T) {
	qs := makeQuestions(30, nil)
	// Repeat some ids: the first occurrence counts.
	in := slices.Concat(qs[:5], qs[2:4], qs[5:])
	roles, _ := fakeRoles()
	tests := []struct {
		limit int
		want  []string
		dups  int
	}{
		{0, testkit.QuestionIDs(qs), 2},
		{5, testkit.QuestionIDs(qs[:5]), 0},
		{6, testkit.QuestionIDs(qs[:6]), 2},
		{100, testkit.QuestionIDs(qs), 2},
	}
	for _, tt := range tests {
		out := t.TempDir()
		sum, err := Run(context.Background(), Options{Questions: Slice(in), Roles: roles, Out: out, Limit: tt.limit})
		if err != nil {
			t.Fatal(err)
		}
		checkOutput(t, out, tt.want)
		if sum.Counts.Selected != len(tt.want) || sum.Counts.DuplicateIDs != tt.dups {
			t.Errorf("limit %d: selected %d, duplicates %d; want %d, %d", tt.limit, sum.Counts.Selected, sum.Counts.DuplicateIDs, len(tt.want), tt.dups)
		}
	}
}

// The pass that runs the questions skips the rows whose id came before as
// the counting pass found them, holding no id; without a counting pass
// before it, it finds them itself.
func TestQuestionsSkipRepeats(t *testing.T) {
	qs := makeQuestions(6, nil)
	in := slices.Concat(qs[:3], qs[1:2], qs[3:], qs[:1])
	roles, _ := fakeRoles()
	for _, counted := range []bool{true, false} {
		r, err := newRun(Options{Questions: Slice(in), Roles: roles, Out: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if counted {
			for _, err := range r.questions(context.Background(), true) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(r.repeats, []int{3, 7}) || r.report.Counts.DuplicateIDs != 2 || r.report.Counts.InputQuestions != 8 {
				t.Errorf("counting pass: repeats %v, counts %+v; want [3 7], 2 duplicates of 8", r.repeats, r.report.Counts)
			}
		}
		var got []string
		for q, err := range r.questions(context.Background(), false) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, q.ID)
		}
		if want := testkit.QuestionIDs(qs); !slices.Equal(got, want) {
			t.Errorf("counted %v: got %v, want %v", counted, got, want)
		}
	}
}

func TestRunSystemicErrorStops(t *testing.T) {
	qs := makeQuestions(60, nil)
	qs[30].Text += " broken"
	roles, judge := fakeRoles()
	out := t.TempDir()
	sum, err := Run(context.Background(), Options{Questions: Slice(qs), Roles: roles, Out: out, Workers: 1, CheckpointQuestions: 8})
	if !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "question q0030") {
		t.Fatalf("Run: got %v, want the retriever's error for q0030", err)
	}
	if calls := judge.calls.Load(); calls > 31*5 {
		t.Errorf("the run went on after the systemic error: %d judge calls", calls)
	}
	if sum.Status != StatusInterrupted || sum.Trajectories != "" {
		t.Errorf("summary: status %q, trajectories %q", sum.Status, sum.Trajectories)
	}
	rep, err := ReadReport(out)
	if err != nil || rep.Status != StatusInterrupted || !strings.Contains(rep.Error, "index is broken") {
		t.Errorf("run.json: %+v, %v; want status interrupted with the error", rep, err)
	}
	if _, err := os.Stat(filepath.Join(out, TrajectoriesFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("trajectories written by an interrupted run: %v", err)
	}

	// Fixed, the run resumes after the checkpointed questions.
	qs[30].Text = strings.TrimSuffix(qs[30].Text, " broken")
	sum, err = Run(context.Background(), Options{Questions: Slice(qs), Roles: roles, Out: out, Workers: 1, CheckpointQuestions: 8, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, out, testkit.QuestionIDs(qs))
	if sum.Counts.AlreadyDone != 30 || sum.Resumes != 1 {
		t.Errorf("resume: already done %d (want 30: every question before the broken one), resumes %d", sum.Counts.AlreadyDone, sum.Resumes)
	}
}

func TestRunAuthErrorIsSystemic(t *testing.T) {
	roles, _ := fakeRoles()
	roles.Judge = judgeFunc(func() error { return &llm.StatusError{StatusCode: 401} })
	_, err := Run(context.Background(), Options{Questions: Slice(makeQuestions(10, nil)), Roles: roles, Out: t.TempDir()})
	if !errors.Is(err, llm.ErrAuth) {
		t.Errorf("Run: %v, want an ErrAuth", err)
	}
}

type judgeFunc func() error

func (f judgeFunc) Judge(context.Context, string, data.Context) (judge.Result, error) {
	return judge.Result{}, f()
}

// TestRunResumeAfterInterruption interrupts runs at many points (the
// context cancelled after some judge calls, as Ctrl-C or a systemic error
// would) and resumes them: every question must be written exactly once.
func TestRunResumeAfterInterruption(t *testing.T) {
	qs := makeQuestions(30, func(i int) int {
		if i%17 == 3 {
			return 0
		}
		return -1
	})
	for _, stopAfter := range []int64{1, 9, 40, 90} {
		for _, workers := range []int{1, 6} {
			out := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			roles, judge := fakeRoles()
			judge.after = func(n int64) {
				if n == stopAfter {
					cancel()
				}
			}
			opts := Options{Questions: Slice(qs), Roles: roles, Out: out, Workers: workers, CheckpointQuestions: 5}
			_, err := Run(ctx, opts)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("stop after %d, %d workers: Run: %v, want context.Canceled", stopAfter, workers, err)
			}
			written := 0
			for _, p := range mustParts(t, out) {
				if err := readIDs(p.Path, func(string) { written++ }); err != nil {
					t.Fatal(err)
				}
			}
			// A leftover of a write a kill interrupted.
			os.WriteFile(filepath.Join(out, PartsDir, ".part-00099.parquet.tmp-123"), []byte("PAR1 half"), 0o644)

			roles, _ = fakeRoles()
			opts.Roles, opts.Resume = roles, true
			sum, err := Run(context.Background(), opts)
			if err != nil {
				t.Fatalf("stop after %d, %d workers: resume: %v", stopAfter, workers, err)
			}
			checkOutput(t, out, testkit.QuestionIDs(qs))
			if sum.Counts.AlreadyDone+sum.Counts.Run.Done+sum.Counts.Run.Failed != len(qs) {
				t.Errorf("stop after %d: already done %d + run %+v != %d", stopAfter, sum.Counts.AlreadyDone, sum.Counts.Run, len(qs))
			}
			if written == 0 && sum.Counts.AlreadyDone != 0 {
				t.Errorf("stop after %d: already done %d with no part written", stopAfter, sum.Counts.AlreadyDone)
			}
			checkStoredOnce(t, out)
		}
	}
}

func mustParts(t *testing.T, out string) []data.Part {
	t.Helper()
	return testkit.Parts(t, filepath.Join(out, PartsDir))
}

// TestRunResumeAfterKill simulates what kill -9 leaves at different
// moments: some parts committed (later ones never written), a temporary
// part half written, run.json saying "running", no trajectories.parquet.
func TestRunResumeAfterKill(t *testing.T) {
	qs := makeQuestions(36, nil)
	roles, _ := fakeRoles()
	full := t.TempDir()
	opts := Options{Questions: Slice(qs), Roles: roles, Out: full, Workers: 4, CheckpointQuestions: 6}
	parts := runKeepingParts(t, opts)
	for _, keep := range []int{0, 1, 3, 6} {
		t.Run(fmt.Sprintf("%d parts kept", keep), func(t *testing.T) {
			out := t.TempDir()
			os.MkdirAll(filepath.Join(out, PartsDir), 0o755)
			keptIDs := map[string]bool{}
			for _, p := range parts[:keep] {
				b, _ := os.ReadFile(p.Path)
				os.WriteFile(filepath.Join(out, PartsDir, filepath.Base(p.Path)), b, 0o644)
				if err := readIDs(p.Path, func(id string) { keptIDs[id] = true }); err != nil {
					t.Fatal(err)
				}
			}
			kept := len(keptIDs)
			os.WriteFile(filepath.Join(out, PartsDir, "."+data.PartName(keep)+".tmp-999"), []byte("PAR1 torn"), 0o644)
			os.WriteFile(filepath.Join(out, "."+TrajectoriesFile+".tmp-1"), []byte("PAR1 torn"), 0o644)
			rep, _ := ReadReport(full)
			rep.Status = StatusRunning
			if err := stage.WriteReport(out, ReportFile, rep); err != nil {
				t.Fatal(err)
			}

			o := opts
			o.Out, o.Resume = out, true
			sum, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			by := checkOutput(t, out, testkit.QuestionIDs(qs))
			// The ids of the kept parts have their original rows.
			if sum.Counts.AlreadyDone != kept || sum.Counts.Run.Done != len(qs)-kept {
				t.Errorf("already done %d, run %d; want %d and %d", sum.Counts.AlreadyDone, sum.Counts.Run.Done, kept, len(qs)-kept)
			}
			if len(by) != len(qs) {
				t.Errorf("%d questions", len(by))
			}
			checkStoredOnce(t, out)
		})
	}
}

// namedSplitter is a rollout.Splitter that only has a name: the runs it
// is given to are refused before any text is split.
type namedSplitter string

func (s namedSplitter) Split([]string) ([][]string, error) {
	return nil, errors.New("not to be called")
}
func (s namedSplitter) Name() string { return string(s) }

func TestRunRefusesToMixRuns(t *testing.T) {
	qs := makeQuestions(20, nil)
	roles, _ := fakeRoles()
	out := t.TempDir()
	base := Options{Questions: Slice(qs), Roles: roles, Out: out, Info: Info{Judge: Role{Name: "fake"}}}
	if _, err := Run(context.Background(), base); err != nil {
		t.Fatal(err)
	}
	notRun := t.TempDir()
	os.WriteFile(filepath.Join(notRun, "notes.txt"), []byte("mine"), 0o644)

	tests := []struct {
		name   string
		change func(*Options)
		want   error
	}{
		{"not empty without resume", func(o *Options) {}, ErrOutExists},
		{"other policy", func(o *Options) { o.Resume, o.Loop.Policy = true, rollout.Fixed }, ErrMismatch},
		{"other judge", func(o *Options) { o.Resume, o.Info.Judge.Name = true, "never" }, ErrMismatch},
		{"judge asked once", func(o *Options) { o.Resume, o.Info.Judge.Setting = true, "no-repair" }, ErrMismatch},
		{"other evidence layout", func(o *Options) { o.Resume, o.Loop.Evidence = true, data.LayoutReference }, ErrMismatch},
		{"other sentence splitter", func(o *Options) { o.Resume, o.Loop.Splitter = true, namedSplitter("pysbd 0.3.4") }, ErrMismatch},
		{"other shard", func(o *Options) { o.Resume, o.Shard = true, data.Shard{I: 0, N: 2} }, ErrMismatch},
		{"other limit", func(o *Options) { o.Resume, o.Limit = true, 5 }, ErrMismatch},
		{"other questions", func(o *Options) { o.Resume, o.Questions = true, Slice(makeQuestions(10, nil)) }, ErrMismatch},
		{"not a run", func(o *Options) { o.Resume, o.Out = true, notRun }, ErrNotRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.change(&o)
			if _, err := Run(context.Background(), o); !errors.Is(err, tt.want) {
				t.Errorf("Run: %v, want %v", err, tt.want)
			}
		})
	}
	// A resumed run with nothing left to do rewrites the same output.
	o := base
	o.Resume, o.Workers = true, 2 // workers may change
	sum, err := Run(context.Background(), o)
	if err != nil || sum.Counts.AlreadyDone != 20 || sum.Counts.Run.Done != 0 {
		t.Fatalf("resume of a finished run: %+v, %v", sum.Counts, err)
	}
	checkOutput(t, out, testkit.QuestionIDs(qs))
}

func TestRunOptionErrors(t *testing.T) {
	roles, _ := fakeRoles()
	good := Options{Questions: Slice(makeQuestions(3, nil)), Roles: roles, Out: "x"}
	tests := []struct {
		name   string
		change func(*Options)
		want   error
	}{
		{"no out", func(o *Options) { o.Out = "" }, ErrOptions},
		{"no questions", func(o *Options) { o.Questions = nil }, ErrOptions},
		{"no judge", func(o *Options) { o.Roles.Judge = nil }, rollout.ErrMissingRole},
		{"no retriever", func(o *Options) { o.Roles.Retriever = nil }, rollout.ErrMissingRole},
		{"negative workers", func(o *Options) { o.Workers = -1 }, ErrOptions},
		{"negative limit", func(o *Options) { o.Limit = -1 }, ErrOptions},
		{"bad shard", func(o *Options) { o.Shard = data.Shard{I: 2, N: 2} }, data.ErrShard},
		{"bad policy", func(o *Options) { o.Loop.Policy = 7 }, rollout.ErrOptions},
		{"negative top-k", func(o *Options) { o.Loop.TopK = -1 }, rollout.ErrOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			o.Out = filepath.Join(t.TempDir(), "out")
			if tt.name == "no out" {
				o.Out = ""
			}
			tt.change(&o)
			if _, err := Run(context.Background(), o); !errors.Is(err, tt.want) {
				t.Errorf("Run: %v, want %v", err, tt.want)
			}
			if o.Out != "" {
				if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("bad options created the output directory")
				}
			}
		})
	}
}

// TestRunBadInputLeavesNothing: a run that cannot start (its questions
// cannot be read) leaves no directory that a rerun would need --resume for.
func TestRunBadInputLeavesNothing(t *testing.T) {
	roles, _ := fakeRoles()
	bad := func(yield func(data.Question, error) bool) {
		if yield(data.Question{ID: "a", Text: "question needs 1"}, nil) {
			yield(data.Question{}, errors.New("disk on fire"))
		}
	}
	for _, tt := range []struct {
		name      string
		questions Questions
		want      string
	}{
		{"read error", bad, "disk on fire"},
		{"no id", Slice([]data.Question{{ID: "a"}, {Text: "who?"}}), "question 2 has no id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			_, err := Run(context.Background(), Options{Questions: tt.questions, Roles: roles, Out: out})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want %q", err, tt.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed start left %s: %v", out, err)
			}
		})
	}
}

func TestQuestionsFile(t *testing.T) {
	dir := t.TempDir()
	qs := makeQuestions(300, nil)
	if err := dataset.Write(t.Context(), dir, qs, []data.Passage{{ID: "p", Title: "P", Text: "t"}}, false); err != nil {
		t.Fatal(err)
	}
	var got []data.Question
	for q, err := range QuestionsFile(filepath.Join(dir, data.QuestionsFile)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, q)
	}
	if diff := cmp.Diff(qs, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
	// Stopping early is fine; a corpus is not a questions file.
	for range QuestionsFile(filepath.Join(dir, data.QuestionsFile)) {
		break
	}
	for _, err := range QuestionsFile(filepath.Join(dir, data.CorpusFile)) {
		if err == nil || !strings.Contains(err.Error(), "not questions") {
			t.Errorf("corpus as questions: %v", err)
		}
	}
	for _, err := range QuestionsFile(filepath.Join(dir, "none.parquet")) {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("missing file: %v", err)
		}
	}
}

// TestRunSample runs the built-in roles over the bundled sample and its
// BM25 index, as `distill rollout` does with no flags.
func TestRunSample(t *testing.T) {
	w := synth.Sample()
	x := sampleIndex(t, w)
	out := t.TempDir()
	roles := rollout.Roles{Judge: judge.Lexical{}, Extractor: rollout.LexicalExtractor{}, Reader: rollout.LexicalReader{}, Retriever: x}
	sum, err := Run(context.Background(), Options{Questions: Slice(w.Questions), Roles: roles, Out: out, Workers: 4, CheckpointQuestions: 64})
	if err != nil {
		t.Fatal(err)
	}
	by := checkOutput(t, out, testkit.QuestionIDs(w.Questions))
	if sum.Counts.Output.Failed != 0 || sum.Counts.Output.Parts != 4 {
		t.Errorf("counts %+v", sum.Counts.Output)
	}
	// Provenance: every evidence sentence is one of its document's.
	corpus := map[string]data.Passage{}
	for _, p := range w.Passages {
		corpus[p.ID] = p
	}
	for id, states := range by {
		for _, e := range states[len(states)-1].Evidence {
			p, ok := corpus[e.DocID]
			if !ok || p.Title != e.Title || !strings.Contains(p.Text, e.Text) {
				t.Fatalf("question %s: evidence %+v is not in the corpus", id, e)
			}
		}
	}
	if len(sum.Roles.Judge.Seen) != 1 || sum.Roles.Judge.Seen[0].Model != judge.LexicalName || sum.Roles.Judge.Seen[0].Template == "" {
		t.Errorf("judge seen %+v", sum.Roles.Judge.Seen)
	}
	t.Logf("sample: %d questions, %d states, rounds %v, %.0f questions/s", sum.Counts.Output.Questions, sum.Counts.Output.States, sum.Counts.Output.Rounds, sum.QuestionsPerSecond)
}

func sampleIndex(tb testing.TB, w *synth.World) *bm25.Index {
	return bm25test.Index(tb, w.Passages, bm25.BuildOptions{})
}

func TestReportJSONRoundTrip(t *testing.T) {
	r := Report{Header: stage.Header{Status: StatusDone}, Counts: Counts{Output: OutputCounts{Rounds: map[int]int{1: 2, 4: 1}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if strings.Contains(string(b), "finished_at") {
		t.Errorf("zero finished_at written: %s", b)
	}
}

// TestRunFailedQuestions: a question that fails keeps the states it
// completed, before its failure row; resumed, the run does the failed
// questions again (unless KeepFailed), and the output holds their new
// trajectories only.
func TestRunFailedQuestions(t *testing.T) {
	qs := makeQuestions(24, func(i int) int {
		if i%5 == 2 {
			return 2 // after two states
		}
		return -1
	})
	failed := map[string]bool{}
	for i, q := range qs {
		if i%5 == 2 && i%4+1 >= 2 { // needs two retrievals or more: reaches round 2
			failed[q.ID] = true
		}
	}
	for _, keep := range []bool{false, true} {
		out := t.TempDir()
		roles, _ := fakeRoles()
		opts := Options{Questions: Slice(qs), Roles: roles, Out: out, Workers: 3, CheckpointQuestions: 5}
		if _, err := Run(t.Context(), opts); err != nil {
			t.Fatal(err)
		}
		by := checkOutput(t, out, testkit.QuestionIDs(qs))
		for id := range failed {
			rows := by[id]
			if len(rows) != 3 || rows[2].Failure == "" || rows[0].JudgeOutput == "" || rows[1].Context == "" {
				t.Fatalf("failed question %s: %d rows %+v; want its 2 states, then the failure", id, len(rows), rows)
			}
		}

		roles, j := fakeRoles()
		j.healed = true
		opts.Roles, opts.Resume, opts.KeepFailed = roles, true, keep
		sum, err := Run(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		by = checkOutput(t, out, testkit.QuestionIDs(qs))
		stillFailed := 0
		for id := range failed {
			if by[id][len(by[id])-1].Failure != "" {
				stillFailed++
			}
		}
		want, wantRetried := 0, len(failed)
		if keep {
			want, wantRetried = len(failed), 0
		}
		if stillFailed != want || sum.Retried != wantRetried || sum.Counts.Output.Failed != want {
			t.Errorf("keep %v: %d still failed, retried %d, output failed %d; want %d, %d, %d",
				keep, stillFailed, sum.Retried, sum.Counts.Output.Failed, want, wantRetried, want)
		}
	}
}

// TestRunAllFailed: a run whose every question failed writes its output
// and says so with ErrAllFailed; one whose questions fail in a row stops.
func TestRunAllFailed(t *testing.T) {
	for _, n := range []int{4, 60} {
		qs := makeQuestions(n, func(int) int { return 0 })
		roles, _ := fakeRoles()
		out := t.TempDir()
		sum, err := Run(t.Context(), Options{Questions: Slice(qs), Roles: roles, Out: out, Workers: 2})
		want := ErrAllFailed
		if n > 20 {
			want = ErrFailing
		}
		if !errors.Is(err, want) || !strings.Contains(err.Error(), "model unreachable") {
			t.Errorf("%d questions: Run: %v, want %v with the reason", n, err, want)
		}
		if n <= 20 && sum.Trajectories == "" {
			t.Errorf("%d questions: no trajectories with ErrAllFailed", n)
		}
	}
}

// garbageJudge answers what cannot be parsed, every time.
type garbageJudge struct{}

func (garbageJudge) Judge(context.Context, string, data.Context) (judge.Result, error) {
	return judge.Result{Call: data.Call{Raw: "I think so", ParseError: "not JSON", Model: fakeJudgeModel}}, nil
}

// TestRunWarnsUnparsed: a judge whose every output fails to parse fails
// no question, but the run says so.
func TestRunWarnsUnparsed(t *testing.T) {
	for _, garbage := range []bool{false, true} {
		roles, _ := fakeRoles()
		if garbage {
			roles.Judge = garbageJudge{}
		}
		var logs bytes.Buffer
		_, err := Run(t.Context(), Options{Questions: Slice(makeQuestions(6, nil)), Roles: roles, Out: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "no judge output could be parsed"); got != garbage {
			t.Errorf("garbage %v: warned %v", garbage, got)
		}
	}
}
