package elastic

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elastic/go-elasticsearch/v8/esapi"
	"golang.org/x/sync/errgroup"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/httperr"
)

// Source yields the passages to load; Next returns io.EOF after the last.
// It is the same interface as bm25.Source: a *data.CorpusReader is one.
type Source interface {
	Next() (data.Passage, error)
}

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

// maxIDBytes is the cluster's limit on a document id.
const maxIDBytes = 512

// maxReported caps the failures a BulkError lists.
const maxReported = 1000

// Vectors gives Load the passages' dense vectors.
type Vectors struct {
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
			inputs[i] = prefix + passageText(p)
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

func passageText(p data.Passage) string {
	if p.Title == "" {
		return p.Text
	}
	return p.Title + " " + p.Text
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
	if o.Stemmer == "" {
		o.Stemmer = StemmerPorter2
	}
	if o.Stemmer != StemmerPorter2 && o.Stemmer != StemmerPorter {
		return o, fmt.Errorf("stemmer %q: want %q or %q", o.Stemmer, StemmerPorter2, StemmerPorter)
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
// Stats are returned in every case, as far as the load went.
func Load(ctx context.Context, cfg Config, src Source, opts LoadOptions) (Stats, error) {
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
	if cfg.Flavor != "" && cfg.Flavor != flavor {
		return st, fmt.Errorf("%s: the cluster at %s is %s %s, not %s", op, c.where(), flavor, version, cfg.Flavor)
	}
	st.Flavor, st.Version = flavor, version
	if opts.Vectors != nil && flavor == Elasticsearch && majorVersion(version) < 8 {
		return st, fmt.Errorf("%s: dense vectors need Elasticsearch 8 or later, the cluster runs %s", op, version)
	}
	exists, err := c.exists(ctx, cfg.Index)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	if exists && !opts.Recreate {
		return st, fmt.Errorf("%s at %s: %w (recreate it to replace it)", op, c.where(), ErrExists)
	}

	// The first batch is read (and embedded, when the vector size is to be
	// learnt) before anything changes on the cluster.
	l := &loader{c: c, index: cfg.Index, opts: opts, cfg: cfg}
	first, eof, err := readJob(src, opts.BatchSize, 1)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	if v := opts.Vectors; v != nil {
		l.dims = v.Dims
		if l.dims == 0 {
			if len(first.ps) == 0 {
				return st, fmt.Errorf("%s: no passages to learn the vector size from: set the dimensions", op)
			}
			if first.vecs, err = l.embed(ctx, first.ps); err != nil {
				return st, fmt.Errorf("%s: %w", op, err)
			}
			for _, v := range first.vecs {
				if len(v) > 0 {
					l.dims = len(v)
					break
				}
			}
			if l.dims == 0 {
				return st, fmt.Errorf("%s: the first %d passages have no vectors: set the dimensions", op, len(first.ps))
			}
		}
		st.Dims = l.dims
	}
	body, err := indexBody(flavor, opts, l.dims)
	if err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	if exists {
		if _, _, err := c.call(ctx, "delete index", esapi.IndicesDeleteRequest{Index: []string{cfg.Index}}); err != nil && !errors.Is(err, ErrNotFound) {
			return st, fmt.Errorf("%s: %w", op, err)
		}
	}
	if _, _, err := c.call(ctx, "create index", esapi.IndicesCreateRequest{Index: cfg.Index, Body: bytes.NewReader(body)}); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Type == "resource_already_exists_exception" {
			return st, fmt.Errorf("%s at %s: %w (created meanwhile by someone else)", op, c.where(), ErrExists)
		}
		return st, fmt.Errorf("%s: %w", op, err)
	}

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

	// Back to the default refresh interval, then make everything visible.
	reset := []byte(`{"index":{"refresh_interval":null}}`)
	if _, _, err := c.call(ctx, "index settings", esapi.IndicesPutSettingsRequest{Index: []string{cfg.Index}, Body: bytes.NewReader(reset)}); err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	if _, _, err := c.call(ctx, "refresh", esapi.IndicesRefreshRequest{Index: []string{cfg.Index}}); err != nil {
		return st, fmt.Errorf("%s: %w", op, err)
	}
	if st.Docs, err = c.count(ctx, cfg.Index); err != nil {
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

func majorVersion(v string) int {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
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

// loader bulk-loads the batches of one Load.
type loader struct {
	c     *client
	cfg   Config
	index string
	opts  LoadOptions
	dims  int
}

// job is one batch of passages.
type job struct {
	first int64 // the 1-based source position of ps[0]
	ps    []data.Passage
	vecs  [][]float32 // nil: not embedded yet
}

// outcome is what loading a job came to.
type outcome struct {
	passages                  int
	loaded, retried, requests int64
	failed                    []ItemError
}

// readJob reads up to n passages; eof tells that the source is done.
func readJob(src Source, n int, first int64) (job, bool, error) {
	j := job{first: first, ps: make([]data.Passage, 0, n)}
	for len(j.ps) < n {
		p, err := src.Next()
		if err == io.EOF {
			return j, true, nil
		}
		if err != nil {
			return j, false, fmt.Errorf("read passage %d: %w", first+int64(len(j.ps)), err)
		}
		j.ps = append(j.ps, p)
	}
	return j, false, nil
}

// run reads the source in one goroutine and loads its batches in
// opts.Workers others; done sees each batch's outcome, in the calling
// goroutine. It returns when every goroutine has, with the first error.
func (l *loader) run(ctx context.Context, src Source, first job, eof bool, done func(outcome)) error {
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan job, l.opts.Workers)
	outcomes := make(chan outcome, l.opts.Workers)
	g.Go(func() error {
		defer close(jobs)
		j := first
		for {
			if len(j.ps) > 0 {
				select {
				case jobs <- j:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			if eof {
				return nil
			}
			var err error
			if j, eof, err = readJob(src, l.opts.BatchSize, j.first+int64(len(j.ps))); err != nil {
				return err
			}
		}
	})
	var workers sync.WaitGroup
	for range l.opts.Workers {
		workers.Add(1)
		g.Go(func() error {
			defer workers.Done()
			for j := range jobs {
				o, err := l.load(gctx, j)
				if err != nil {
					return err
				}
				select {
				case outcomes <- o:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	go func() {
		workers.Wait()
		close(outcomes)
	}()
	for o := range outcomes {
		done(o)
	}
	return g.Wait()
}

// embed returns the batch's vectors, scaled to unit length.
func (l *loader) embed(ctx context.Context, ps []data.Passage) ([][]float32, error) {
	vecs, err := l.opts.Vectors.Embed(ctx, ps)
	if err != nil {
		return nil, fmt.Errorf("embed passages %q...: %w", ps[0].ID, err)
	}
	if len(vecs) != len(ps) {
		return nil, fmt.Errorf("embed passages %q...: got %d vectors for %d passages", ps[0].ID, len(vecs), len(ps))
	}
	return vecs, nil
}

// item is one document ready to send: its action and source lines.
type item struct {
	pos   int64
	id    string
	lines []byte
}

// doc is the stored document.
type doc struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Text      string    `json:"text"`
	Sentences []string  `json:"sentences,omitempty"`
	Vector    []float32 `json:"vector,omitempty"`
}

// encode turns a job into bulk items; passages that cannot be sent are
// failures at once.
func (l *loader) encode(j job) ([]item, []ItemError, error) {
	items := make([]item, 0, len(j.ps))
	var failed []ItemError
	for i, p := range j.ps {
		pos := j.first + int64(i)
		fail := func(reason string) {
			failed = append(failed, ItemError{ID: p.ID, Passage: pos, Type: "invalid_passage", Reason: reason})
		}
		if p.ID == "" {
			fail("empty doc id")
			continue
		}
		if !utf8.ValidString(p.ID) {
			fail("doc id is not valid UTF-8")
			continue
		}
		if len(p.ID) > maxIDBytes {
			fail(fmt.Sprintf("doc id of %d bytes, at most %d allowed", len(p.ID), maxIDBytes))
			continue
		}
		d := doc{ID: p.ID, Title: p.Title, Text: p.Text, Sentences: p.Sentences}
		if l.dims > 0 {
			v := j.vecs[i]
			switch {
			case len(v) == 0:
				fail("no vector")
				continue
			case len(v) != l.dims:
				fail(fmt.Sprintf("vector of %d dimensions, the index has %d", len(v), l.dims))
				continue
			}
			u, ok := unit(v)
			if !ok {
				fail("vector is zero or not finite")
				continue
			}
			d.Vector = u
		}
		id, err := json.Marshal(p.ID)
		if err != nil {
			return nil, nil, err
		}
		source, err := json.Marshal(d)
		if err != nil {
			return nil, nil, fmt.Errorf("passage %d (%q): %w", pos, p.ID, err)
		}
		lines := make([]byte, 0, len(id)+len(source)+24)
		lines = append(lines, `{"index":{"_id":`...)
		lines = append(lines, id...)
		lines = append(lines, "}}\n"...)
		lines = append(lines, source...)
		lines = append(lines, '\n')
		items = append(items, item{pos: pos, id: p.ID, lines: lines})
	}
	return items, failed, nil
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

// load sends one job, and again the documents the cluster rejected for a
// while (429, 5xx), until they are in or out of retries.
func (l *loader) load(ctx context.Context, j job) (outcome, error) {
	o := outcome{passages: len(j.ps)}
	if l.dims > 0 && j.vecs == nil {
		var err error
		if j.vecs, err = l.embed(ctx, j.ps); err != nil {
			return o, err
		}
	}
	pending, failed, err := l.encode(j)
	if err != nil {
		return o, err
	}
	o.failed = failed
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(l.cfg.backoff(attempt))
			select {
			case <-ctx.Done():
				t.Stop()
				return o, ctx.Err()
			case <-t.C:
			}
		}
		o.requests++
		results, err := l.bulk(ctx, pending)
		if err != nil {
			return o, err
		}
		var again []item
		for i, r := range results {
			it := pending[i]
			switch {
			case r.Status >= 200 && r.Status < 300:
				o.loaded++
			case (r.Status == http.StatusTooManyRequests || r.Status >= 500) && attempt < l.opts.Retries:
				again = append(again, it)
			default:
				ie := ItemError{ID: it.id, Passage: it.pos, Status: r.Status}
				if r.Error != nil {
					ie.Type, ie.Reason = r.Error.Type, r.Error.Text()
				}
				if r.Status == http.StatusTooManyRequests || r.Status >= 500 {
					ie.Reason += fmt.Sprintf(" (still failing after %d tries)", attempt+1)
				}
				o.failed = append(o.failed, ie)
			}
		}
		o.retried += int64(len(again))
		pending = again
	}
	return o, nil
}

// bulkItem is one entry of a bulk answer.
type bulkItem struct {
	ID     string          `json:"_id"`
	Status int             `json:"status"`
	Error  *httperr.Object `json:"error"`
}

// bulkFilter trims the bulk answer to what load reads.
var bulkFilter = []string{"errors", "items.*._id", "items.*.status", "items.*.error"}

// bulk sends items in one _bulk request and returns the result of each,
// in order. A request refused as a whole, or an answer that does not
// account for every item, is an error.
func (l *loader) bulk(ctx context.Context, items []item) ([]bulkItem, error) {
	n := 0
	for _, it := range items {
		n += len(it.lines)
	}
	body := make([]byte, 0, n)
	for _, it := range items {
		body = append(body, it.lines...)
	}
	req := esapi.BulkRequest{
		Index:      l.index,
		Body:       bytes.NewReader(body),
		Header:     http.Header{"Content-Type": {"application/x-ndjson"}},
		FilterPath: bulkFilter,
	}
	const op = "bulk"
	_, answer, err := l.c.call(ctx, op, req)
	if err != nil {
		return nil, err
	}
	var res struct {
		Items []map[string]bulkItem `json:"items"`
	}
	if err := decode(op, answer, &res); err != nil {
		return nil, err
	}
	if len(res.Items) != len(items) {
		return nil, httperr.Malformed(op, fmt.Errorf("%d results for %d documents", len(res.Items), len(items)), nil)
	}
	out := make([]bulkItem, len(items))
	for i, m := range res.Items {
		r, ok := m["index"]
		if !ok || len(m) != 1 {
			return nil, httperr.Malformed(op, fmt.Errorf("result %d is not an index result: %v", i+1, m), nil)
		}
		if r.ID != "" && r.ID != items[i].id {
			return nil, httperr.Malformed(op, fmt.Errorf("result %d is for doc %q, sent %q", i+1, r.ID, items[i].id), nil)
		}
		if r.Status == 0 {
			return nil, httperr.Malformed(op, fmt.Errorf("result %d has no status", i+1), nil)
		}
		out[i] = r
	}
	return out, nil
}
