package builtin

import (
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/finetune/finetunetest"
	"github.com/distill-rag/distill/judge"
)

func TestConformance(t *testing.T) {
	finetunetest.Run(t, finetunetest.Harness{
		New: func(*testing.T) finetune.Backend { return Backend{} },
		Job: func(t *testing.T, s finetunetest.Scenario) finetune.Job {
			job := finetunetest.SampleJob(t, "builtin")
			if s == finetunetest.Fail {
				// One class only: nothing to learn.
				rows, err := data.ReadParquet[data.Label](job.Labels.Train)
				if err != nil {
					t.Fatal(err)
				}
				var suff []data.Label
				for _, l := range rows {
					if l.Sufficient {
						suff = append(suff, l)
					}
				}
				job.Labels.Train = filepath.Join(job.Dir, "one-class.parquet")
				w, err := data.CreateParquet[data.Label](job.Labels.Train, data.KindLabels)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(suff)
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			return job
		},
		Synchronous: true,
	})
}

// TestTrainedJudgeLearns: on the sample's validation states, the trained
// judge agrees with the labels at least as often as the lexical judge it
// starts from, and its model file loads as a judge.
func TestTrainedJudgeLearns(t *testing.T) {
	job := finetunetest.SampleJob(t, "builtin")
	st, err := Backend{}.Submit(t.Context(), job)
	if err != nil || st.Status != finetune.StatusSucceeded {
		t.Fatalf("train: %q %s, %v", st.Status, st.Message, err)
	}
	j, err := judge.LoadLinear(job.Path(st.Result.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	val, err := data.ReadParquet[data.Label](job.Labels.Val)
	if err != nil {
		t.Fatal(err)
	}
	var trained, lexical int
	for _, l := range val {
		var c data.Context
		c.Append(l.Evidence)
		r, err := j.Judge(t.Context(), l.Question, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict.Sufficient == l.Sufficient {
			trained++
		}
		if r.Verdict.Sufficient && len(r.Verdict.GapItems) > 0 {
			t.Fatalf("sufficient with gap items: %+v", r.Verdict)
		}
		lx, _ := judge.Lexical{}.Judge(t.Context(), l.Question, c)
		if lx.Verdict.Sufficient == l.Sufficient {
			lexical++
		}
	}
	acc := st.Result.Metrics["val_accuracy"]
	t.Logf("validation: trained judge %d/%d (metrics accuracy %.3f, f1 %.3f), lexical judge %d/%d",
		trained, len(val), acc, st.Result.Metrics["val_f1"], lexical, len(val))
	if trained < lexical || acc < 0.8 {
		t.Errorf("trained judge %d/%d (accuracy %.3f), lexical %d/%d: training did not help", trained, len(val), acc, lexical, len(val))
	}
}

func TestSolve(t *testing.T) {
	a := [][]float64{{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}
	b := []float64{1, 2, 3}
	x := solve([][]float64{{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}, []float64{1, 2, 3})
	for i := range a {
		if got := dot(a[i], x); got-b[i] > 1e-12 || b[i]-got > 1e-12 {
			t.Errorf("row %d: %v, want %v", i, got, b[i])
		}
	}
}
