package llm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// CacheOptions configures Cache.
type CacheOptions struct {
	// Dir holds the entries; it is created if missing.
	Dir string
	// BaseURL and Model name the server and model behind the wrapped
	// Chatter, and Extra the members its client adds to every request
	// (Config.ChatExtra); all are part of every key.
	BaseURL string
	Model   string
	Extra   json.RawMessage
	// Logger receives corrupt entries and failed writes (default: none).
	Logger *slog.Logger
}

// cacheVersion is part of every key: bump it when the entry format or the
// meaning of a request changes.
const cacheVersion = 1

// CacheKey returns the hex SHA-256 key of req against baseURL, model and
// the client's extra members (Config.ChatExtra; nil for none): it covers
// the messages, every sampling parameter (temperature, top_p, max tokens,
// seed, and those of extra) and the schema. Two requests share a key only when a
// deterministic server would give them the same answer. Distinct samples
// at a temperature above zero need distinct seeds to get distinct keys.
func CacheKey(baseURL, model string, extra json.RawMessage, req Request) string {
	type keySchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	}
	k := struct {
		Version     int             `json:"v"`
		BaseURL     string          `json:"base_url"`
		Model       string          `json:"model"`
		Messages    []Message       `json:"messages"`
		Temperature float64         `json:"temperature"`
		TopP        float64         `json:"top_p"`
		MaxTokens   int             `json:"max_tokens"`
		Seed        *int            `json:"seed"`
		Schema      *keySchema      `json:"schema"`
		Extra       json.RawMessage `json:"extra,omitempty"`
	}{
		Version:     cacheVersion,
		BaseURL:     strings.TrimRight(baseURL, "/"),
		Model:       model,
		Messages:    req.Messages,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		MaxTokens:   req.MaxTokens,
		Seed:        req.Seed,
	}
	if len(extra) > 0 {
		k.Extra = keyJSON(extra)
	}
	if req.Schema != nil {
		k.Schema = &keySchema{Name: req.Schema.Name, Schema: keyJSON(req.Schema.Schema)}
	}
	b, err := json.Marshal(k)
	if err != nil {
		// Every field above marshals; this cannot happen.
		panic(fmt.Sprintf("llm: marshal cache key: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cacheEntry is the file format of one cached response.
type cacheEntry struct {
	Version      int    `json:"v"`
	Key          string `json:"key"`
	Content      string `json:"content"`
	FinishReason string `json:"finish_reason"`
	Model        string `json:"model"`
	Usage        Usage  `json:"usage"`
	Mode         string `json:"mode"`
}

// Cache returns a Chatter that answers from an on-disk cache in opts.Dir
// and asks next only on a miss, storing its answer. A hit returns the
// stored Response exactly, with Cached set. Errors are not cached.
//
// Entries are written to a temporary file and renamed into place, so
// concurrent goroutines and processes sharing Dir see whole entries or
// none; identical requests racing on a miss may both reach next, and the
// last write wins. An entry that cannot be read back is a miss and is
// overwritten. Failing to write an entry is logged, not returned: the
// answer is still good.
func Cache(next Chatter, opts CacheOptions) (Chatter, error) {
	if opts.Dir == "" {
		return nil, errors.New("llm: cache needs a directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("llm: create cache: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &cache{next: next, opts: opts}, nil
}

type cache struct {
	next Chatter
	opts CacheOptions
}

// keyJSON is raw compacted, for a key that spacing does not change; raw
// that is not JSON is keyed on its bytes, as a string.
func keyJSON(raw json.RawMessage) json.RawMessage {
	var compact bytes.Buffer
	if json.Compact(&compact, raw) == nil {
		return compact.Bytes()
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func (c *cache) path(key string) string {
	return filepath.Join(c.opts.Dir, key[:2], key+".json")
}

func (c *cache) Chat(ctx context.Context, req Request) (Response, error) {
	key := CacheKey(c.opts.BaseURL, c.opts.Model, c.opts.Extra, req)
	if resp, ok := c.load(key); ok {
		return resp, nil
	}
	resp, err := c.next.Chat(ctx, req)
	if err != nil || resp.Cached {
		return resp, err
	}
	if err := c.store(key, resp); err != nil {
		c.opts.Logger.Warn("cannot write cache entry", "key", key, "error", err)
	}
	return resp, nil
}

func (c *cache) load(key string) (Response, bool) {
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.opts.Logger.Warn("cannot read cache entry", "key", key, "error", err)
		}
		return Response{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Version != cacheVersion || e.Key != key {
		c.opts.Logger.Debug("corrupt cache entry; treating as a miss", "key", key, "error", err)
		return Response{}, false
	}
	return Response{
		Content:      e.Content,
		FinishReason: e.FinishReason,
		Model:        e.Model,
		Usage:        e.Usage,
		Mode:         e.Mode,
		Cached:       true,
	}, true
}

func (c *cache) store(key string, resp Response) error {
	b, err := json.Marshal(cacheEntry{
		Version:      cacheVersion,
		Key:          key,
		Content:      resp.Content,
		FinishReason: resp.FinishReason,
		Model:        resp.Model,
		Usage:        resp.Usage,
		Mode:         resp.Mode,
	})
	if err != nil {
		return err
	}
	dir := filepath.Dir(c.path(key))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-"+key[:8]+"-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	merr := f.Chmod(0o644) // CreateTemp makes 0600; entries are not secret
	cerr := f.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), c.path(key)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
