package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/rollout"
)

// chatRoles are test-only roles that make one chat call through an
// llm.Chatter per judge, extractor and reader call, so that every call
// costs what the server makes it cost. Their verdicts do not depend on the
// answers: with the Fixed policy a question makes MaxRetrievals+1 judge
// calls, MaxRetrievals extractor calls and one reader call.
type chatRoles struct{ c llm.Chatter }

func (r chatRoles) chat(ctx context.Context, prompt string) (llm.Response, error) {
	return r.c.Chat(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: prompt}}, MaxTokens: 64})
}

func (r chatRoles) Judge(ctx context.Context, question string, c data.Context) (judge.Result, error) {
	resp, err := r.chat(ctx, "Question: "+question+"\n\nEvidence:\n"+c.Render())
	if err != nil {
		return judge.Result{}, err
	}
	return judge.Result{
		Verdict: data.Verdict{GapItems: []data.GapItem{{Category: data.CategoryOther, Target: "Answer", Slot: "more"}}},
		Call:    data.Call{Raw: resp.Content, Model: resp.Model, Usage: data.Usage{PromptTokens: int64(resp.Usage.PromptTokens), CompletionTokens: int64(resp.Usage.CompletionTokens)}},
	}, nil
}

func (r chatRoles) Extract(ctx context.Context, question string, _ []data.GapItem, sentences []rollout.Numbered, _ int) (rollout.ExtractResult, error) {
	lines := make([]string, len(sentences))
	for i, s := range sentences {
		lines[i] = s.Line
	}
	resp, err := r.chat(ctx, "Question: "+question+"\n\n"+strings.Join(lines, "\n"))
	if err != nil {
		return rollout.ExtractResult{}, err
	}
	return rollout.ExtractResult{IDs: []int{1, 2}, Call: data.Call{Raw: resp.Content, Model: resp.Model}}, nil
}

func (r chatRoles) Answer(ctx context.Context, question string, c data.Context) (rollout.ReadResult, error) {
	resp, err := r.chat(ctx, "Question: "+question+"\n\nEvidence:\n"+c.Render())
	if err != nil {
		return rollout.ReadResult{}, err
	}
	return rollout.ReadResult{Answer: resp.Content, Call: data.Call{Raw: resp.Content, Model: resp.Model}}, nil
}

// BenchmarkRolloutThroughput runs questions against the fault-free test
// server at 50 ms per call with 64 workers, every call going through the
// model client (the recommended stack) over loopback HTTP, and every state
// written to parts and trajectories.parquet. Each question makes 10 calls
// (Fixed policy, 4 retrievals: 5 judge, 4 extractor, 1 reader), so the
// latency allows at most 64 / (10 x 50 ms) = 128 questions/s: the ideal.
// The goal is at least 90% of it.
func BenchmarkRolloutThroughput(b *testing.B) {
	const (
		workers       = 64
		latency       = 50 * time.Millisecond
		maxRetrievals = 4
		callsPerQ     = 2*maxRetrievals + 2
		perIteration  = workers * 4
	)
	s := llmtest.NewServer(llmtest.Options{Latency: latency, Text: "Answer: yes"})
	defer s.Close()
	client, err := llm.New(llm.Config{BaseURL: s.URL(), Model: "bench-model", Role: "all"})
	if err != nil {
		b.Fatal(err)
	}
	meter, err := llm.Stack(client, llm.StackOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cr := chatRoles{c: meter}
	roles := rollout.Roles{Judge: cr, Extractor: cr, Reader: cr, Retriever: newFakeRetriever()}
	qs := makeQuestions(perIteration, nil)
	questions := 0
	for b.Loop() {
		out := filepath.Join(b.TempDir(), fmt.Sprint(questions))
		sum, err := Run(context.Background(), Options{
			Questions: Slice(qs), Roles: roles, Out: out, Workers: workers,
			Loop:  rollout.Options{Policy: rollout.Fixed, MaxRetrievals: maxRetrievals},
			Usage: func() []llm.Stats { return []llm.Stats{meter.Snapshot()} },
		})
		if err != nil {
			b.Fatal(err)
		}
		if sum.Counts.Output.Done != len(qs) || sum.Counts.Output.States != int64(len(qs)*(maxRetrievals+1)) {
			b.Fatalf("counts %+v", sum.Counts.Output)
		}
		questions += len(qs)
	}
	if got, want := meter.Snapshot().Requests, int64(questions*callsPerQ); got != want {
		b.Fatalf("%d calls, want %d", got, want)
	}
	qps := float64(questions) / b.Elapsed().Seconds()
	ideal := float64(workers) / (callsPerQ * latency.Seconds())
	b.ReportMetric(qps, "questions/s")
	b.ReportMetric(ideal, "ideal-questions/s")
	b.ReportMetric(100*qps/ideal, "%-of-ideal")
}

// TestMemoryFlat runs the built-in roles over the sample's index with 2,000
// and then 10,000 questions (the sample's questions repeated under new ids)
// and compares the largest live heap of the two runs, measured after a
// collection every 250 questions: the states are streamed to disk, so it
// must not grow with the number of questions beyond what their ids take and
// the row group that the writer of trajectories.parquet holds.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12,500 questions")
	}
	if raceEnabled {
		t.Skip("the race detector distorts memory figures")
	}
	w := synth.Sample()
	x := sampleIndex(t, w)
	roles := rollout.Roles{Judge: judge.Lexical{}, Extractor: rollout.LexicalExtractor{}, Reader: rollout.LexicalReader{}, Retriever: x}
	peak := func(n int) (uint64, Summary) {
		qs := make([]data.Question, n)
		for i := range qs {
			qs[i] = w.Questions[i%len(w.Questions)]
			qs[i].ID = fmt.Sprintf("%s-%05d", qs[i].ID, i)
		}
		var m runtime.MemStats
		live := func() uint64 {
			// Twice: the first collection only moves what sync.Pools hold
			// (the parquet writers' encoders) aside, the second frees it.
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		base := live()
		var top uint64
		sum, err := Run(context.Background(), Options{
			Questions: Slice(qs), Roles: roles, Out: t.TempDir(), Workers: 16,
			Progress: func(p Progress) {
				if (p.Done+p.Failed)%250 == 0 {
					top = max(top, live())
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Counts.Output.Questions != n {
			t.Fatalf("%d questions written, want %d", sum.Counts.Output.Questions, n)
		}
		return top - min(top, base), sum
	}
	peak(500) // warm the lexers' caches, shared by both runs
	small, s1 := peak(2_000)
	large, s2 := peak(10_000)
	t.Logf("largest live heap above the start: %.1f MiB for 2,000 questions (%d rows), %.1f MiB for 10,000 (%d rows, %.0f q/s)",
		mib(small), s1.Counts.Output.Rows, mib(large), s2.Counts.Output.Rows, s2.QuestionsPerSecond)
	if large > small*3/2+8<<20 {
		t.Errorf("live heap grows with the questions: %.1f MiB for 2,000, %.1f MiB for 10,000", mib(small), mib(large))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
