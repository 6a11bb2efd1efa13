package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// What the server answers: requests decoded and checked, error objects,
// chat completions and embeddings in OpenAI's wire format.

func (s *Server) unsupported(format string) string {
	switch {
	case format == "json_schema" && s.opts.NoJSONSchema:
		return "response_format of type json_schema is not supported by this server"
	case format == "json_object" && s.opts.NoJSONObject:
		return "response_format of type json_object is not supported by this server"
	}
	return ""
}

// decode fills the decoded fields of rec from its body, returning an error
// message and the offending parameter when the body is not acceptable.
func decode(rec *Request, chat bool) (msg, param string) {
	if chat {
		var b struct {
			Model          string    `json:"model"`
			Messages       []Message `json:"messages"`
			ResponseFormat *struct {
				Type       string `json:"type"`
				JSONSchema *struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.Unmarshal(rec.Body, &b); err != nil {
			return "We could not parse the JSON body of your request: " + err.Error(), ""
		}
		if len(b.Messages) == 0 {
			return "'messages' must not be empty", "messages"
		}
		rec.Model, rec.Messages = b.Model, b.Messages
		if rf := b.ResponseFormat; rf != nil {
			rec.ResponseFormat = rf.Type
			if rf.JSONSchema != nil {
				rec.Schema = rf.JSONSchema.Schema
			}
			if rf.Type == "json_schema" && len(rec.Schema) == 0 {
				return "Missing required parameter: 'response_format.json_schema'.", "response_format"
			}
		}
		return "", ""
	}
	var b struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(rec.Body, &b); err != nil {
		return "We could not parse the JSON body of your request: " + err.Error(), ""
	}
	rec.Model = b.Model
	var one string
	if json.Unmarshal(b.Input, &one) == nil {
		rec.Input = []string{one}
	} else if json.Unmarshal(b.Input, &rec.Input) != nil || len(rec.Input) == 0 {
		return "'input' must be a string or a non-empty array of strings", "input"
	}
	return "", ""
}

// apiError is an error answer decided before the fault draw.
type apiError struct {
	status           int
	msg, code, param string
}

func notFound(msg, param string) *apiError {
	return &apiError{status: http.StatusNotFound, msg: msg, param: param}
}

func badRequest(msg, param string) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: msg, param: param}
}

// unknownPath is the answer to a path the server does not serve.
func unknownPath(r *http.Request) *apiError {
	return &apiError{status: http.StatusNotFound, msg: "Unknown path " + r.URL.Path, code: "unknown_url"}
}

func methodNotAllowed() *apiError {
	return &apiError{status: http.StatusMethodNotAllowed, msg: "Method not allowed"}
}

// route is one endpoint of the files, batches or fine-tuning API: its
// method, its path after /v1/ with {id} for an object's id, and the
// operation it is.
type route[K any] struct {
	method, path string
	kind         K
}

// matchRoute returns the operation of the route that r's path (with or
// without /v1) takes, and the id in it; a path of no route is
// unknownPath, and one of a route with another method methodNotAllowed.
func matchRoute[K any](r *http.Request, routes []route[K]) (kind K, id string, e *apiError) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1"), "/"), "/")
	for _, rt := range routes {
		want := strings.Split(rt.path, "/")
		if len(want) != len(parts) {
			continue
		}
		match, got := true, ""
		for i, w := range want {
			if w == "{id}" {
				got = parts[i]
			} else if w != parts[i] {
				match = false
			}
		}
		if !match {
			continue
		}
		if r.Method != rt.method {
			return kind, "", methodNotAllowed()
		}
		return rt.kind, got, nil
	}
	return kind, "", unknownPath(r)
}

func writeError(w http.ResponseWriter, status int, msg, typ, code, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorBody(msg, typ, code, param))
}

// errorBody is an OpenAI error object; batch output lines carry it too.
func errorBody(msg, typ, code, param string) []byte {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}

func (s *Server) content(rec Request) string {
	switch {
	case s.opts.Answer != nil:
		return s.opts.Answer(rec)
	case rec.ResponseFormat == "json_schema":
		if v, err := Instance(rec.Schema); err == nil {
			return string(v)
		}
		return "{}"
	case rec.ResponseFormat == "json_object":
		return "{}"
	default:
		return s.opts.Text
	}
}

// words counts tokens the way this server bills them: white-space
// separated words, at least one.
func words(s string) int { return max(1, len(strings.Fields(s))) }

func (s *Server) chatAnswer(rec Request, seq int) []byte {
	content := s.content(rec)
	prompt := 0
	for _, m := range rec.Messages {
		prompt += words(m.Content)
	}
	completion := words(content)
	model := rec.Model
	if model == "" {
		model = "llmtest"
	}
	b, _ := json.Marshal(map[string]any{
		"id":      fmt.Sprintf("chatcmpl-llmtest-%06d", seq),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content},
			"logprobs":      nil,
			"finish_reason": "stop",
		}},
		"usage": map[string]int{
			"prompt_tokens":     prompt,
			"completion_tokens": completion,
			"total_tokens":      prompt + completion,
		},
		"system_fingerprint": "fp_llmtest",
	})
	return b
}

func (s *Server) embeddingAnswer(rec Request) []byte {
	data := make([]any, len(rec.Input))
	tokens := 0
	for i, in := range rec.Input {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Vector(in, s.opts.EmbeddingDim)}
		tokens += words(in)
	}
	model := rec.Model
	if model == "" {
		model = "llmtest-embedding"
	}
	b, _ := json.Marshal(map[string]any{
		"object": "list",
		"data":   data,
		"model":  model,
		"usage":  map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	return b
}

// Vector is the embedding the server returns for text: dim pseudo-random
// components seeded by the text, with unit length.
func Vector(text string, dim int) []float32 {
	h := fnv.New64a()
	io.WriteString(h, text)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0xe3b))
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		x := rng.Float64()*2 - 1
		v[i] = float32(x)
		norm += x * x
	}
	if norm = math.Sqrt(norm); norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / norm)
		}
	}
	return v
}
