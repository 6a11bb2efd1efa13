//go:build e2e

package elastic_test

// Tests against a real OpenSearch node (scripts/opensearch), run by make
// e2e-opensearch. They skip where Java or Maven is absent.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/bm25/bm25test"
	"github.com/distill-rag/distill/retrieve/elastic"
	"github.com/distill-rag/distill/retrieve/elastic/opensearchtest"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

func TestMain(m *testing.M) { os.Exit(opensearchtest.Main(m)) }

var indexSeq atomic.Int64

// nodeConfig names a fresh index on node n.
func nodeConfig(n *opensearchtest.Node, prefix string) elastic.Config {
	return elastic.Config{
		URLs:    []string{n.URL},
		Index:   fmt.Sprintf("%s-%d", prefix, indexSeq.Add(1)),
		Timeout: 2 * time.Minute,
		Backoff: 50 * time.Millisecond,
	}
}

// nodeCall sends one request to the node and decodes its JSON answer into
// out (when not nil); an answer other than 2xx fails t.
func nodeCall(t testing.TB, n *opensearchtest.Node, method, path string, body any, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, n.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if n.Username != "" {
		req.SetBasicAuth(n.Username, n.Password)
	}
	res, b := testkit.Do(t, http.DefaultClient, req)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: status %d: %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// analyze returns the terms the node's distill_english analyzer makes of
// text in index.
func analyze(t testing.TB, n *opensearchtest.Node, index, text string) []string {
	t.Helper()
	var res struct {
		Tokens []struct {
			Token string `json:"token"`
		} `json:"tokens"`
	}
	nodeCall(t, n, http.MethodPost, "/"+index+"/_analyze", map[string]any{"analyzer": "distill_english", "text": text}, &res)
	out := make([]string, len(res.Tokens))
	for i, tok := range res.Tokens {
		out[i] = tok.Token
	}
	return out
}

func passageText(p data.Passage) string {
	if p.Title == "" {
		return p.Text
	}
	return p.Title + " " + p.Text
}

func joinTerms(ts []string) string { return strings.Join(ts, " ") }

func TestNodeConformance(t *testing.T) {
	n := opensearchtest.Shared(t)
	for _, tt := range []struct {
		name string
		open elastic.OpenOptions
	}{
		{"bm25", elastic.OpenOptions{}},
		{"sort-by-id", elastic.OpenOptions{SortByID: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conformance(t, func(*testing.T) elastic.Config { return nodeConfig(n, "conformance") }, tt.open)
		})
	}
}

// TestNodeLoadsSharedCorpora loads the shared HotpotQA and 2Wiki corpora
// and searches them through an es:// address, as distill search and
// distill rollout --index do.
func TestNodeLoadsSharedCorpora(t *testing.T) {
	n := opensearchtest.Shared(t)
	ctx := context.Background()
	reg := retrieve.NewRegistry(elastic.Kind(elastic.OpenOptions{}))
	for _, ds := range opensearchtest.Datasets(t) {
		t.Run(ds.Name, func(t *testing.T) {
			cfg := nodeConfig(n, ds.Name)
			st := load(t, cfg, ds.Corpus, elastic.LoadOptions{BatchSize: 400})
			want := elastic.Stats{Passages: int64(len(ds.Corpus)), Loaded: int64(len(ds.Corpus)), Docs: int64(len(ds.Corpus)), Flavor: elastic.OpenSearch, Version: "2.19.6"}
			got := st
			got.Requests, got.Elapsed = 0, 0
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			var settings map[string]struct {
				Settings struct {
					Index struct {
						Similarity map[string]map[string]string `json:"similarity"`
						Refresh    *string                      `json:"refresh_interval"`
					} `json:"index"`
				} `json:"settings"`
			}
			nodeCall(t, n, http.MethodGet, "/"+cfg.Index+"/_settings", nil, &settings)
			sim := settings[cfg.Index].Settings.Index.Similarity["distill_bm25"]
			if diff := cmp.Diff(map[string]string{"type": "BM25", "k1": "0.9", "b": "0.4"}, sim); diff != "" {
				t.Errorf("similarity in the index (-want +got):\n%s", diff)
			}
			if r := settings[cfg.Index].Settings.Index.Refresh; r != nil {
				t.Errorf("refresh_interval left at %q, want the default", *r)
			}
			idx, err := reg.Open(ctx, n.Address(cfg.Index))
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			byID := map[string]data.Passage{}
			for _, p := range ds.Corpus {
				byID[p.ID] = p
			}
			for _, q := range ds.Questions[:10] {
				hits := retrievetest.Search(ctx, t, idx, retrieve.Query{Text: q.Text, K: 6})
				if len(hits) != 6 {
					t.Fatalf("%q: %d hits, want 6", q.Text, len(hits))
				}
				for _, h := range hits {
					if diff := cmp.Diff(byID[h.ID], h.Passage); diff != "" {
						t.Errorf("hit %s is not the loaded passage (-want +got):\n%s", h.ID, diff)
					}
				}
			}
		})
	}
}

// TestNodeExistingIndex: an index that is there is refused without
// Recreate, replaced with it, and an index of the same name that distill
// did not make (a mapping that conflicts) is refused by Open.
func TestNodeExistingIndex(t *testing.T) {
	n := opensearchtest.Shared(t)
	ctx := context.Background()
	corpus := retrievetest.Corpus()
	cfg := nodeConfig(n, "existing")
	load(t, cfg, corpus, elastic.LoadOptions{})
	if _, err := elastic.Load(ctx, cfg, data.NewPassageSlice(corpus[:3]), elastic.LoadOptions{}); !errors.Is(err, elastic.ErrExists) {
		t.Fatalf("second load: got %v, want ErrExists", err)
	}
	if st := load(t, cfg, corpus[:3], elastic.LoadOptions{Recreate: true}); st.Docs != 3 {
		t.Errorf("recreated index holds %d docs, want 3", st.Docs)
	}

	other := nodeConfig(n, "foreign")
	nodeCall(t, n, http.MethodPut, "/"+other.Index, map[string]any{"mappings": map[string]any{"properties": map[string]any{
		"id": map[string]any{"type": "long"}, "all": map[string]any{"type": "keyword"}, "title": map[string]any{"type": "text"},
	}}}, nil)
	if _, err := elastic.Open(ctx, other, elastic.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "not made by distill's loader") {
		t.Errorf("Open of a foreign index: got %v, want a refusal naming the loader", err)
	}
	if _, err := elastic.Load(ctx, other, data.NewPassageSlice(corpus), elastic.LoadOptions{}); !errors.Is(err, elastic.ErrExists) {
		t.Errorf("load over a foreign index: got %v, want ErrExists", err)
	}
	if _, err := elastic.Open(ctx, nodeConfig(n, "missing"), elastic.OpenOptions{}); !errors.Is(err, elastic.ErrNotFound) {
		t.Errorf("Open of a missing index: got %v, want ErrNotFound", err)
	}
}

// TestNodeResumesInterruptedLoad stops a load half-way and runs it again.
func TestNodeResumesInterruptedLoad(t *testing.T) {
	n := opensearchtest.Shared(t)
	ctx := context.Background()
	ds := opensearchtest.Datasets(t)[1]
	cfg := nodeConfig(n, "resume")
	broken := errors.New("reader died")
	_, err := elastic.Load(ctx, cfg, retrievetest.FailAfter(ds.Corpus[:2500], broken), elastic.LoadOptions{BatchSize: 500})
	if !errors.Is(err, broken) {
		t.Fatalf("interrupted load: got %v, want %v", err, broken)
	}
	if _, err := elastic.Open(ctx, cfg, elastic.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("Open of an interrupted load: got %v, want a refusal", err)
	}
	st := load(t, cfg, ds.Corpus, elastic.LoadOptions{BatchSize: 500})
	if st.Docs != int64(len(ds.Corpus)) {
		t.Errorf("resumed load: index holds %d, want %d", st.Docs, len(ds.Corpus))
	}
	open(t, cfg, elastic.OpenOptions{})
}

// TestNodeCredentials runs against a node that checks basic credentials.
func TestNodeCredentials(t *testing.T) {
	n := opensearchtest.Start(t, opensearchtest.Options{BasicAuth: "distill:s3cret-Pass", Heap: "512m"})
	ctx := context.Background()
	corpus := retrievetest.Corpus()
	for _, tt := range []struct {
		name, user, password string
	}{
		{"none", "", ""},
		{"wrong-password", "distill", "guess"},
		{"wrong-user", "admin", "s3cret-Pass"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(elastic.EnvUsername, tt.user)
			t.Setenv(elastic.EnvPassword, tt.password)
			t.Setenv(elastic.EnvAPIKey, "")
			cfg := nodeConfig(n, "secured")
			cfg.Retries = -1
			_, err := elastic.Load(ctx, cfg, data.NewPassageSlice(corpus), elastic.LoadOptions{})
			var e *elastic.Error
			if !errors.As(err, &e) || e.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got %v, want a 401 *elastic.Error", err)
			}
			if !strings.Contains(err.Error(), elastic.EnvUsername) {
				t.Errorf("error %q does not say where credentials come from", err)
			}
			if tt.password != "" && strings.Contains(err.Error(), tt.password) {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
	t.Setenv(elastic.EnvUsername, "distill")
	t.Setenv(elastic.EnvPassword, "s3cret-Pass")
	cfg := nodeConfig(n, "secured")
	load(t, cfg, corpus, elastic.LoadOptions{})
	r := open(t, cfg, elastic.OpenOptions{})
	hits, err := r.Search(ctx, retrieve.Query{Text: "marker zq5xv", K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != corpus[5].ID {
		t.Errorf("search with the right credentials: got %v, %v", hits, err)
	}
}

// TestNodeKNN loads vectors into a knn_vector field (the k-NN plugin with
// the lucene engine: the faiss engine needs native libraries that Maven
// Central does not carry) and checks the graph search, the exact
// script_score search and the hybrid retriever against the in-process
// indexes.
func TestNodeKNN(t *testing.T) {
	n := opensearchtest.Shared(t)
	ctx := context.Background()
	corpus := retrievetest.Corpus()
	emb := &markerEmbedder{dims: 48}
	cfg := nodeConfig(n, "dense")
	st := load(t, cfg, corpus, elastic.LoadOptions{Engine: elastic.EngineLucene, Vectors: &elastic.Vectors{Embed: elastic.EmbedPassages(emb, "passage: ")}})
	if st.Dims != 48 {
		t.Errorf("learnt %d dims, want 48", st.Dims)
	}
	graph := open(t, cfg, elastic.OpenOptions{Embedder: emb, QueryPrefix: "query: "})
	exact := open(t, cfg, elastic.OpenOptions{Embedder: emb, QueryPrefix: "query: ", Exact: true})
	lexical := open(t, cfg, elastic.OpenOptions{})

	hits := retrievetest.Search(ctx, t, graph, retrieve.Query{Text: "which passage has zq7xv", K: 3})
	if len(hits) != 3 || hits[0].ID != corpus[7].ID {
		t.Fatalf("got %v, want 3 hits, %s first", retrievetest.HitIDs(hits), corpus[7].ID)
	}
	if diff := cmp.Diff(corpus[7], hits[0].Passage); diff != "" {
		t.Errorf("hit is not the whole passage (-want +got):\n%s", diff)
	}
	for _, q := range []retrieve.Query{
		{Text: "zq7xv zq9xv", K: 2},
		{Text: "zq7xv zq9xv", K: 2, Exclude: []string{corpus[7].ID}},
		{Text: "zq3xv", K: 1, Exclude: []string{corpus[3].ID, corpus[10].ID}},
	} {
		g := retrievetest.Search(ctx, t, graph, q)
		e := retrievetest.Search(ctx, t, exact, q)
		if len(e) != q.K || len(g) != q.K {
			t.Fatalf("%+v: %d exact and %d graph hits, want %d", q, len(e), len(g), q.K)
		}
		for _, h := range append(e, g...) {
			if slices.Contains(q.Exclude, h.ID) {
				t.Errorf("%+v: excluded %s returned", q, h.ID)
			}
		}
		// Ties (equal vectors) may come in either order; the scores may not.
		for i := range e {
			if math.Abs(g[i].Score-e[i].Score) > 1e-4 {
				t.Errorf("%+v: rank %d scores %v in the graph, %v exactly", q, i+1, g[i].Score, e[i].Score)
			}
		}
	}

	// Hybrid: BM25 and kNN of the node fused, as --index a,b fuses them.
	local := bm25test.Index(t, corpus, bm25.BuildOptions{LuceneNorms: true})
	onNode := retrieve.Fusion{Retrievers: []retrieve.Retriever{lexical, exact}}
	mixed := retrieve.Fusion{Retrievers: []retrieve.Retriever{local, exact}}
	for _, text := range []string{"crimson lighthouse zq12xv", "keeper's journal about storms zq3xv", "Orvel Quessa 7"} {
		q := retrieve.Query{Text: text, K: 6, Exclude: []string{corpus[12].ID}}
		want := retrievetest.Search(ctx, t, mixed, q)
		got := retrievetest.Search(ctx, t, onNode, q)
		if diff := cmp.Diff(retrievetest.HitIDs(want), retrievetest.HitIDs(got)); diff != "" {
			t.Errorf("%q: hybrid on the node against in-process BM25 + node kNN (-want +got):\n%s", text, diff)
		}
	}
}
