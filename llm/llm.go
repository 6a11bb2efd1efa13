package llm

import (
	"context"
	"encoding/json"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Request is one chat completion request. Every field that changes the
// answer is part of the cache key.
type Request struct {
	Messages []Message
	// Temperature is sent as given, 0 included (greedy decoding).
	Temperature float64
	// TopP is sent when non-zero.
	TopP float64
	// MaxTokens caps the completion; 0 leaves it to the server.
	MaxTokens int
	// Seed is sent when set.
	Seed *int
	// Schema, when set, asks for a JSON answer matching it.
	Schema *Schema
}

// Schema is a JSON Schema for structured output, named as the
// response_format of the OpenAI API wants.
type Schema struct {
	Name   string
	Schema json.RawMessage
}

// Usage counts the tokens of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Response is the answer to a Request.
type Response struct {
	Content      string
	FinishReason string
	// Model is the model the server says answered.
	Model string
	Usage Usage
	// Mode says how structured output was asked for: "json_schema",
	// "json_object" or "text" (no structured output).
	Mode string
	// Cached is true when the response came from the on-disk cache.
	Cached bool
	// Reasked is true when the caller's first answer was unusable and the
	// model was asked once more (DecodeJSON's repair): the content is the
	// second answer, and the usage adds up both calls.
	Reasked bool
}

// Chatter answers chat requests. Implementations and decorators (retry,
// limits, cache, accounting) are safe for concurrent use.
type Chatter interface {
	Chat(ctx context.Context, req Request) (Response, error)
}
