package finetunetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/rollout/runner/runnertest"
)

// The names of the label files SampleLabels writes, as distill filter
// names them.
const (
	TrainFile = "train.parquet"
	ValFile   = "val.parquet"
)

// sampleLabels makes labels of the bundled sample once per test binary: a
// fixed-policy rollout with the built-in roles, each state labelled from
// retrieval truth, questions split nine to one. (It writes the files
// itself rather than run distill label and filter, so that finetune
// depends on neither.) It returns the directory of train.parquet and
// val.parquet.
var sampleLabels = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "distill-finetune-sample-")
	if err != nil {
		return "", err
	}
	trajectories, err := runnertest.Sample(context.Background(), dir)
	if err != nil {
		return "", err
	}
	w := synth.Sample()
	qs := make(map[string]data.Question)
	for _, q := range w.Questions {
		qs[q.ID] = q
	}
	states, err := data.ReadParquet[data.State](trajectories)
	if err != nil {
		return "", err
	}
	// Labels as the retrieval-truth teacher and the filter would give them:
	// sufficient when the gold evidence is complete, else one gap per
	// missing gold title; one question in ten (by its position) to val.
	sft := filepath.Join(dir, "sft")
	if err := os.MkdirAll(sft, 0o755); err != nil {
		return "", err
	}
	order := map[string]int{}
	for _, q := range w.Questions {
		order[q.ID] = len(order)
	}
	var train, val []data.Label
	for _, s := range states {
		q := qs[s.QuestionID]
		t := data.JudgeTruth(q, s.Evidence)
		l := data.Label{QuestionID: s.QuestionID, Dataset: s.Dataset, Round: s.Round, Question: s.Question,
			Context: s.Context, Evidence: s.Evidence, GoldTitles: q.GoldTitles, Answers: q.Answers,
			TruthComplete: t.Complete, TruthStrength: t.Strength.String(), Teacher: "retrieval-truth",
			Sufficient: t.Complete, Votes: 1, Agreement: 1}
		for _, title := range t.MissingTitles {
			l.GapItems = append(l.GapItems, data.GapItem{Category: data.CategoryEvidenceSpan, Target: title, Slot: "supporting facts"})
		}
		if !l.Sufficient && len(l.GapItems) == 0 {
			l.GapItems = []data.GapItem{{Category: data.CategoryAttribute, Target: "Answer", Slot: "answer"}}
		}
		if order[s.QuestionID]%10 == 0 {
			l.Split = "val"
			val = append(val, l)
		} else {
			l.Split = "train"
			train = append(train, l)
		}
	}
	for name, rows := range map[string][]data.Label{TrainFile: train, ValFile: val} {
		w, err := data.CreateParquet[data.Label](filepath.Join(sft, name), data.KindLabels)
		if err != nil {
			return "", err
		}
		if err := w.Write(rows); err != nil {
			w.Abort()
			return "", err
		}
		if err := w.Close(); err != nil {
			return "", err
		}
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
	return filepath.Join(dir, TrainFile), filepath.Join(dir, ValFile)
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
