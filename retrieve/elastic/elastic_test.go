package elastic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/retrieve/elastic"
	"github.com/distill-rag/distill/retrieve/elastic/elastictest"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

func newCluster(t *testing.T, opts elastictest.Options) *elastictest.Server {
	t.Helper()
	s := elastictest.NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

// testConfig points at s, with waits short enough for tests.
func testConfig(s *elastictest.Server, index string) elastic.Config {
	return elastic.Config{URLs: []string{s.URL()}, Index: index, Backoff: time.Millisecond, Timeout: 20 * time.Second}
}

func load(t *testing.T, cfg elastic.Config, ps []data.Passage, opts elastic.LoadOptions) elastic.Stats {
	t.Helper()
	st, err := elastic.Load(context.Background(), cfg, data.NewPassageSlice(ps), opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return st
}

func open(t *testing.T, cfg elastic.Config, opts elastic.OpenOptions) *elastic.Retriever {
	t.Helper()
	r, err := elastic.Open(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name   string
		flavor string
		open   elastic.OpenOptions
	}{
		{"elasticsearch", elastictest.Elasticsearch, elastic.OpenOptions{}},
		{"opensearch", elastictest.OpenSearch, elastic.OpenOptions{}},
		{"sort-by-id", elastictest.Elasticsearch, elastic.OpenOptions{SortByID: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conformance(t, func(t *testing.T) elastic.Config {
				return testConfig(newCluster(t, elastictest.Options{Flavor: tt.flavor}), "conformance")
			}, tt.open)
		})
	}
}

// conformance runs the retrievers' conformance suite over an index that
// Load makes where newConfig says (a loopback server, a real node).
func conformance(t *testing.T, newConfig func(*testing.T) elastic.Config, opts elastic.OpenOptions) {
	retrievetest.Run(t, func(t *testing.T, corpus []data.Passage) retrieve.Retriever {
		cfg := newConfig(t)
		st := load(t, cfg, corpus, elastic.LoadOptions{BatchSize: 7, Workers: 3})
		if st.Docs != int64(len(corpus)) || st.Loaded != int64(len(corpus)) {
			t.Fatalf("loaded %d, index holds %d, want %d", st.Loaded, st.Docs, len(corpus))
		}
		return open(t, cfg, opts)
	})
}

// TestScoresMatchInProcessBM25 checks that the index scores title + " " +
// text as one field with the method's k1 and b: the loopback node scores
// as Lucene does (without the constant factor k1+1 that distill's own
// index keeps), so the rankings agree and the scores differ by k1+1.
func TestScoresMatchInProcessBM25(t *testing.T) {
	corpus := retrievetest.Corpus()
	ref := bm25test.Index(t, corpus, bm25.BuildOptions{})

	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	// One worker loads in corpus order, so that ties fall as in bm25.
	load(t, cfg, corpus, elastic.LoadOptions{Workers: 1, BatchSize: 5})
	r := open(t, cfg, elastic.OpenOptions{})
	ctx := context.Background()
	for _, text := range []string{"crimson lighthouse Quessa", "keeper's journal about storms", "Orvel 7", "marker zq12xv harbour", "The Lighthouses of Varnholt were built"} {
		q := retrieve.Query{Text: text, K: 10}
		want := retrievetest.Search(ctx, t, ref, q)
		got := retrievetest.Search(ctx, t, r, q)
		if len(got) != len(want) {
			t.Fatalf("%q: got %d hits, want %d", text, len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID {
				t.Errorf("%q hit %d: got %s, want %s", text, i, got[i].Title, want[i].Title)
			}
			ratio := want[i].Score / got[i].Score
			if math.Abs(ratio-(elastic.DefaultK1+1)) > 1e-4 {
				t.Errorf("%q hit %d: bm25 score %v / cluster score %v = %v, want k1+1 = %v", text, i, want[i].Score, got[i].Score, ratio, elastic.DefaultK1+1)
			}
		}
	}
}

// lastSearch returns the decoded body of the last search the server saw.
func lastSearch(t *testing.T, s *elastictest.Server) (map[string]any, elastictest.Request) {
	t.Helper()
	reqs := s.Endpoint(elastictest.EndpointSearch)
	if len(reqs) == 0 {
		t.Fatal("no search request recorded")
	}
	r := reqs[len(reqs)-1]
	var body map[string]any
	if err := r.JSON(&body); err != nil {
		t.Fatalf("search body: %v", err)
	}
	return body, r
}

func TestExclusionIsInTheQuery(t *testing.T) {
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	load(t, cfg, corpus, elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{})

	exclude := []string{corpus[1].ID, corpus[6].ID, "unknown"}
	hits := retrievetest.Search(context.Background(), t, r, retrieve.Query{Text: "crimson lighthouse Quessa", K: 4, Exclude: exclude})
	if len(hits) != 4 {
		t.Fatalf("got %d hits, want 4", len(hits))
	}
	body, req := lastSearch(t, s)
	want := map[string]any{
		"size": 4.0,
		"query": map[string]any{"bool": map[string]any{
			"must":     []any{map[string]any{"match": map[string]any{"all": map[string]any{"query": "crimson lighthouse Quessa"}}}},
			"must_not": []any{map[string]any{"terms": map[string]any{"id": []any{corpus[1].ID, corpus[6].ID, "unknown"}}}},
		}},
		"track_total_hits": false,
		"_source":          []any{"id", "title", "text", "sentences"},
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("search body (-want +got):\n%s", diff)
	}
	for k, v := range map[string]string{"preference": "distill", "allow_partial_search_results": "false", "search_type": ""} {
		if got := req.Query.Get(k); got != v {
			t.Errorf("parameter %s = %q, want %q", k, got, v)
		}
	}
	for _, h := range hits {
		if h.ID == corpus[1].ID || h.ID == corpus[6].ID {
			t.Errorf("excluded doc %s returned", h.ID)
		}
	}
}

func TestTitlesOnly(t *testing.T) {
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	cfg.HTTPClient = s.Client()
	load(t, cfg, corpus, elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{})
	hits := retrievetest.Search(context.Background(), t, r, retrieve.Query{Text: "journal keeper", K: 3, TitlesOnly: true})
	if len(hits) != 3 {
		t.Fatalf("got %d hits, want 3", len(hits))
	}
	for _, h := range hits {
		if h.ID == "" || h.Title == "" || h.Text != "" || h.Sentences != nil {
			t.Errorf("hit %+v: want id and title only", h.Passage)
		}
	}
	body, _ := lastSearch(t, s)
	if diff := cmp.Diff([]any{"id", "title"}, body["_source"]); diff != "" {
		t.Errorf("_source (-want +got):\n%s", diff)
	}
}

func TestSortByIDAsksForIt(t *testing.T) {
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	load(t, cfg, retrievetest.Corpus(), elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{SortByID: true})
	if _, err := r.Search(context.Background(), retrieve.Query{Text: "lighthouse", K: 5}); err != nil {
		t.Fatal(err)
	}
	body, _ := lastSearch(t, s)
	want := []any{
		map[string]any{"_score": map[string]any{"order": "desc"}},
		map[string]any{"id": map[string]any{"order": "asc"}},
	}
	if diff := cmp.Diff(want, body["sort"]); diff != "" {
		t.Errorf("sort (-want +got):\n%s", diff)
	}
	if body["track_scores"] != true {
		t.Errorf("track_scores = %v, want true", body["track_scores"])
	}
}

func TestManyShardsUseGlobalStatistics(t *testing.T) {
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	load(t, cfg, retrievetest.Corpus(), elastic.LoadOptions{Shards: 3})
	r := open(t, cfg, elastic.OpenOptions{})
	if _, err := r.Search(context.Background(), retrieve.Query{Text: "lighthouse", K: 5}); err != nil {
		t.Fatal(err)
	}
	_, req := lastSearch(t, s)
	if got := req.Query.Get("search_type"); got != "dfs_query_then_fetch" {
		t.Errorf("search_type = %q, want dfs_query_then_fetch", got)
	}
}

func TestEmptyQuerySendsNothing(t *testing.T) {
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	load(t, cfg, retrievetest.Corpus(), elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{})
	hits, err := r.Search(context.Background(), retrieve.Query{Text: "  \t", K: 5})
	if err != nil || len(hits) != 0 {
		t.Fatalf("got %d hits, %v; want none", len(hits), err)
	}
	if n := len(s.Endpoint(elastictest.EndpointSearch)); n != 0 {
		t.Errorf("%d search requests sent for an empty query, want 0", n)
	}
}

func TestLoad(t *testing.T) {
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	var progress []elastic.Stats
	st := load(t, cfg, corpus, elastic.LoadOptions{BatchSize: 6, Progress: func(st elastic.Stats) { progress = append(progress, st) }})
	want := elastic.Stats{Passages: 40, Loaded: 40, Requests: 7, Docs: 40, Flavor: elastic.Elasticsearch, Version: "8.19.7"}
	if diff := cmp.Diff(want, st, cmpStats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if len(progress) != 7 || progress[6].Passages != 40 {
		t.Fatalf("progress calls: %+v, want 7 ending at 40 passages", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i].Passages <= progress[i-1].Passages {
			t.Errorf("progress went from %d to %d passages", progress[i-1].Passages, progress[i].Passages)
		}
	}
	// Every passage is stored whole.
	for _, p := range corpus {
		raw, ok := s.Doc("wiki", p.ID)
		if !ok {
			t.Fatalf("doc %s not stored", p.ID)
		}
		var got data.Passage
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("stored doc (-want +got):\n%s", diff)
		}
	}
	// Refreshed at the end, back to the default refresh interval.
	info, _ := s.Index("wiki")
	if info.Visible != 40 {
		t.Errorf("%d docs visible after Load, want 40", info.Visible)
	}
	if v, ok := info.Settings["index.refresh_interval"]; ok {
		t.Errorf("refresh_interval left at %v, want the default", v)
	}
	for k, v := range map[string]any{
		"index.similarity.distill_bm25.k1":   "0.9",
		"index.similarity.distill_bm25.b":    "0.4",
		"index.similarity.distill_bm25.type": "BM25",
		"index.number_of_shards":             "1",
	} {
		if info.Settings[k] != v {
			t.Errorf("setting %s = %v, want %v", k, info.Settings[k], v)
		}
	}
	if len(s.Endpoint(elastictest.EndpointRefresh)) != 1 {
		t.Errorf("got %d refresh requests, want 1", len(s.Endpoint(elastictest.EndpointRefresh)))
	}
	for _, r := range s.Endpoint(elastictest.EndpointBulk) {
		if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("bulk Content-Type %q, want application/x-ndjson", ct)
		}
	}
}

var cmpStats = cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Elapsed" }, cmp.Ignore())

func TestLoadPartialFailures(t *testing.T) {
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{
		// 3 and 10 are rejected a while, 20 for good; 5 and 30 are refused.
		RejectItems: map[string]int{corpus[3].ID: 2, corpus[10].ID: 1, corpus[20].ID: 100},
		BadItems:    []string{corpus[30].ID, corpus[5].ID},
	})
	cfg := testConfig(s, "wiki")
	st, err := elastic.Load(context.Background(), cfg, data.NewPassageSlice(corpus), elastic.LoadOptions{BatchSize: 8, Retries: 3})
	var be *elastic.BulkError
	if !errors.As(err, &be) {
		t.Fatalf("got error %v, want a *BulkError", err)
	}
	want := []elastic.ItemError{
		{ID: corpus[5].ID, Passage: 6, Status: 400, Type: "mapper_parsing_exception", Reason: "failed to parse (injected by elastictest)"},
		{ID: corpus[20].ID, Passage: 21, Status: 429, Type: "es_rejected_execution_exception"},
		{ID: corpus[30].ID, Passage: 31, Status: 400, Type: "mapper_parsing_exception", Reason: "failed to parse (injected by elastictest)"},
	}
	if diff := cmp.Diff(want, be.Items, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".Reason" && strings.Contains(fmt.Sprint(p.Last().Values()), "rejected")
	}, cmp.Ignore())); diff != "" {
		t.Errorf("failed items (-want +got):\n%s", diff)
	}
	if !strings.Contains(be.Items[1].Reason, "still failing after 4 tries") {
		t.Errorf("reason %q does not say how often it was tried", be.Items[1].Reason)
	}
	for _, id := range []string{corpus[5].ID, corpus[20].ID, corpus[30].ID} {
		if !strings.Contains(err.Error(), id) {
			t.Errorf("error %q does not name %s", err, id)
		}
	}
	wantStats := elastic.Stats{Passages: 40, Loaded: 37, Failed: 3, Retried: 2 + 1 + 3, Requests: 3 + 2 + 4 + 1 + 1, Docs: 37, Flavor: elastic.Elasticsearch, Version: "8.19.7"}
	if diff := cmp.Diff(wantStats, st, cmpStats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	for i, p := range corpus {
		_, stored := s.Doc("wiki", p.ID)
		if want := i != 5 && i != 20 && i != 30; stored != want {
			t.Errorf("passage %d stored = %v, want %v", i, stored, want)
		}
	}
	// The rest is searchable.
	r := open(t, cfg, elastic.OpenOptions{})
	hits, err := r.Search(context.Background(), retrieve.Query{Text: "zq10xv", K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != corpus[10].ID {
		t.Errorf("search for a retried passage: %v, %v", hits, err)
	}
}

func TestLoadRefusesBadPassages(t *testing.T) {
	corpus := retrievetest.Corpus()[:5]
	corpus[1].ID = ""
	corpus[3].ID = strings.Repeat("x", 600)
	corpus = append(corpus, retrievetest.Corpus()[0]) // a repeated id
	s := newCluster(t, elastictest.Options{})
	st, err := elastic.Load(context.Background(), testConfig(s, "wiki"), data.NewPassageSlice(corpus), elastic.LoadOptions{})
	var be *elastic.BulkError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BulkError", err)
	}
	if len(be.Items) != 2 || be.Items[0].Passage != 2 || be.Items[1].Passage != 4 || be.Items[0].Status != 0 {
		t.Errorf("failed items %+v, want passages 2 and 4 refused before sending", be.Items)
	}
	if !strings.Contains(err.Error(), "repeat the id of an earlier one") {
		t.Errorf("error %q does not report the repeated id", err)
	}
	if st.Loaded != 4 || st.Docs != 3 {
		t.Errorf("loaded %d, index holds %d; want 4 and 3", st.Loaded, st.Docs)
	}
}

func TestLoadExisting(t *testing.T) {
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	load(t, cfg, corpus, elastic.LoadOptions{})
	_, err := elastic.Load(context.Background(), cfg, data.NewPassageSlice(corpus[:3]), elastic.LoadOptions{})
	if !errors.Is(err, elastic.ErrExists) {
		t.Fatalf("got %v, want ErrExists", err)
	}
	st := load(t, cfg, corpus[:3], elastic.LoadOptions{Recreate: true})
	if st.Docs != 3 {
		t.Errorf("recreated index holds %d docs, want 3", st.Docs)
	}
}

// TestLoadResumes interrupts a load, then runs it again: the index ends
// with every passage once, and Open refuses it until then.
func TestLoadResumes(t *testing.T) {
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	ctx := context.Background()
	broken := errors.New("disk on fire")
	_, err := elastic.Load(ctx, cfg, retrievetest.FailAfter(corpus[:25], broken), elastic.LoadOptions{BatchSize: 10})
	if !errors.Is(err, broken) {
		t.Fatalf("interrupted load: got %v, want %v", err, broken)
	}
	if _, err := elastic.Open(ctx, cfg, elastic.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("Open of an interrupted load: got %v, want a refusal", err)
	}
	if _, err := elastic.Load(ctx, cfg, data.NewPassageSlice(corpus), elastic.LoadOptions{BatchSize: 10, K1: 1.2}); !errors.Is(err, elastic.ErrExists) {
		t.Errorf("resume with other settings: got %v, want ErrExists", err)
	}
	st := load(t, cfg, corpus, elastic.LoadOptions{BatchSize: 10})
	if st.Docs != int64(len(corpus)) || st.Loaded != int64(len(corpus)) {
		t.Errorf("resumed load: loaded %d, index holds %d, want %d", st.Loaded, st.Docs, len(corpus))
	}
	open(t, cfg, elastic.OpenOptions{})
	if _, err := elastic.Load(ctx, cfg, data.NewPassageSlice(corpus), elastic.LoadOptions{BatchSize: 10}); !errors.Is(err, elastic.ErrExists) {
		t.Errorf("load over a complete index: got %v, want ErrExists", err)
	}
}

// markerEmbedder embeds a text as a one-hot vector on the number of its
// marker word "zqNxv", plus a little of the last dimension (never zero,
// never unit length, so that the loader must scale it).
type markerEmbedder struct {
	dims int
	mu   sync.Mutex
	seen []string
}

var markerRE = regexp.MustCompile(`zq(\d+)xv`)

func (e *markerEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, llm.Usage, error) {
	e.mu.Lock()
	e.seen = append(e.seen, inputs...)
	e.mu.Unlock()
	out := make([][]float32, len(inputs))
	for i, in := range inputs {
		v := make([]float32, e.dims)
		v[e.dims-1] = 0.5
		for _, m := range markerRE.FindAllStringSubmatch(in, -1) {
			n, _ := strconv.Atoi(m[1])
			v[n%(e.dims-1)] += 3
		}
		out[i] = v
	}
	return out, llm.Usage{PromptTokens: len(inputs)}, nil
}

func (e *markerEmbedder) inputs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

func TestKNN(t *testing.T) {
	corpus := retrievetest.Corpus()
	for _, flavor := range []string{elastictest.Elasticsearch, elastictest.OpenSearch} {
		t.Run(flavor, func(t *testing.T) {
			s := newCluster(t, elastictest.Options{Flavor: flavor})
			cfg := testConfig(s, "dense")
			emb := &markerEmbedder{dims: 48}
			st := load(t, cfg, corpus, elastic.LoadOptions{BatchSize: 16, Vectors: &elastic.Vectors{Embed: elastic.EmbedPassages(emb, "passage: ")}})
			if st.Dims != 48 {
				t.Errorf("learnt %d dims, want 48", st.Dims)
			}
			for _, in := range emb.inputs() {
				if !strings.HasPrefix(in, "passage: Orvel ") {
					t.Fatalf("passage embedded as %q, want prefix and title first", in)
				}
			}
			r := open(t, cfg, elastic.OpenOptions{Embedder: emb, QueryPrefix: "query: "})
			ctx := context.Background()
			hits := retrievetest.Search(ctx, t, r, retrieve.Query{Text: "which passage has zq7xv", K: 3})
			if len(hits) != 3 || hits[0].ID != corpus[7].ID {
				t.Fatalf("got %v, want 3 hits, %s first", hits, corpus[7].ID)
			}
			if diff := cmp.Diff(corpus[7], hits[0].Passage); diff != "" {
				t.Errorf("hit is not the whole passage (-want +got):\n%s", diff)
			}
			if in := emb.inputs(); in[len(in)-1] != "query: which passage has zq7xv" {
				t.Errorf("query embedded as %q", in[len(in)-1])
			}

			hits = retrievetest.Search(ctx, t, r, retrieve.Query{Text: "zq7xv", K: 2, Exclude: []string{corpus[7].ID}, TitlesOnly: true})
			if len(hits) != 2 || hits[0].ID == corpus[7].ID || hits[1].ID == corpus[7].ID {
				t.Errorf("excluded search: got %v", hits)
			}
			body, _ := lastSearch(t, s)
			filter := map[string]any{"bool": map[string]any{"must_not": []any{map[string]any{"terms": map[string]any{"id": []any{corpus[7].ID}}}}}}
			var knn map[string]any
			if flavor == elastictest.OpenSearch {
				knn = body["query"].(map[string]any)["knn"].(map[string]any)["vector"].(map[string]any)
				if knn["k"] != 2.0 {
					t.Errorf("knn k = %v, want 2", knn["k"])
				}
			} else {
				knn = body["knn"].(map[string]any)
				for k, v := range map[string]any{"field": "vector", "k": 2.0, "num_candidates": 100.0} {
					if knn[k] != v {
						t.Errorf("knn %s = %v, want %v", k, knn[k], v)
					}
				}
			}
			if diff := cmp.Diff(filter, knn["filter"]); diff != "" {
				t.Errorf("knn filter (-want +got):\n%s", diff)
			}

			// The exact search (script_score) ranks as the server's kNN,
			// which is exact too.
			exact := open(t, cfg, elastic.OpenOptions{Embedder: emb, QueryPrefix: "query: ", Exact: true})
			q := retrieve.Query{Text: "zq7xv zq9xv", K: 5, Exclude: []string{corpus[9].ID}}
			want := retrievetest.Search(ctx, t, r, q)
			got := retrievetest.Search(ctx, t, exact, q)
			if diff := cmp.Diff(retrievetest.HitIDs(want), retrievetest.HitIDs(got)); diff != "" {
				t.Errorf("exact hits (-kNN +exact):\n%s", diff)
			}
			if body, _ := lastSearch(t, s); body["query"].(map[string]any)["script_score"] == nil {
				t.Errorf("exact search sent %v, want a script_score query", body)
			}
		})
	}
}

// TestKNNByAddress: an index loaded with its Embedding recorded is
// searched by kNN, or exactly, when the address says ?search=, with the
// embedder EmbedderFor returns for the recorded model; an index loaded
// without one is refused with the way out.
func TestKNNByAddress(t *testing.T) {
	ctx := context.Background()
	corpus := retrievetest.Corpus()
	s := newCluster(t, elastictest.Options{Flavor: elastictest.OpenSearch})
	emb := &markerEmbedder{dims: 48}
	recorded := elastic.Embedding{Model: "e5-small", BaseURL: "http://127.0.0.1:1/v1", QueryPrefix: "query: "}
	cfg := testConfig(s, "dense")
	load(t, cfg, corpus, elastic.LoadOptions{BatchSize: 16, Vectors: &elastic.Vectors{Embed: elastic.EmbedPassages(emb, "passage: "), Embedding: &recorded}})
	plain := testConfig(s, "plain")
	load(t, plain, corpus, elastic.LoadOptions{BatchSize: 16})

	var asked []elastic.Embedding
	opts := elastic.OpenOptions{EmbedderFor: func(_ context.Context, e elastic.Embedding) (elastic.Embedder, error) {
		asked = append(asked, e)
		return emb, nil
	}}
	q := retrieve.Query{Text: "zq7xv zq9xv", K: 5}
	var first []string
	for _, search := range []elastic.Search{elastic.SearchKNN, elastic.SearchExact} {
		c := cfg
		c.Search = search
		r := open(t, c, opts)
		hits := retrievetest.Search(ctx, t, r, q)
		if len(hits) != 5 || (hits[0].ID != corpus[7].ID && hits[0].ID != corpus[9].ID) {
			t.Errorf("%s: got %v, want a marked passage first", search, retrievetest.HitIDs(hits))
		}
		if in := emb.inputs(); in[len(in)-1] != "query: zq7xv zq9xv" {
			t.Errorf("%s: query embedded as %q, want the recorded prefix", search, in[len(in)-1])
		}
		body, _ := lastSearch(t, s)
		_, scripted := body["query"].(map[string]any)["script_score"]
		if scripted != (search == elastic.SearchExact) {
			t.Errorf("%s: sent %v", search, body)
		}
		if first == nil {
			first = retrievetest.HitIDs(hits)
		} else if diff := cmp.Diff(first, retrievetest.HitIDs(hits)); diff != "" {
			t.Errorf("exact against kNN (-knn +exact):\n%s", diff)
		}
	}
	if diff := cmp.Diff([]elastic.Embedding{recorded, recorded}, asked); diff != "" {
		t.Errorf("embedders asked for (-want +got):\n%s", diff)
	}

	// BM25 by default: no embedder asked for.
	asked = nil
	open(t, cfg, opts)
	if len(asked) != 0 {
		t.Errorf("a BM25 open asked for embedders %v", asked)
	}
	plain.Search = elastic.SearchKNN
	if _, err := elastic.Open(ctx, plain, opts); err == nil || !strings.Contains(err.Error(), "--embed-model") {
		t.Errorf("kNN over an index without a recorded model: %v, want the way out", err)
	}
	c := cfg
	c.Search = elastic.SearchKNN
	if _, err := elastic.Open(ctx, c, elastic.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "e5-small") {
		t.Errorf("kNN without EmbedderFor: %v, want an error naming the model", err)
	}
}

func TestFlavourMapping(t *testing.T) {
	corpus := retrievetest.Corpus()[:4]
	emb := &markerEmbedder{dims: 8}
	vectors := &elastic.Vectors{Dims: 8, Embed: elastic.EmbedPassages(emb, "")}
	type field = map[string]any
	for _, tt := range []struct {
		flavor string
		vector field
		knn    any
	}{
		{elastictest.Elasticsearch, field{"type": "dense_vector", "dims": 8.0, "index": true, "similarity": "dot_product"}, nil},
		{elastictest.OpenSearch, field{"type": "knn_vector", "dimension": 8.0, "method": field{"name": "hnsw", "space_type": "innerproduct", "engine": "faiss"}}, "true"},
	} {
		t.Run(tt.flavor, func(t *testing.T) {
			s := newCluster(t, elastictest.Options{Flavor: tt.flavor})
			st := load(t, testConfig(s, "wiki"), corpus, elastic.LoadOptions{Vectors: vectors})
			if string(st.Flavor) != tt.flavor {
				t.Errorf("detected flavor %q, want %q", st.Flavor, tt.flavor)
			}
			info, _ := s.Index("wiki")
			var m struct {
				Properties map[string]field `json:"properties"`
			}
			if err := json.Unmarshal(info.Mappings, &m); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.vector, m.Properties["vector"]); diff != "" {
				t.Errorf("vector mapping (-want +got):\n%s", diff)
			}
			if got := info.Settings["index.knn"]; got != tt.knn {
				t.Errorf("index.knn = %v, want %v", got, tt.knn)
			}
		})
	}
}

// TestOpenSearchIgnoresElasticHeaders: the Elasticsearch client's product
// check and compatibility media type would make every OpenSearch call
// fail; the retriever sends neither and needs no X-Elastic-Product.
func TestOpenSearchIgnoresElasticHeaders(t *testing.T) {
	t.Setenv("ELASTIC_CLIENT_APIVERSIONING", "true")
	s := newCluster(t, elastictest.Options{Flavor: elastictest.OpenSearch})
	cfg := testConfig(s, "wiki")
	load(t, cfg, retrievetest.Corpus(), elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{})
	if _, err := r.Search(context.Background(), retrieve.Query{Text: "lighthouse", K: 2}); err != nil {
		t.Fatal(err)
	}
	for _, req := range s.Requests() {
		if req.Status >= 400 && req.Endpoint != elastictest.EndpointExists {
			t.Errorf("%s %s answered %d", req.Method, req.Path, req.Status)
		}
		for _, h := range []string{"Accept", "Content-Type"} {
			if strings.Contains(req.Header.Get(h), "vnd.elasticsearch") {
				t.Errorf("%s %s sent %s: %s", req.Method, req.Path, h, req.Header.Get(h))
			}
		}
	}
}

func TestFlavorMismatch(t *testing.T) {
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	cfg.Flavor = elastic.OpenSearch
	_, err := elastic.Load(context.Background(), cfg, data.NewPassageSlice(retrievetest.Corpus()), elastic.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "not opensearch") {
		t.Errorf("got %v, want an error about the flavour", err)
	}
}

func TestCredentialsFromEnvironment(t *testing.T) {
	corpus := retrievetest.Corpus()[:3]
	for _, tt := range []struct {
		name string
		env  map[string]string
		opts elastictest.Options
		auth string
	}{
		{"api-key", map[string]string{elastic.EnvAPIKey: "a2V5LWlkOnNlY3JldA=="}, elastictest.Options{APIKey: "a2V5LWlkOnNlY3JldA=="}, "APIKey a2V5LWlkOnNlY3JldA=="},
		{"basic", map[string]string{elastic.EnvUsername: "elastic", elastic.EnvPassword: "s3cret!"}, elastictest.Options{Username: "elastic", Password: "s3cret!"}, "Basic ZWxhc3RpYzpzM2NyZXQh"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{elastic.EnvAPIKey, elastic.EnvUsername, elastic.EnvPassword} {
				t.Setenv(k, tt.env[k])
			}
			s := newCluster(t, tt.opts)
			cfg := testConfig(s, "wiki")
			load(t, cfg, corpus, elastic.LoadOptions{})
			r := open(t, cfg, elastic.OpenOptions{})
			if _, err := r.Search(context.Background(), retrieve.Query{Text: "lighthouse", K: 1}); err != nil {
				t.Fatal(err)
			}
			for _, req := range s.Requests() {
				if got := req.Header.Get("Authorization"); got != tt.auth {
					t.Fatalf("%s %s: Authorization %q, want %q", req.Method, req.Path, got, tt.auth)
				}
			}
		})
	}
}

func TestBadCredentials(t *testing.T) {
	const secret = "d3Jvbmc6a2V5"
	t.Setenv(elastic.EnvAPIKey, secret)
	t.Setenv(elastic.EnvUsername, "")
	t.Setenv(elastic.EnvPassword, "")
	s := newCluster(t, elastictest.Options{APIKey: "cmlnaHQ6a2V5"})
	cfg := testConfig(s, "wiki")
	_, err := elastic.Load(context.Background(), cfg, data.NewPassageSlice(retrievetest.Corpus()), elastic.LoadOptions{})
	var e *elastic.Error
	if !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("got %v, want a 401 *Error", err)
	}
	if !strings.Contains(err.Error(), elastic.EnvAPIKey) || strings.Contains(err.Error(), secret) {
		t.Errorf("error %q should name %s and not the key", err, elastic.EnvAPIKey)
	}
	cfg.APIKey = secret
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), cfg.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("config prints its key: %s", s)
		}
	}
	cfg.Username = "elastic"
	if _, err := elastic.Open(context.Background(), cfg, elastic.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "use one") {
		t.Errorf("key and user name together: got %v, want an error", err)
	}
}

func TestOpenErrors(t *testing.T) {
	s := newCluster(t, elastictest.Options{})
	ctx := context.Background()
	_, err := elastic.Open(ctx, testConfig(s, "missing"), elastic.OpenOptions{})
	if !errors.Is(err, elastic.ErrNotFound) {
		t.Errorf("missing index: got %v, want ErrNotFound", err)
	}

	// An index made by someone else.
	body := `{"mappings": {"properties": {"body": {"type": "text"}}}}`
	createRaw(t, s, "foreign", body)
	if _, err := elastic.Open(ctx, testConfig(s, "foreign"), elastic.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "not made by distill") {
		t.Errorf("foreign index: got %v", err)
	}

	// kNN over an index without vectors.
	cfg := testConfig(s, "lexical")
	load(t, cfg, retrievetest.Corpus()[:3], elastic.LoadOptions{})
	if _, err := elastic.Open(ctx, cfg, elastic.OpenOptions{Embedder: &markerEmbedder{dims: 4}}); err == nil || !strings.Contains(err.Error(), "no vectors") {
		t.Errorf("kNN without vectors: got %v", err)
	}

	// Nobody listening.
	dead := elastictest.NewServer(elastictest.Options{})
	dead.Close()
	cfg = testConfig(dead, "wiki")
	if _, err := elastic.Open(ctx, cfg, elastic.OpenOptions{}); err == nil {
		t.Error("closed server: got no error")
	}
}

// createRaw creates an index with a body of the test's choosing.
func createRaw(t *testing.T, s *elastictest.Server, name, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, s.URL()+"/"+name, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("create %s: status %d", name, res.StatusCode)
	}
}

func TestSearchFaults(t *testing.T) {
	corpus := retrievetest.Corpus()
	ctx := context.Background()
	q := retrieve.Query{Text: "lighthouse", K: 3}
	// newFaulty loads a server whose searches meet faults, one per search
	// and the last one for the rest; seen, when set, sees each search.
	newFaulty := func(t *testing.T, timeout time.Duration, seen func(), faults ...elastictest.Fault) (*elastictest.Server, *elastic.Retriever) {
		n := 0
		s := newCluster(t, elastictest.Options{Fault: func(r elastictest.Request) elastictest.Fault {
			if r.Endpoint != elastictest.EndpointSearch {
				return elastictest.None
			}
			if seen != nil {
				seen()
			}
			n++ // called under the server's lock
			return faults[min(n, len(faults))-1]
		}})
		cfg := testConfig(s, "wiki")
		cfg.Timeout = timeout
		load(t, cfg, corpus, elastic.LoadOptions{})
		return s, open(t, cfg, elastic.OpenOptions{})
	}

	t.Run("unavailable-then-ok", func(t *testing.T) {
		s, r := newFaulty(t, 10*time.Second, nil, elastictest.Unavailable, elastictest.TooManyRequests, elastictest.None)
		hits, err := r.Search(ctx, q)
		if err != nil || len(hits) != 3 {
			t.Fatalf("got %d hits, %v; want 3 after retries", len(hits), err)
		}
		if n := len(s.Endpoint(elastictest.EndpointSearch)); n != 3 {
			t.Errorf("%d search requests, want 3", n)
		}
	})
	t.Run("server-error", func(t *testing.T) {
		_, r := newFaulty(t, 10*time.Second, nil, elastictest.ServerError)
		_, err := r.Search(ctx, q)
		var e *elastic.Error
		if !errors.As(err, &e) || e.StatusCode != 500 || e.Type != "exception" {
			t.Errorf("got %v, want a 500 *Error", err)
		}
	})
	t.Run("still-unavailable", func(t *testing.T) {
		s, r := newFaulty(t, 10*time.Second, nil, elastictest.Unavailable)
		_, err := r.Search(ctx, q)
		var e *elastic.Error
		if !errors.As(err, &e) || e.StatusCode != 503 {
			t.Errorf("got %v, want a 503 *Error", err)
		}
		if n := len(s.Endpoint(elastictest.EndpointSearch)); n != 1+elastic.DefaultRetries {
			t.Errorf("%d search requests, want %d", n, 1+elastic.DefaultRetries)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		_, r := newFaulty(t, 10*time.Second, nil, elastictest.Malformed)
		if _, err := r.Search(ctx, q); err == nil || !strings.Contains(err.Error(), "malformed answer") {
			t.Errorf("got %v, want a malformed-answer error", err)
		}
	})
	t.Run("hang", func(t *testing.T) {
		_, r := newFaulty(t, 100*time.Millisecond, nil, elastictest.Hang)
		_, err := r.Search(ctx, q)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer") {
			t.Errorf("got %v, want a timeout", err)
		}
	})
	t.Run("cancelled-while-hanging", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The search is cancelled once the server holds it.
		_, r := newFaulty(t, 10*time.Second, cancel, elastictest.Hang)
		if _, err := r.Search(cctx, q); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

// TestNodes: a node that does not answer is set aside and the request
// goes to the next.
func TestNodes(t *testing.T) {
	dead := elastictest.NewServer(elastictest.Options{})
	dead.Close()
	s := newCluster(t, elastictest.Options{})
	cfg := testConfig(s, "wiki")
	cfg.URLs = []string{dead.URL(), s.URL()}
	load(t, cfg, retrievetest.Corpus(), elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{})
	for range 4 {
		if hits, err := r.Search(context.Background(), retrieve.Query{Text: "lighthouse", K: 2}); err != nil || len(hits) != 2 {
			t.Fatalf("got %d hits, %v", len(hits), err)
		}
	}
}

func TestLoadFaults(t *testing.T) {
	corpus := retrievetest.Corpus()
	ctx := context.Background()
	bulkFault := func(faults ...elastictest.Fault) func(elastictest.Request) elastictest.Fault {
		n := 0
		return func(r elastictest.Request) elastictest.Fault {
			if r.Endpoint != elastictest.EndpointBulk {
				return elastictest.None
			}
			n++ // called under the server's lock
			if n <= len(faults) {
				return faults[n-1]
			}
			return elastictest.None
		}
	}
	t.Run("whole-bulk-rejected-then-ok", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{Fault: bulkFault(elastictest.TooManyRequests, elastictest.Unavailable)})
		st := load(t, testConfig(s, "wiki"), corpus, elastic.LoadOptions{BatchSize: 10, Workers: 1})
		if st.Docs != 40 {
			t.Errorf("index holds %d docs, want 40", st.Docs)
		}
	})
	t.Run("malformed-answer", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{Fault: bulkFault(elastictest.None, elastictest.Malformed)})
		st, err := elastic.Load(ctx, testConfig(s, "wiki"), data.NewPassageSlice(corpus), elastic.LoadOptions{BatchSize: 10, Workers: 1})
		if err == nil || !strings.Contains(err.Error(), "malformed answer") || !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("got %v, want a malformed-answer error", err)
		}
		if st.Loaded != 10 {
			t.Errorf("loaded %d before the fault, want 10", st.Loaded)
		}
	})
	t.Run("server-error", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{Fault: bulkFault(elastictest.ServerError)})
		_, err := elastic.Load(ctx, testConfig(s, "wiki"), data.NewPassageSlice(corpus), elastic.LoadOptions{})
		var e *elastic.Error
		if !errors.As(err, &e) || e.StatusCode != 500 {
			t.Errorf("got %v, want a 500 *Error", err)
		}
	})
	t.Run("source-error", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{})
		src := retrievetest.FailAfter(corpus[:12], errors.New("bad line"))
		_, err := elastic.Load(ctx, testConfig(s, "wiki"), src, elastic.LoadOptions{BatchSize: 5})
		if err == nil || !strings.Contains(err.Error(), "read passage 13: bad line") {
			t.Errorf("got %v, want the source's error at passage 13", err)
		}
	})
	t.Run("embedder-error", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{})
		boom := errors.New("embeddings server down")
		vec := &elastic.Vectors{Dims: 4, Embed: func(context.Context, []data.Passage) ([][]float32, error) { return nil, boom }}
		_, err := elastic.Load(ctx, testConfig(s, "wiki"), data.NewPassageSlice(corpus), elastic.LoadOptions{Vectors: vec})
		if !errors.Is(err, boom) {
			t.Errorf("got %v, want the embedder's error", err)
		}
	})
	t.Run("bad-vectors", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{})
		vec := &elastic.Vectors{Dims: 3, Embed: func(_ context.Context, ps []data.Passage) ([][]float32, error) {
			out := make([][]float32, len(ps))
			for i := range ps {
				out[i] = []float32{1, 2, 3}
			}
			out[1] = []float32{0, 0, 0}
			out[2] = []float32{1, 2}
			out[3] = nil
			return out, nil
		}}
		st, err := elastic.Load(ctx, testConfig(s, "wiki"), data.NewPassageSlice(corpus[:6]), elastic.LoadOptions{Vectors: vec})
		var be *elastic.BulkError
		if !errors.As(err, &be) || be.Failed != 3 {
			t.Fatalf("got %v, want 3 failed passages", err)
		}
		if st.Docs != 3 {
			t.Errorf("index holds %d docs, want 3", st.Docs)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{})
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, err := elastic.Load(cctx, testConfig(s, "wiki"), data.NewPassageSlice(corpus), elastic.LoadOptions{BatchSize: 4, Workers: 2, Progress: func(elastic.Stats) { cancel() }})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := newCluster(t, elastictest.Options{Fault: bulkFault(elastictest.Hang)})
		cfg := testConfig(s, "wiki")
		cfg.Timeout = 100 * time.Millisecond
		_, err := elastic.Load(ctx, cfg, data.NewPassageSlice(corpus), elastic.LoadOptions{Workers: 1})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want a timeout", err)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		cfg  elastic.Config
		want string
	}{
		{"no-url", elastic.Config{Index: "wiki"}, "no cluster URL"},
		{"bad-scheme", elastic.Config{URLs: []string{"ftp://h"}, Index: "wiki"}, "want http://"},
		{"credentials-in-url", elastic.Config{URLs: []string{"http://u:pw@h:9200"}, Index: "wiki"}, "credentials do not belong"},
		{"bad-index", elastic.Config{URLs: []string{"http://h:9200"}, Index: "Wiki"}, "lower case"},
		{"no-index", elastic.Config{URLs: []string{"http://h:9200"}}, "empty index name"},
		{"bad-flavor", elastic.Config{URLs: []string{"http://h:9200"}, Index: "wiki", Flavor: "solr"}, "flavor"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := elastic.Open(ctx, tt.cfg, elastic.OpenOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(fmt.Sprint(err), "pw@") {
				t.Errorf("error repeats the password: %v", err)
			}
			_, err = elastic.Load(ctx, tt.cfg, data.NewPassageSlice(nil), elastic.LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	for _, opts := range []elastic.LoadOptions{{B: 2}, {Stemmer: "lovins"}, {Replicas: -1}, {Vectors: &elastic.Vectors{}}} {
		_, err := elastic.Load(ctx, elastic.Config{URLs: []string{"http://h:9200"}, Index: "wiki"}, data.NewPassageSlice(nil), opts)
		if err == nil {
			t.Errorf("Load with %+v: got no error", opts)
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want elastic.Config
	}{
		{"es://localhost:9200/wiki", elastic.Config{URLs: []string{"http://localhost:9200"}, Index: "wiki"}},
		{"es://localhost/wiki", elastic.Config{URLs: []string{"http://localhost:9200"}, Index: "wiki"}},
		{"ess://search.example.com/wiki", elastic.Config{URLs: []string{"https://search.example.com"}, Index: "wiki"}},
		{"ess://search.example.com:9243/wiki-2024.01", elastic.Config{URLs: []string{"https://search.example.com:9243"}, Index: "wiki-2024.01"}},
		{"es://a:9200,b:9201/wiki", elastic.Config{URLs: []string{"http://a:9200", "http://b:9201"}, Index: "wiki"}},
		{"es://proxy:8080/es/v1/wiki/", elastic.Config{URLs: []string{"http://proxy:8080/es/v1"}, Index: "wiki"}},
		{"es://[::1]:9200/wiki?flavor=opensearch", elastic.Config{URLs: []string{"http://[::1]:9200"}, Index: "wiki", Flavor: elastic.OpenSearch}},
		{"es://h:9200/wiki?search=knn", elastic.Config{URLs: []string{"http://h:9200"}, Index: "wiki", Search: elastic.SearchKNN}},
		{"es://h:9200/wiki?flavor=opensearch&search=EXACT", elastic.Config{URLs: []string{"http://h:9200"}, Index: "wiki", Flavor: elastic.OpenSearch, Search: elastic.SearchExact}},
		{"es://h:9200/wiki?search=bm25", elastic.Config{URLs: []string{"http://h:9200"}, Index: "wiki"}},
	} {
		got, err := elastic.ParseURL(tt.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseURL(%q) (-want +got):\n%s", tt.in, diff)
		}
		if !elastic.IsURL(tt.in) {
			t.Errorf("IsURL(%q) = false", tt.in)
		}
		again, err := elastic.ParseURL(got.String())
		if err != nil || !cmp.Equal(got, again) {
			t.Errorf("ParseURL(%q).String() = %q does not read back: %+v, %v", tt.in, got.String(), again, err)
		}
	}
	for _, in := range []string{
		"http://localhost:9200/wiki", "es://localhost:9200", "es://localhost:9200/", "es:///wiki", "es://,/wiki",
		"es://user:pw@localhost/wiki", "es://localhost/Wiki", "es://localhost/_wiki", "es://h/wiki?flavor=solr",
		"es://h/wiki?timeout=1s", "es://h/wiki?search=dense", "es://h:port/wiki", "es://h/a b", "indexes/wiki", "",
	} {
		_, err := elastic.ParseURL(in)
		if err == nil {
			t.Errorf("ParseURL(%q): got no error", in)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("ParseURL(%q): error repeats the password: %v", in, err)
		}
	}
	if elastic.IsURL("/data/index") || elastic.IsURL("http://h/wiki") {
		t.Error("IsURL accepts a path or an http URL")
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"es://localhost:9200/wiki", "ess://h/p/x?flavor=opensearch", "es://a,b/x", "es://u:p@h/x", "es://[::1]/x", "es:///", "ess://h:1/a/b/c/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := elastic.ParseURL(s)
		if err != nil {
			return
		}
		if len(cfg.URLs) == 0 || cfg.Index == "" {
			t.Fatalf("ParseURL(%q) = %+v without error", s, cfg)
		}
		again, err := elastic.ParseURL(cfg.String())
		if err != nil || !cmp.Equal(cfg, again) {
			t.Fatalf("ParseURL(%q).String() = %q reads back as %+v, %v", s, cfg.String(), again, err)
		}
	})
}
