package finetune

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/distill-rag/distill/judge"
)

// NewHandback describes a succeeded job as the judge it trained.
func NewHandback(job Job, st State) (judge.Handback, error) {
	if st.Status != StatusSucceeded || st.Result == nil {
		return judge.Handback{}, fmt.Errorf("job %s has not succeeded (%s)", st.ID, st.Status)
	}
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		a, err := filepath.Abs(job.Path(p))
		if err != nil {
			return job.Path(p)
		}
		return a
	}
	h := judge.Handback{
		Backend: st.Backend, JobID: st.ID, BaseModel: job.BaseModel,
		FineTunedModel: st.Result.FineTunedModel, AdapterDir: abs(st.Result.AdapterDir), ModelFile: abs(st.Result.ModelFile),
		TemplateHash: job.Files.TemplateHash, DataHash: job.Files.DataHash,
		TrainExamples: job.Files.TrainExamples, ValExamples: job.Files.ValExamples,
		TrainQuestions: job.Files.TrainQuestions, ValQuestions: job.Files.ValQuestions,
		Metrics: st.Result.Metrics, FinishedAt: st.FinishedAt,
	}
	if h.ModelFile == "" {
		hp, err := json.Marshal(job.Hyper)
		if err != nil {
			return judge.Handback{}, err
		}
		h.Hyperparameters = hp
	}
	h.SetCommands()
	if h.Use == "" {
		return judge.Handback{}, errors.New("the job's result names no model")
	}
	return h, nil
}
