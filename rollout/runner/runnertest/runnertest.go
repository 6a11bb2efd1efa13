// Package runnertest makes the rollout that the tests of the later stages
// start from: the bundled sample, run with the built-in roles.
//
// It is imported by tests only.
package runnertest

import (
	"context"
	"path/filepath"

	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/rollout"
	"github.com/distill-rag/distill/rollout/runner"
)

// Sample runs the fixed-policy loop with the built-in roles (lexical
// judge, extractor and reader) over a BM25 index of the bundled sample's
// passages, on every sample question. The index goes to dir/index and the
// run to dir/rollout; it returns the path of the run's trajectories.
func Sample(ctx context.Context, dir string) (string, error) {
	w := synth.Sample()
	x, err := bm25test.Build(ctx, filepath.Join(dir, "index"), w.Passages, bm25.BuildOptions{})
	if err != nil {
		return "", err
	}
	defer x.Close()
	out := filepath.Join(dir, "rollout")
	_, err = runner.Run(ctx, runner.Options{
		Questions: runner.Slice(w.Questions),
		Roles:     rollout.Roles{Judge: judge.Lexical{}, Extractor: rollout.LexicalExtractor{}, Reader: rollout.LexicalReader{}, Retriever: x},
		Loop:      rollout.Options{Policy: rollout.Fixed},
		Out:       out,
	})
	return filepath.Join(out, runner.TrajectoriesFile), err
}
