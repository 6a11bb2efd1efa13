package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/httperr"
	"github.com/distill-rag/distill/retrieve"
)

// Embedder turns texts into vectors. An *llm.Client and the embedders llm
// stacks on it (retries, limits) are Embedders.
type Embedder interface {
	Embed(ctx context.Context, inputs []string) ([][]float32, llm.Usage, error)
}

// OpenOptions configure Open. The zero value searches by BM25.
type OpenOptions struct {
	// Embedder, when set, makes Search a kNN search over the index's
	// vectors (loaded with LoadOptions.Vectors) instead of BM25: the query
	// is QueryPrefix + q.Text, embedded and scaled to unit length.
	Embedder Embedder
	// QueryPrefix goes before every query given to Embedder ("query: "
	// for E5 models).
	QueryPrefix string
	// NumCandidates is how many candidates each shard's graph search
	// considers (Elasticsearch num_candidates; default max(100, 10*K),
	// at most 10000). More is slower and closer to exact.
	NumCandidates int
	// Exact makes the search with an Embedder exact: every vector that
	// passes the exclusion is scored by a script_score query (the k-NN
	// plugin's knn_score on OpenSearch, painless dotProduct on
	// Elasticsearch) instead of searching the HNSW graph. It reads every
	// vector, so it suits small indexes and checking the graph's recall.
	Exact bool
	// EmbedderFor returns the Embedder of an index's recorded Embedding,
	// for a Config.Search of knn or exact without an Embedder.
	EmbedderFor func(ctx context.Context, e Embedding) (Embedder, error)
	// SortByID breaks ties between equal BM25 scores by doc id, so that
	// the order of tied hits does not depend on the order the documents
	// were loaded in. It costs speed: sorting on a field turns off the
	// cluster's top-k pruning of low-scoring documents.
	SortByID bool
}

// Retriever searches an index made by Load. It is a retrieve.Retriever,
// safe for concurrent use.
//
// BM25 hits tie in the index's internal document order (the order in
// which the documents were loaded, which with several Load workers is
// not quite the corpus order), unless OpenOptions.SortByID is set. Every
// search names the same preference, so repeated searches go to the same
// shard copies and score alike.
type Retriever struct {
	c      *client
	index  string
	opts   OpenOptions
	dfs    bool
	flavor Flavor // the kNN query syntax
	dims   int
}

// preference pins searches to the same shard copies.
const preference = "distill"

// Open connects to the index cfg names and checks that Load made it (it
// has the fields Search uses; the vector field too when opts.Embedder is
// set). A missing index is ErrNotFound.
func Open(ctx context.Context, cfg Config, opts OpenOptions) (*Retriever, error) {
	cfg, err := cfg.withDefaults(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	op := fmt.Sprintf("open index %q", cfg.Index)
	if opts.NumCandidates < 0 {
		return nil, fmt.Errorf("%s: num candidates %d: want 0 (default) or more", op, opts.NumCandidates)
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	r, err := open(ctx, c, cfg, opts)
	if err != nil {
		c.close()
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%s at %s: %w (load it first, with distill index --kind elasticsearch)", op, c.where(), ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return r, nil
}

func open(ctx context.Context, c *client, cfg Config, opts OpenOptions) (*Retriever, error) {
	_, body, err := c.call(ctx, "get index", esapi.IndicesGetRequest{Index: []string{cfg.Index}})
	if err != nil {
		return nil, err
	}
	var infos map[string]indexInfo
	if err := decode("get index", body, &infos); err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, ErrNotFound
	}
	r := &Retriever{c: c, index: cfg.Index, opts: opts}
	shards := 0
	names := make([]string, 0, len(infos))
	for name := range infos {
		names = append(names, name)
	}
	slices.Sort(names)
	if err := r.embedderFor(ctx, cfg.Search, infos[names[0]], names[0]); err != nil {
		return nil, err
	}
	opts = r.opts
	for _, name := range names {
		in := infos[name]
		if m := in.Mappings.Meta.Distill; m != nil && m.State != loadComplete {
			return nil, fmt.Errorf("the load of index %q did not finish: run the same distill index command again to finish it", name)
		}
		props := in.Mappings.Properties
		for field, typ := range map[string]string{fieldAll: "text", fieldID: "keyword", fieldTitle: "text"} {
			if props[field].Type != typ {
				return nil, fmt.Errorf("index %q was not made by distill's loader: want a %s field %q, found %q", name, typ, field, props[field].Type)
			}
		}
		shards += max(int(in.Settings.Index.Shards), 1)
		if opts.Embedder == nil {
			continue
		}
		v := props[fieldVector]
		var flavor Flavor
		var dims int
		switch v.Type {
		case "dense_vector":
			flavor, dims = Elasticsearch, int(v.Dims)
		case "knn_vector":
			flavor, dims = OpenSearch, int(v.Dimension)
		case "":
			return nil, fmt.Errorf("index %q has no vectors for kNN search: load it with vectors", name)
		default:
			return nil, fmt.Errorf("index %q: vector field of type %q, want dense_vector or knn_vector", name, v.Type)
		}
		if r.flavor != "" && (r.flavor != flavor || r.dims != dims) {
			return nil, fmt.Errorf("the indices behind %q have different vector fields", cfg.Index)
		}
		r.flavor, r.dims = flavor, dims
	}
	if cfg.Flavor != "" && r.flavor != "" && cfg.Flavor != r.flavor {
		return nil, fmt.Errorf("index %q holds %s vectors but the flavor is %s", cfg.Index, r.flavor, cfg.Flavor)
	}
	r.dfs = shards > 1
	return r, nil
}

// embedderFor sets up the search a Config asks for: for knn or exact
// without an Embedder, the one OpenOptions.EmbedderFor returns for the
// embedding the index (in, named name) records.
func (r *Retriever) embedderFor(ctx context.Context, s Search, in indexInfo, name string) error {
	if s != SearchKNN && s != SearchExact {
		return nil
	}
	r.opts.Exact = r.opts.Exact || s == SearchExact
	if r.opts.Embedder != nil {
		return nil
	}
	var e *Embedding
	if m := in.Mappings.Meta.Distill; m != nil {
		e = m.Embedding
	}
	switch {
	case e == nil || e.Model == "":
		return fmt.Errorf("index %q records no embeddings model, so its queries cannot be embedded for a %s search: load it with distill index --kind elasticsearch --embed-model", name, s)
	case r.opts.EmbedderFor == nil:
		return fmt.Errorf("a %s search of index %q needs an embedder for model %q", s, name, e.Model)
	}
	emb, err := r.opts.EmbedderFor(ctx, *e)
	if err != nil {
		return fmt.Errorf("index %q: embeddings model %q: %w", name, e.Model, err)
	}
	r.opts.Embedder = emb
	if r.opts.QueryPrefix == "" {
		r.opts.QueryPrefix = e.QueryPrefix
	}
	return nil
}

// Close releases the connections.
func (r *Retriever) Close() error {
	r.c.close()
	return nil
}

// Search returns the q.K best passages for q: by BM25 over title and text,
// or by inner product with the query's embedding when the Retriever has
// an Embedder. q.Exclude is part of the query the cluster runs (a
// must_not terms clause, or the kNN filter), so K hits come back whenever
// K others match.
func (r *Retriever) Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	if q.K < 1 {
		return nil, retrieve.ErrBadK
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, nil
	}
	op := fmt.Sprintf("search index %q", r.index)
	var body []byte
	var err error
	if r.opts.Embedder != nil {
		body, err = r.knnBody(ctx, q)
	} else {
		body, err = r.lexicalBody(q)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	partial := false
	req := esapi.SearchRequest{
		Index:                     []string{r.index},
		Body:                      bytes.NewReader(body),
		Preference:                preference,
		AllowPartialSearchResults: &partial,
	}
	if r.dfs && r.opts.Embedder == nil {
		req.SearchType = "dfs_query_then_fetch"
	}
	_, answer, err := r.c.call(ctx, op, req)
	if err != nil {
		return nil, err
	}
	return readHits(op, answer, q.K)
}

// searchBody is the _search request distill sends.
type searchBody struct {
	Size           int      `json:"size"`
	Query          any      `json:"query,omitempty"`
	KNN            any      `json:"knn,omitempty"`
	Sort           []any    `json:"sort,omitempty"`
	TrackScores    bool     `json:"track_scores,omitempty"`
	TrackTotalHits bool     `json:"track_total_hits"`
	Source         []string `json:"_source"`
}

func sourceFields(q retrieve.Query) []string {
	if q.TitlesOnly {
		return []string{fieldID, fieldTitle}
	}
	return []string{fieldID, fieldTitle, fieldText, fieldSentences}
}

// exclusion is the must_not clause that keeps q.Exclude out, or nil.
func exclusion(q retrieve.Query) []any {
	if len(q.Exclude) == 0 {
		return nil
	}
	return []any{map[string]any{"terms": map[string]any{fieldID: slices.Clone(q.Exclude)}}}
}

// lexicalBody is a BM25 match on the "all" field (title + " " + text):
//
//	{"size": K, "query": {"bool": {"must": [{"match": {"all": {"query": TEXT}}}],
//	  "must_not": [{"terms": {"id": [EXCLUDED...]}}]}}, "_source": [...]}
func (r *Retriever) lexicalBody(q retrieve.Query) ([]byte, error) {
	b := map[string]any{
		"must": []any{map[string]any{"match": map[string]any{fieldAll: map[string]any{"query": q.Text}}}},
	}
	if ex := exclusion(q); ex != nil {
		b["must_not"] = ex
	}
	body := searchBody{Size: q.K, Query: map[string]any{"bool": b}, Source: sourceFields(q)}
	if r.opts.SortByID {
		body.Sort = []any{
			map[string]any{"_score": map[string]any{"order": "desc"}},
			map[string]any{fieldID: map[string]any{"order": "asc"}},
		}
		body.TrackScores = true
	}
	return json.Marshal(body)
}

// knnBody embeds the query and asks for its nearest vectors, with the
// excluded ids filtered out during the graph search.
func (r *Retriever) knnBody(ctx context.Context, q retrieve.Query) ([]byte, error) {
	vecs, _, err := r.opts.Embedder.Embed(ctx, []string{r.opts.QueryPrefix + q.Text})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("embed query: got %d vectors for 1 text", len(vecs))
	}
	if len(vecs[0]) != r.dims {
		return nil, fmt.Errorf("embed query: vector of %d dimensions, the index has %d", len(vecs[0]), r.dims)
	}
	v, ok := unit(vecs[0])
	if !ok {
		return nil, errors.New("embed query: the vector is zero or not finite")
	}
	var filter any
	if ex := exclusion(q); ex != nil {
		filter = map[string]any{"bool": map[string]any{"must_not": ex}}
	}
	body := searchBody{Size: q.K, Source: sourceFields(q)}
	switch {
	case r.opts.Exact:
		inner := any(map[string]any{"match_all": map[string]any{}})
		if filter != nil {
			inner = filter
		}
		script := map[string]any{"source": "dotProduct(params.query_vector, '" + fieldVector + "') + 1.0", "params": map[string]any{"query_vector": v}}
		if r.flavor == OpenSearch {
			script = map[string]any{"lang": "knn", "source": "knn_score", "params": map[string]any{
				"field": fieldVector, "query_value": v, "space_type": "innerproduct",
			}}
		}
		body.Query = map[string]any{"script_score": map[string]any{"query": inner, "script": script}}
	case r.flavor == OpenSearch:
		knn := map[string]any{"vector": v, "k": q.K}
		if filter != nil {
			knn["filter"] = filter
		}
		body.Query = map[string]any{"knn": map[string]any{fieldVector: knn}}
	default:
		nc := r.opts.NumCandidates
		if nc == 0 {
			nc = max(100, 10*q.K)
		}
		nc = max(min(nc, 10000), q.K)
		knn := map[string]any{"field": fieldVector, "query_vector": v, "k": q.K, "num_candidates": nc}
		if filter != nil {
			knn["filter"] = filter
		}
		body.KNN = knn
	}
	return json.Marshal(body)
}

// searchAnswer is the part of a _search answer Search reads.
type searchAnswer struct {
	TimedOut bool `json:"timed_out"`
	Shards   struct {
		Failed int `json:"failed"`
	} `json:"_shards"`
	Hits *struct {
		Hits []struct {
			ID     string   `json:"_id"`
			Score  *float64 `json:"_score"`
			Source *doc     `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
}

func readHits(op string, body []byte, k int) ([]retrieve.Hit, error) {
	var a searchAnswer
	if err := decode(op, body, &a); err != nil {
		return nil, err
	}
	switch {
	case a.Hits == nil:
		return nil, httperr.Malformed(op, errors.New("no hits"), body)
	case a.TimedOut:
		return nil, fmt.Errorf("%s: the search timed out on the cluster", op)
	case a.Shards.Failed > 0:
		return nil, fmt.Errorf("%s: %d shards failed", op, a.Shards.Failed)
	}
	hits := a.Hits.Hits[:min(len(a.Hits.Hits), k)]
	out := make([]retrieve.Hit, 0, len(hits))
	for i, h := range hits {
		if h.Score == nil {
			return nil, httperr.Malformed(op, fmt.Errorf("hit %d (%q) has no score", i+1, h.ID), nil)
		}
		if h.Source == nil {
			return nil, httperr.Malformed(op, fmt.Errorf("hit %d (%q) has no source", i+1, h.ID), nil)
		}
		p := data.Passage{ID: h.Source.ID, Title: h.Source.Title, Text: h.Source.Text, Sentences: h.Source.Sentences}
		if p.ID == "" {
			p.ID = h.ID
		}
		if len(p.Sentences) == 0 {
			p.Sentences = nil
		}
		out = append(out, retrieve.Hit{Passage: p, Score: *h.Score})
	}
	return out, nil
}
