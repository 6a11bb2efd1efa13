package label

import (
	"context"
	"errors"
	"time"

	"github.com/distill-rag/distill/rollout/llm"

	"github.com/distill-rag/distill/data"
)

// BatchOptions configure labelling through a batch API (placeholder until
// the batch path lands).
type BatchOptions struct {
	Teacher      *LLMTeacher
	Client       *llm.Client
	Prices       map[string]llm.Price
	PollInterval time.Duration
	Retries      int
}

// BatchRecord is one batch of a batch run, as label.json records it.
type BatchRecord struct {
	ID string `json:"id"`
}

func (r *run) batch(ctx context.Context, emit func(data.Label) error) error {
	return errors.New("batch: not yet")
}

const (
	DefaultPollInterval = 30 * time.Second
	DefaultBatchRetries = 2
)
