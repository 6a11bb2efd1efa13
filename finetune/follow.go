package finetune

import (
	"context"
	"maps"
	"path/filepath"
	"time"

	"github.com/distill-rag/distill/judge"
)

// Files are the exported training data of a job, as paths relative to the
// job's directory (Job.Path resolves them), with what identifies them.
type Files struct {
	// OpenAI chat JSONL: one {"messages": [system, user, assistant]} per line.
	TrainOpenAI string `json:"train_openai"`
	ValOpenAI   string `json:"val_openai,omitempty"`
	// ShareGPT JSON lists and the LLaMA-Factory dataset_info.json that
	// names them (datasets TrainDataset and ValDataset).
	TrainShareGPT string `json:"train_sharegpt"`
	ValShareGPT   string `json:"val_sharegpt,omitempty"`
	DatasetInfo   string `json:"dataset_info"`
	// Parquet files with a "messages" column, as TRL and Hugging Face
	// datasets read them.
	TrainParquet string `json:"train_parquet"`
	ValParquet   string `json:"val_parquet,omitempty"`
	// TemplateHash is the judge template the prompts were rendered with;
	// the Split is what the examples are (their hash, counts and
	// questions), which the hand-back passes on.
	TemplateHash string `json:"template_hash"`
	judge.Split
}

// The dataset names dataset_info.json gives the training and validation
// sets, for LLaMA-Factory's dataset and eval_dataset settings.
const (
	TrainDataset = "s2g_judge_train"
	ValDataset   = "s2g_judge_val"
)

// Path resolves a path of the job's Files against its directory; an
// absolute path is returned as it is, and "" stays "".
func (j Job) Path(rel string) string {
	if rel == "" || filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(j.Dir, rel)
}

// FollowOptions configure Follow.
type FollowOptions struct {
	// Interval is the time between two Status calls (default 10s).
	Interval time.Duration
	// OnUpdate, when set, sees every new state.
	OnUpdate func(State)
	// StatusRetries is how many Status errors in a row Follow tolerates
	// before it returns the error (default 5): the job goes on meanwhile.
	StatusRetries int
}

// Follow polls the job until it ends (or ctx does), saving each new state
// in job.json, and returns the last state. Errors of Status are retried
// StatusRetries times in a row, as a job outlives a flaky connection.
func Follow(ctx context.Context, b Backend, job Job, st State, opts FollowOptions) (State, error) {
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.StatusRetries <= 0 {
		opts.StatusRetries = 5
	}
	failures := 0
	for !st.Status.Terminal() {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(opts.Interval):
		}
		next, err := b.Status(ctx, job, st)
		if err != nil {
			if ctx.Err() != nil {
				return st, ctx.Err()
			}
			failures++
			if failures > opts.StatusRetries {
				return st, err
			}
			continue
		}
		failures = 0
		if changed(st, next) {
			next.UpdatedAt = time.Now().UTC()
			if next.Status.Terminal() && next.FinishedAt.IsZero() {
				next.FinishedAt = next.UpdatedAt
			}
			if err := SaveRecord(job.Dir, Record{Job: job, State: next}); err != nil {
				return next, err
			}
			if opts.OnUpdate != nil {
				opts.OnUpdate(next)
			}
		}
		st = next
	}
	return st, nil
}

func changed(a, b State) bool {
	return a.Status != b.Status || a.Step != b.Step || a.TotalSteps != b.TotalSteps || a.Loss != b.Loss ||
		a.Message != b.Message || (a.Result == nil) != (b.Result == nil) || !maps.Equal(a.Data, b.Data)
}
