// Package rolecall is what the model-backed roles share (the LLM judge, the
// teacher, the extractor, reader and summarizer): the chat messages of
// their prompts, and the record of a call (data.Call) made from the
// model's response, with the rules the roles document: the model the
// server names, else the configured one; the usage of every request; a
// parse failure recorded, not returned; the context's error as it is.
package rolecall

import (
	"context"
	"errors"
	"fmt"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
)

// Messages returns the chat messages of a prompt: its system message, then
// its user message.
func Messages(p data.Prompt) []llm.Message {
	return []llm.Message{{Role: "system", Content: p.System}, {Role: "user", Content: p.User}}
}

// New records a model call from its response: model is recorded when the
// server names none, hash is the prompt template's hash.
func New(resp llm.Response, model, hash string) data.Call {
	call := data.Call{
		Raw:          resp.Content,
		Model:        resp.Model,
		Repaired:     resp.Reasked,
		TemplateHash: hash,
		Usage:        data.Usage{PromptTokens: int64(resp.Usage.PromptTokens), CompletionTokens: int64(resp.Usage.CompletionTokens)},
	}
	if call.Model == "" {
		call.Model = model
	}
	return call
}

// Decoded records a call made with llm.DecodeJSON from its response and
// error: a *llm.ParseError becomes Call.ParseError; any other error is
// returned for the role to return (see Error).
func Decoded(resp llm.Response, err error, model, hash string) (data.Call, error) {
	var perr *llm.ParseError
	if err != nil && !errors.As(err, &perr) {
		return data.Call{}, err
	}
	call := New(resp, model, hash)
	if perr != nil {
		call.ParseError = perr.Error()
	}
	return call, nil
}

// Error is the error of a role whose model call failed: ctx.Err() as it is
// when the context has ended, else err wrapped with the role's name.
func Error(ctx context.Context, role string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return fmt.Errorf("%s: %w", role, err)
}

// JSONCall is one call of a role that answers in a strict JSON Schema.
type JSONCall struct {
	// Role names the role in errors ("llm judge").
	Role string
	// Model is recorded when the server names none; Hash is the prompt
	// template's hash.
	Model, Hash string
	Prompt      data.Prompt
	Schema      llm.Schema
	MaxTokens   int
	// NoRepair records an unusable answer as it is, without asking again
	// (llm.DecodeJSONOnce).
	NoRepair bool
}

// DecodeJSON asks c for a greedy answer to q.Prompt in q.Schema and
// decodes it into v with llm.DecodeJSON (which asks once more when the
// answer is unusable, unless q.NoRepair). It returns the record of the call, with ParseError
// set when the answer could not be decoded (v is then untouched), or the
// role's error (Error) when the call failed.
func DecodeJSON(ctx context.Context, c llm.Chatter, q JSONCall, v any) (data.Call, error) {
	s := q.Schema
	req := llm.Request{
		Messages:    Messages(q.Prompt),
		Temperature: 0,
		MaxTokens:   q.MaxTokens,
		Schema:      &s,
	}
	decode := llm.DecodeJSON
	if q.NoRepair {
		decode = llm.DecodeJSONOnce
	}
	resp, err := decode(ctx, c, req, v)
	call, err := Decoded(resp, err, q.Model, q.Hash)
	if err != nil {
		return data.Call{}, Error(ctx, q.Role, err)
	}
	return call, nil
}
