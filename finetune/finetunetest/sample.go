package finetunetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/filter"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/rollout"
	"github.com/distill-rag/distill/rollout/retrieve/bm25"
	"github.com/distill-rag/distill/rollout/runner"
)

// sampleLabels runs the offline chain on the bundled sample once per test
// binary: a fixed-policy rollout with the built-in roles, labels from the
// retrieval-truth teacher, the filter's split. It returns the directory of
// train.parquet and val.parquet.
var sampleLabels = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "distill-finetune-sample-")
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	w := synth.Sample()
	idx := filepath.Join(dir, "index")
	if _, err := bm25.Build(ctx, idx, data.NewPassageSlice(w.Passages), bm25.BuildOptions{}); err != nil {
		return "", err
	}
	x, err := bm25.Open(idx)
	if err != nil {
		return "", err
	}
	defer x.Close()
	ro := filepath.Join(dir, "rollout")
	if _, err := runner.Run(ctx, runner.Options{
		Questions: runner.Slice(w.Questions),
		Roles:     rollout.Roles{Judge: rollout.LexicalJudge{}, Extractor: rollout.LexicalExtractor{}, Reader: rollout.LexicalReader{}, Retriever: x},
		Loop:      rollout.Options{Policy: rollout.Fixed},
		Out:       ro,
	}); err != nil {
		return "", err
	}
	qs := make(map[string]data.Question)
	for _, q := range w.Questions {
		qs[q.ID] = q
	}
	lab := filepath.Join(dir, "labels")
	if _, err := label.Run(ctx, label.Options{In: filepath.Join(ro, runner.TrajectoriesFile), Out: lab, Questions: qs,
		Teacher: label.RetrievalTruth{}, Info: label.Info{Teacher: label.NameRetrievalTruth, Model: label.RetrievalTruthModel}}); err != nil {
		return "", err
	}
	sft := filepath.Join(dir, "sft")
	if _, err := filter.Run(ctx, filter.Options{In: filepath.Join(lab, label.LabelsFile), Out: sft, MinAgreement: -1}); err != nil {
		return "", err
	}
	return sft, nil
})

// SampleLabels returns the paths of train.parquet and val.parquet of the
// offline chain on the bundled sample (made once per test binary; the
// files must not be changed).
func SampleLabels(t testing.TB) (train, val string) {
	t.Helper()
	dir, err := sampleLabels()
	if err != nil {
		t.Fatalf("the sample chain: %v", err)
	}
	return filepath.Join(dir, filter.TrainFile), filepath.Join(dir, filter.ValFile)
}

// SampleJob returns a job in a fresh directory whose data is the export of
// SampleLabels, with the method's hyper-parameters and the given base
// model.
func SampleJob(t testing.TB, baseModel string) finetune.Job {
	t.Helper()
	train, val := SampleLabels(t)
	dir := t.TempDir()
	sum, err := finetune.Export(t.Context(), finetune.ExportOptions{Train: train, Val: val, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return finetune.Job{Dir: dir, BaseModel: baseModel, Name: "s2g-judge", Files: sum.Files,
		Labels: finetune.Labels{Train: train, Val: val}, Hyper: finetune.DefaultHyperparameters()}
}
