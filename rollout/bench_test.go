package rollout

import (
	"context"
	"testing"

	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/judge"
)

// BenchmarkLoopRound measures the loop's own cost, without model time: the
// built-in roles over a BM25 index of about 190,000 passages (the synthetic
// world of 40,000 questions), one question per iteration with the default
// options. The figure that matters is ms/round, the time per retrieval
// round (judge, query, retrieval, numbering, extraction, append, and the
// final judge call and reader spread over the rounds); the goal is at most
// 1 ms on the 2-core development machine.
func BenchmarkLoopRound(b *testing.B) {
	w, err := synth.Generate(synth.Config{Seed: 1, Questions: 40_000})
	if err != nil {
		b.Fatal(err)
	}
	x := buildIndex(b, w.Passages)
	roles := Roles{Judge: judge.Lexical{}, Extractor: LexicalExtractor{}, Reader: LexicalReader{}, Retriever: x}
	ctx := context.Background()
	rounds, states, i := 0, 0, 0
	b.ReportAllocs()
	for b.Loop() {
		q := w.Questions[i%len(w.Questions)]
		i++
		tr, err := Run(ctx, q, roles, Options{})
		if err != nil {
			b.Fatal(err)
		}
		rounds += tr.Counts.Retrievals
		states += len(tr.States)
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(secs*1000/float64(rounds), "ms/round")
	b.ReportMetric(float64(rounds)/secs, "rounds/s")
	b.ReportMetric(float64(states)/secs, "states/s")
	b.ReportMetric(float64(len(w.Passages)), "passages")
}
