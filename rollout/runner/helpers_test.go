package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/rollout"
)

// The fakes below make a loop whose course is known from the question: a
// question "question N needs R" is judged sufficient once its context
// holds R sentences, and the extractor points at one new sentence per round,
// so the question ends after R retrievals. A question whose text holds
// "fail at K" has its judge fail at round K (a *RoleError), and a question
// holding "broken" makes the retriever fail (a systemic error).

const (
	fakeJudgeModel     = "fake-judge"
	fakeExtractorModel = "fake-extractor"
	fakeReaderModel    = "fake-reader"
)

var errBroken = errors.New("index is broken")

type fakeJudge struct {
	// calls counts the judge calls; after is called with the count.
	calls atomic.Int64
	after func(n int64)
	// healed makes the judge fail no more.
	healed bool
}

func (j *fakeJudge) Judge(_ context.Context, question string, c data.Context) (judge.Result, error) {
	n := j.calls.Add(1)
	if j.after != nil {
		defer j.after(n)
	}
	if k, ok := number(question, "fail at "); ok && c.Len() == k && !j.healed {
		return judge.Result{}, fmt.Errorf("model unreachable for %q", question)
	}
	need, _ := number(question, "needs ")
	res := judge.Result{Call: data.Call{Model: fakeJudgeModel, TemplateHash: "judge-v1", Usage: data.Usage{PromptTokens: 10, CompletionTokens: 2}}}
	if c.Len() >= need {
		res.Verdict = data.Verdict{Sufficient: true}
		res.Raw = `{"sufficient":true,"gap_items":[]}`
	} else {
		res.Verdict = data.Verdict{GapItems: []data.GapItem{{Category: "other", Target: "Answer", Slot: "more"}}}
		res.Raw = `{"sufficient":false}`
	}
	return res, nil
}

// number returns the integer after prefix in s.
func number(s, prefix string) (int, bool) {
	_, rest, ok := strings.Cut(s, prefix)
	if !ok {
		return 0, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(f[0])
	return n, err == nil
}

type fakeExtractor struct{}

func (fakeExtractor) Extract(_ context.Context, _ string, _ []data.GapItem, sentences []rollout.Numbered, _ int) (rollout.ExtractResult, error) {
	return rollout.ExtractResult{IDs: []int{1}, Call: data.Call{Raw: `{"evidence_global_ids":[1]}`, Model: fakeExtractorModel, TemplateHash: "extractor-v1"}}, nil
}

type fakeReader struct{}

func (fakeReader) Answer(_ context.Context, question string, c data.Context) (rollout.ReadResult, error) {
	return rollout.ReadResult{Answer: "answer", Call: data.Call{Raw: "Answer: answer", Model: fakeReaderModel, TemplateHash: "reader-v1"}}, nil
}

// fakeRetriever returns the first k passages of its corpus not excluded.
type fakeRetriever struct {
	corpus []data.Passage
}

func newFakeRetriever() *fakeRetriever {
	r := &fakeRetriever{}
	for i := range 60 {
		title := fmt.Sprintf("Title %d", i)
		s := []string{fmt.Sprintf("Sentence one of %d.", i), fmt.Sprintf("Sentence two of %d.", i)}
		r.corpus = append(r.corpus, data.Passage{ID: fmt.Sprintf("d%d", i), Title: title, Text: strings.Join(s, " "), Sentences: s})
	}
	return r
}

func (r *fakeRetriever) Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.Contains(q.Text, "broken") {
		return nil, errBroken
	}
	var hits []retrieve.Hit
	for i, p := range r.corpus {
		if len(hits) == q.K {
			break
		}
		if !slices.Contains(q.Exclude, p.ID) {
			hits = append(hits, retrieve.Hit{Passage: p, Score: float64(len(r.corpus) - i)})
		}
	}
	return hits, nil
}

func fakeRoles() (rollout.Roles, *fakeJudge) {
	j := &fakeJudge{}
	return rollout.Roles{Judge: j, Extractor: fakeExtractor{}, Reader: fakeReader{}, Retriever: newFakeRetriever()}, j
}

// makeQuestions returns n questions; question i needs i%4+1 retrievals,
// and fail(i), when set, says at which round (>= 0) it fails.
func makeQuestions(n int, fail func(i int) int) []data.Question {
	qs := make([]data.Question, n)
	for i := range qs {
		text := fmt.Sprintf("question %d needs %d", i, i%4+1)
		if fail != nil {
			if k := fail(i); k >= 0 {
				text += fmt.Sprintf(" fail at %d", k)
			}
		}
		qs[i] = data.Question{ID: fmt.Sprintf("q%04d", i), Text: text, Answers: []string{"answer"}, Dataset: "fake"}
	}
	return qs
}

// checkOutput reads DIR/trajectories.parquet and checks that it holds each
// of want exactly once: contiguous rows, rounds 0..n, one final row last,
// or one failure row with a reason. It returns the rows by question id.
func checkOutput(t *testing.T, dir string, want []string) map[string][]data.State {
	t.Helper()
	rows, err := data.ReadParquet[data.State](filepath.Join(dir, TrajectoriesFile))
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	return checkRows(t, rows, want)
}

// checkRows checks the rows of trajectories (testkit.CheckTrajectories).
var checkRows = testkit.CheckTrajectories

// checkStoredOnce checks that a finished run in dir holds its rows once:
// trajectories.parquet and no parts directory, nor leftovers beside it.
func checkStoredOnce(t *testing.T, dir string) {
	t.Helper()
	for _, name := range testkit.DirNames(t, dir) {
		if name == PartsDir || strings.Contains(name, data.TmpMarker) {
			t.Errorf("a finished run holds %s beside %s", name, TrajectoriesFile)
		}
	}
}

// runKeepingParts runs opts to the end and returns copies of the parts
// the output was assembled from (Run removes them once it is written).
func runKeepingParts(t *testing.T, opts Options) []data.Part {
	t.Helper()
	keep := t.TempDir()
	progress := opts.Progress
	opts.Progress = func(p Progress) {
		// Called after every commit, the last one before the assembly.
		for _, part := range testkit.Parts(t, filepath.Join(opts.Out, PartsDir)) {
			if b, err := os.ReadFile(part.Path); err == nil {
				os.WriteFile(filepath.Join(keep, filepath.Base(part.Path)), b, 0o644)
			}
		}
		if progress != nil {
			progress(p)
		}
	}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	return testkit.Parts(t, keep)
}

// idRow reads only the question id of a state row.
type idRow struct {
	QuestionID string `parquet:"question_id"`
}

// readIDs calls fn with the question id of every row of a trajectories
// file, in order.
func readIDs(path string, fn func(id string)) error {
	return data.EachRow(context.Background(), path, data.KindTrajectories, func(rows []idRow) error {
		for _, row := range rows {
			fn(row.QuestionID)
		}
		return nil
	})
}
