package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/httperr"
)

// jobObject is the part of a fine_tuning.job object the backend reads.
type jobObject struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"`
	FineTunedModel *string `json:"fine_tuned_model"`
	FinishedAt     *int64  `json:"finished_at"`
	TrainedTokens  *int64  `json:"trained_tokens"`
	Error          *struct {
		Code    any     `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// check rejects a job object that no real answer would be: it is then a
// bad body, and the call is retried.
func (j jobObject) check() error {
	switch {
	case j.ID == "":
		return errors.New("job object has no id")
	case j.Status == "":
		return errors.New("job object has no status")
	case j.Status == "succeeded" && (j.FineTunedModel == nil || *j.FineTunedModel == ""):
		return errors.New("succeeded job has no fine_tuned_model")
	}
	return nil
}

// event is one fine_tuning.job.event.
type event struct {
	ID        string         `json:"id"`
	CreatedAt int64          `json:"created_at"`
	Level     string         `json:"level"`
	Message   string         `json:"message"`
	Type      string         `json:"type"`
	Data      map[string]any `json:"data"`
}

type eventList struct {
	Data    []event `json:"data"`
	HasMore bool    `json:"has_more"`
}

// try makes one call with retries. Each attempt is bounded by the
// per-attempt timeout; its error is classified by httperr, as the llm
// client's are.
func (b *Backend) try(ctx context.Context, what string, op func(actx context.Context) error) error {
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		actx, ex, cancel := httperr.Begin(ctx, b.timeout)
		defer cancel()
		if err := op(actx); err != nil {
			return ex.Classify(ctx, actx, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// fetch sends one JSON request to path under the base URL and decodes
// the answer, with retries; each attempt decodes into a fresh T. check,
// when set, vets the decoded answer: its error counts as a bad body.
func fetch[T any](ctx context.Context, b *Backend, what, method, path string, query url.Values, body []byte, check func(T) error) (T, error) {
	u := b.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var out T
	err := b.try(ctx, what, func(actx context.Context) error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(actx, method, u, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if b.key != "" {
			req.Header.Set("Authorization", "Bearer "+string(b.key))
		}
		resp, err := httperr.Recorder{Next: b.http}.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 {
			return httperr.Decode("", resp.StatusCode, resp.Header, raw)
		}
		if err != nil {
			return err // classified as a bad body, or a timeout
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return &llm.BodyError{Err: err}
		}
		if check != nil {
			if err := check(v); err != nil {
				return &llm.BodyError{Err: err}
			}
		}
		out = v
		return nil
	})
	return out, err
}

// upload sends a local file with purpose fine-tune and returns its id.
func (b *Backend) upload(ctx context.Context, path string) (string, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	name := filepath.Base(path)
	var id string
	err = b.try(ctx, "upload "+name, func(actx context.Context) error {
		f, err := b.api.CreateFileBytes(actx, goopenai.FileBytesRequest{Name: name, Bytes: content, Purpose: goopenai.PurposeFineTune})
		if err != nil {
			return err
		}
		if f.ID == "" {
			return &llm.BodyError{Err: errors.New("file object has no id")}
		}
		id = f.ID
		return nil
	})
	return id, err
}
