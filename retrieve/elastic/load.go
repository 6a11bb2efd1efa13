package elastic

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/llm/httperr"
	"github.com/distill-rag/distill/retrieve"
)

// Default BM25 parameters and loading settings.
const (
	DefaultK1        = 0.9
	DefaultB         = 0.4
	DefaultBatchSize = 1000
	DefaultWorkers   = 2
	// DefaultItemRetries is how often a document the cluster rejected
	// (429, 5xx) is sent again.
	DefaultItemRetries = 5
)

// maxReported caps the failures a BulkError lists.
const maxReported = 1000

// Vectors gives Load the passages' dense vectors.
type Vectors struct {
	// Embedding, when set, is recorded in the index's mapping, so that a
	// retriever opened with Config.Search knn or exact embeds its queries
	// with the same model (OpenOptions.EmbedderFor).
	Embedding *Embedding
	// Dims is the vectors' length; 0 means learn it from the first batch.
	Dims int
	// Embed returns one vector per passage of a batch, in order (nil for a
	// passage that has none: it fails to load). Precomputed vectors are an
	// Embed that looks them up by passage id. Vectors are scaled to unit
	// length before loading: both flavours rank by inner product, and
	// Elasticsearch's dot_product similarity accepts unit vectors only.
	// Embed is called from several goroutines at once (LoadOptions.Workers).
	Embed func(ctx context.Context, batch []data.Passage) ([][]float32, error)
}

// EmbedPassages returns a Vectors.Embed that embeds prefix + title + " " +
// text of each passage with e (prefix is "passage: " for E5 models).
func EmbedPassages(e Embedder, prefix string) func(context.Context, []data.Passage) ([][]float32, error) {
	return func(ctx context.Context, batch []data.Passage) ([][]float32, error) {
		inputs := make([]string, len(batch))
		for i, p := range batch {
			inputs[i] = prefix + retrieve.PassageText(p, retrieve.TitleText)
		}
		vecs, _, err := e.Embed(ctx, inputs)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("embedder returned %d vectors for %d passages", len(vecs), len(batch))
		}
		return vecs, nil
	}
}

// LoadOptions configure Load. The zero value loads with the defaults.
type LoadOptions struct {
	// Recreate deletes the index first when it exists; without it an
	// existing index is an error (ErrExists).
	Recreate bool
	// BatchSize is the number of passages per bulk request (default
	// DefaultBatchSize).
	BatchSize int
	// Workers is the number of bulk requests in flight (default
	// DefaultWorkers).
	Workers int
	// Retries is how many times a document the cluster rejected with 429
	// or 5xx is sent again, waiting Config.Backoff, doubling, in between
	// (default DefaultItemRetries; negative: never).
	Retries int
	// K1 and B are the BM25 parameters set in the index (default
	// DefaultK1, DefaultB: the method's settings).
	K1, B float64
	// Engine is the k-NN engine of the vector field on OpenSearch:
	// EngineFaiss (default) or EngineLucene. Elasticsearch has one engine
	// and ignores it.
	Engine string
	// Stemmer is StemmerPorter2 (default, as distill's in-process index)
	// or StemmerPorter (as Lucene's EnglishAnalyzer and Pyserini).
	Stemmer string
	// Shards is the number of primary shards (default 1). With more,
	// searches ask for global term statistics (dfs_query_then_fetch) so
	// that scores do not depend on how documents fall into shards.
	Shards int
	// Replicas is the number of replicas of each shard (default 0, right
	// for one node; raise it later with the index settings API).
	Replicas int
	// Vectors, when set, adds a dense vector field (dense_vector on
	// Elasticsearch 8, knn_vector on OpenSearch) for kNN search.
	Vectors *Vectors
	// Progress, when set, is called after each batch with the counts so
	// far, from the goroutine that called Load.
	Progress func(Stats)
}

func (o LoadOptions) withDefaults() (LoadOptions, error) {
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Retries == 0 {
		o.Retries = DefaultItemRetries
	}
	if o.K1 == 0 {
		o.K1 = DefaultK1
	}
	if o.B == 0 {
		o.B = DefaultB
	}
	if o.K1 < 0 || o.B < 0 || o.B > 1 || math.IsNaN(o.K1) || math.IsNaN(o.B) || math.IsInf(o.K1, 0) {
		return o, fmt.Errorf("bm25 parameters k1=%g b=%g: want k1 >= 0 and 0 <= b <= 1", o.K1, o.B)
	}
	st, err := analysis.ParseStemmer(o.Stemmer)
	if err != nil {
		return o, err
	}
	o.Stemmer = string(st)
	if o.Engine == "" {
		o.Engine = EngineFaiss
	}
	if o.Engine != EngineFaiss && o.Engine != EngineLucene {
		return o, fmt.Errorf("k-NN engine %q: want %q or %q", o.Engine, EngineFaiss, EngineLucene)
	}
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.Replicas < 0 {
		return o, fmt.Errorf("replicas %d: want 0 or more", o.Replicas)
	}
	if o.Vectors != nil {
		if o.Vectors.Embed == nil {
			return o, errors.New("vectors given without an Embed function")
		}
		if o.Vectors.Dims < 0 {
			return o, fmt.Errorf("vector dims %d: want 0 (learn them) or more", o.Vectors.Dims)
		}
	}
	return o, nil
}

// Stats describe a load, finished or under way.
type Stats struct {
	// Passages is the number read from the source.
	Passages int64 `json:"passages"`
	// Loaded is the number the cluster acknowledged.
	Loaded int64 `json:"loaded"`
	// Failed is the number that failed for good (see BulkError).
	Failed int64 `json:"failed"`
	// Retried counts documents sent again after the cluster rejected them.
	Retried int64 `json:"retried"`
	// Requests is the number of bulk requests.
	Requests int64 `json:"requests"`
	// Docs is the number of documents in the index once loaded.
	Docs int64 `json:"docs"`
	// Dims is the length of the dense vectors (0: none).
	Dims int `json:"dims,omitempty"`
	// Flavor and Version describe the cluster.
	Flavor  Flavor        `json:"flavor"`
	Version string        `json:"version"`
	Elapsed time.Duration `json:"-"`
}

// ItemError is one passage that did not load.
type ItemError struct {
	ID string
	// Passage is its 1-based position in the source.
	Passage int64
	// Status is the HTTP status the cluster gave the document (0 when
	// Load refused it before sending: an empty id, a missing vector).
	Status int
	// Type and Reason describe the failure ("mapper_parsing_exception",
	// "failed to parse field [vector] ...").
	Type, Reason string
}

// BulkError reports the passages that failed to load for good; Load
// returns it after loading the others.
type BulkError struct {
	Index string
	// Failed is the number of passages that failed.
	Failed int64
	// Items are the first failures (at most 1000), in source order.
	Items []ItemError
}

func (e *BulkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "load index %q: %d passages failed to load:", e.Index, e.Failed)
	const shown = 10
	for i, it := range e.Items[:min(len(e.Items), shown)] {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %q (passage %d", it.ID, it.Passage)
		if it.Status != 0 {
			fmt.Fprintf(&b, ", %d", it.Status)
		}
		reason := it.Reason
		if len(reason) > 160 {
			reason = strings.ToValidUTF8(reason[:160], "") + "..."
		}
		fmt.Fprintf(&b, ") %s: %s", it.Type, reason)
	}
	if more := e.Failed - int64(min(len(e.Items), shown)); more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return b.String()
}

// Load creates the index cfg names and loads every passage of src into
// it, then makes them searchable (refresh). Passages that fail for good
// (the cluster refuses the document, or keeps rejecting it after
// LoadOptions.Retries tries) do not stop the load: Load returns a
// *BulkError naming them once the others are in. Any other error (no
// cluster, bad credentials, a bulk request refused as a whole, a source or
// embedding error, ctx done) stops it and leaves the index incomplete.
// Doc ids must be unique: a repeated id replaces the earlier document and
// Load reports the shortfall.
//
// An existing index is an error (ErrExists) unless LoadOptions.Recreate
// is set, with one exception: an index whose load was interrupted (the
// process killed, the cluster gone) and that the same options would make
// again. Load then sends every passage again into it; documents are
// indexed by id, so the index ends with each passage once. Load records
// in the mapping's _meta that a load is running, and that it is complete
// once every passage is in and refreshed; Open refuses an index whose
// load is still running or was interrupted.
//
// Stats are returned in every case, as far as the load went.
func Load(ctx context.Context, cfg Config, src retrieve.Source, opts LoadOptions) (Stats, error) {
	start := time.Now()
	st := Stats{}
	cfg, err := cfg.withDefaults(os.Getenv)
	if err != nil {
		return st, fmt.Errorf("load index: %w", err)
	}
	op := fmt.Sprintf("load index %q", cfg.Index)
	if opts, err = opts.withDefaults(); err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	c, err := newClient(cfg)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	defer c.close()

	flavor, version, err := c.flavor(ctx)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	st.Flavor, st.Version = flavor, version
	exists, found, err := c.preflight(ctx, cfg, opts, flavor, version)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}

	// The first batch is read (and embedded, when the vector size is to be
	// learnt) before anything changes on the cluster.
	l := &loader{c: c, index: cfg.Index, opts: opts, cfg: cfg}
	first, eof, err := readJob(src, opts.BatchSize, 1)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	if opts.Vectors != nil {
		if err := l.learnDims(ctx, &first); err != nil {
			return st, fmt.Errorf("%s: %w", op, err)
		}
		st.Dims = l.dims
	}
	body, err := indexBody(flavor, opts, l.dims)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	sum := sha256.Sum256(body)
	meta := loadMeta{State: loadRunning, Digest: hex.EncodeToString(sum[:])}
	if opts.Vectors != nil {
		meta.Embedding = opts.Vectors.Embedding
	}
	switch {
	case found != nil && found.Digest != meta.Digest:
		return st, fmt.Errorf("%s at %s: %w: its load was interrupted, and with other settings (recreate it to replace it)", op, c.where(), ErrExists)
	case found == nil:
		if err := c.create(ctx, cfg.Index, exists, body, meta); err != nil {
			return st, fmt.Errorf("%s: %w", op, err)
		}
	}
	// else: go on with the interrupted load: the index is the one these
	// options make.

	var failed []ItemError
	err = l.run(ctx, src, first, eof, func(o outcome) {
		st.Passages += int64(o.passages)
		st.Loaded += o.loaded
		st.Retried += o.retried
		st.Requests += o.requests
		st.Failed += int64(len(o.failed))
		if room := maxReported - len(failed); room > 0 {
			failed = append(failed, o.failed[:min(room, len(o.failed))]...)
		}
		if opts.Progress != nil {
			st.Elapsed = time.Since(start)
			opts.Progress(st)
		}
	})
	st.Elapsed = time.Since(start)
	if err != nil {
		return st, fmt.Errorf("%s: stopped after %d passages, the index is incomplete: %w", op, st.Passages, err)
	}

	meta.Passages = st.Passages
	if st.Docs, err = c.complete(ctx, cfg.Index, meta); err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	st.Elapsed = time.Since(start)

	var errs []error
	if st.Failed > 0 {
		slices.SortFunc(failed, func(a, b ItemError) int { return cmp.Compare(a.Passage, b.Passage) })
		errs = append(errs, &BulkError{Index: cfg.Index, Failed: st.Failed, Items: failed})
	}
	if st.Docs < st.Loaded {
		errs = append(errs, fmt.Errorf("%s: %d passages loaded but the index holds %d documents: %d passages repeat the id of an earlier one, which they replaced",
			op, st.Loaded, st.Docs, st.Loaded-st.Docs))
	}
	return st, errors.Join(errs...)
}

// preflight checks that the cluster can hold the index, and says whether
// it exists and, when it is the index of an interrupted load to go on
// with, that load's meta.
func (c *client) preflight(ctx context.Context, cfg Config, opts LoadOptions, flavor Flavor, version string) (exists bool, found *loadMeta, err error) {
	if cfg.Flavor != "" && cfg.Flavor != flavor {
		return false, nil, fmt.Errorf("the cluster at %s is %s %s, not %s", c.where(), flavor, version, cfg.Flavor)
	}
	if opts.Vectors != nil && flavor == Elasticsearch && majorVersion(version) < 8 {
		return false, nil, fmt.Errorf("dense vectors need Elasticsearch 8 or later, the cluster runs %s", version)
	}
	if exists, err = c.exists(ctx, cfg.Index); err != nil {
		return false, nil, err
	}
	if !exists || opts.Recreate {
		return exists, nil, nil
	}
	if found, err = c.loadMeta(ctx, cfg.Index); err != nil {
		return exists, nil, err
	}
	if found == nil || found.State != loadRunning {
		return exists, nil, fmt.Errorf("at %s: %w (recreate it to replace it)", c.where(), ErrExists)
	}
	return exists, found, nil
}

// learnDims sets l.dims from the vector options, or from the vectors of
// the first job, which it embeds.
func (l *loader) learnDims(ctx context.Context, first *job) error {
	l.dims = l.opts.Vectors.Dims
	if l.dims > 0 {
		return nil
	}
	if len(first.ps) == 0 {
		return errors.New("no passages to learn the vector size from: set the dimensions")
	}
	var err error
	if first.vecs, err = l.embed(ctx, first.ps); err != nil {
		return err
	}
	for _, v := range first.vecs {
		if len(v) > 0 {
			l.dims = len(v)
			return nil
		}
	}
	return fmt.Errorf("the first %d passages have no vectors: set the dimensions", len(first.ps))
}

// create creates the index with its settings and mappings (body) and the
// load's meta, deleting the one that exists first.
func (c *client) create(ctx context.Context, index string, exists bool, body []byte, meta loadMeta) error {
	if exists {
		if _, _, err := c.call(ctx, "delete index", esapi.IndicesDeleteRequest{Index: []string{index}}); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	body, err := withMeta(body, meta)
	if err != nil {
		return err
	}
	if _, _, err := c.call(ctx, "create index", esapi.IndicesCreateRequest{Index: index, Body: bytes.NewReader(body)}); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Type == "resource_already_exists_exception" {
			return fmt.Errorf("at %s: %w (created meanwhile by someone else)", c.where(), ErrExists)
		}
		return err
	}
	return nil
}

// complete ends a load: the default refresh interval again, everything
// made visible, the load's meta marked complete; it returns the number of
// documents the index holds.
func (c *client) complete(ctx context.Context, index string, meta loadMeta) (int64, error) {
	reset := []byte(`{"index":{"refresh_interval":null}}`)
	if _, _, err := c.call(ctx, "index settings", esapi.IndicesPutSettingsRequest{Index: []string{index}, Body: bytes.NewReader(reset)}); err != nil {
		return 0, err
	}
	if _, _, err := c.call(ctx, "refresh", esapi.IndicesRefreshRequest{Index: []string{index}}); err != nil {
		return 0, err
	}
	docs, err := c.count(ctx, index)
	if err != nil {
		return 0, err
	}
	meta.State = loadComplete
	return docs, c.putMeta(ctx, index, meta)
}

func majorVersion(v string) int {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// loadMeta returns what Load recorded in the index's _meta, or nil when
// the index does not say (made by someone else, or by an older distill).
func (c *client) loadMeta(ctx context.Context, index string) (*loadMeta, error) {
	_, body, err := c.call(ctx, "get index", esapi.IndicesGetRequest{Index: []string{index}})
	if err != nil {
		return nil, err
	}
	var infos map[string]indexInfo
	if err := decode("get index", body, &infos); err != nil {
		return nil, err
	}
	if len(infos) != 1 {
		return nil, nil // an alias over several indexes: not one Load made
	}
	for _, in := range infos {
		return in.Mappings.Meta.Distill, nil
	}
	return nil, nil
}

// putMeta records m in the index's _meta.
func (c *client) putMeta(ctx context.Context, index string, m loadMeta) error {
	body, err := json.Marshal(map[string]any{"_meta": map[string]any{"distill": m}})
	if err != nil {
		return err
	}
	_, _, err = c.call(ctx, "put mapping", esapi.IndicesPutMappingRequest{Index: []string{index}, Body: bytes.NewReader(body)})
	return err
}

// exists reports whether the index (or alias) is there.
func (c *client) exists(ctx context.Context, index string) (bool, error) {
	_, _, err := c.call(ctx, "index exists", esapi.IndicesExistsRequest{Index: []string{index}})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (c *client) count(ctx context.Context, index string) (int64, error) {
	_, body, err := c.call(ctx, "count", esapi.CountRequest{Index: []string{index}})
	if err != nil {
		return 0, err
	}
	var v struct {
		Count *int64 `json:"count"`
	}
	if err := decode("count", body, &v); err != nil {
		return 0, err
	}
	if v.Count == nil {
		return 0, httperr.Malformed("count", errors.New("no count"), body)
	}
	return *v.Count, nil
}

// unit returns v scaled to length 1 (v itself when it is already), or
// false for a zero or non-finite vector.
func unit(v []float32) ([]float32, bool) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, false
	}
	n := math.Sqrt(s)
	if math.Abs(n-1) < 1e-6 {
		return v, true
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out, true
}
