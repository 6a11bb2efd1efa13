package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/elastic/elastictest"
	"github.com/distill-rag/distill/rollout/runner"
)

// TestIndexKinds builds the sample's corpus into each kind of index (BM25,
// dense against an embeddings server on loopback, a loopback Elasticsearch)
// and retrieves through each, and through all three at once in one
// rollout (hybrid).
func TestIndexKinds(t *testing.T) {
	t.Chdir(t.TempDir())
	emb := llmtest.NewServer(llmtest.Options{EmbeddingDim: 32})
	defer emb.Close()
	es := elastictest.NewServer(elastictest.Options{})
	defer es.Close()
	t.Setenv("OPENAI_API_KEY", "")

	steps := [][]string{
		{"index", "--dataset", "sample", "--out", "bm25"},
		{"index", "--kind", "dense", "--dataset", "sample", "--out", "dense", "--embed-model", "e5-test", "--embed-base-url", emb.URL(), "--ivf"},
		{"index", "--kind", "elasticsearch", "--dataset", "sample", "--es-url", es.URL(), "--es-index", "sample"},
		{"index", "--kind", "elasticsearch", "--dataset", "sample", "--es-url", es.URL(), "--es-index", "vectors", "--embed-model", "e5-test", "--embed-base-url", emb.URL()},
	}
	for _, args := range steps {
		if r := runDistill(t, append([]string{"--quiet"}, args...)...); r.code != 0 {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	u, err := url.Parse(es.URL())
	if err != nil {
		t.Fatal(err)
	}
	esIndex := "es://" + u.Host + "/sample"
	for _, idx := range []string{"bm25", "dense", esIndex} {
		r := runDistill(t, "--quiet", "search", "--index", idx, "--embed-base-url", emb.URL(), "-k", "3", "--json", "director born city")
		if r.code != 0 || strings.Count(r.stdout, "\n") != 3 {
			t.Errorf("search --index %s: exit %d, stdout %q, stderr %q", idx, r.code, r.stdout, r.stderr)
		}
	}
	// The vectors loaded into the cluster, searched by the model and the
	// server the load recorded.
	for _, search := range []string{"knn", "exact"} {
		idx := "es://" + u.Host + "/vectors?search=" + search
		r := runDistill(t, "--quiet", "search", "--index", idx, "-k", "3", "--json", "director born city")
		if r.code != 0 || strings.Count(r.stdout, "\n") != 3 {
			t.Errorf("search --index %s: exit %d, stdout %q, stderr %q", idx, r.code, r.stdout, r.stderr)
		}
	}
	if r := runDistill(t, "--quiet", "search", "--index", esIndex+"?search=knn", "-k", "3", "director"); r.code != exitFailure || !strings.Contains(r.stderr, "--embed-model") {
		t.Errorf("kNN search of an index without vectors: exit %d, stderr %q, want the way out", r.code, r.stderr)
	}
	r := runDistill(t, "--quiet", "search", "--index", "dense", "--nprobe", "4", "--embed-base-url", emb.URL(), "-k", "3", "director")
	if r.code != 0 {
		t.Errorf("search with IVF: exit %d, stderr %q", r.code, r.stderr)
	}
	hybrid := strings.Join([]string{"bm25", "dense", esIndex}, ",")
	r = runDistill(t, "--quiet", "rollout", "--index", hybrid, "--embed-base-url", emb.URL(), "--out", "ro", "--limit", "30")
	if r.code != 0 {
		t.Fatalf("rollout over a hybrid index: exit %d, stderr %q", r.code, r.stderr)
	}
	rows := checkTrajectories(t, filepath.Join("ro", runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:30]))
	if len(rows) == 0 || len(rows[len(rows)-1].Retrieved) == 0 {
		t.Error("nothing retrieved through the hybrid index")
	}
}

// TestDenseIndexRemembersServer searches a dense index without
// --embed-base-url: the server it was built with is recorded in its
// meta.json and used again, with input_type when it was built with it.
func TestDenseIndexRemembersServer(t *testing.T) {
	t.Chdir(t.TempDir())
	emb := llmtest.NewServer(llmtest.Options{EmbeddingDim: 16})
	defer emb.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("DISTILL_EMBED_BASE_URL", "")
	r := runDistill(t, "--quiet", "index", "--kind", "dense", "--dataset", "sample", "--out", "dense",
		"--embed-model", "e5-test", "--embed-base-url", emb.URL(), "--embed-input-type")
	if r.code != 0 {
		t.Fatalf("index: exit %d, stderr %q", r.code, r.stderr)
	}
	built := len(emb.Requests())
	r = runDistill(t, "--quiet", "search", "--index", "dense", "-k", "2", "--json", "director born city")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("search: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	reqs := emb.Requests()
	if len(reqs) != built+1 {
		t.Fatalf("the search sent %d requests to the recorded server, want 1", len(reqs)-built)
	}
	for i, req := range reqs {
		want := "passage"
		if i >= built {
			want = "query"
		}
		if !strings.Contains(string(req.Body), `"input_type":"`+want+`"`) {
			t.Errorf("request %d: body %s, want input_type %q", i, req.Body, want)
		}
		if strings.Contains(string(req.Body), "passage: ") || strings.Contains(string(req.Body), "query: ") {
			t.Errorf("request %d: body %s carries an E5 prefix although the server is told the input type", i, req.Body)
		}
	}

	// The recorded server is gone: the error names it and the flag.
	url := emb.URL()
	emb.Close()
	r = runDistill(t, "--quiet", "search", "--index", "dense", "director born city")
	if r.code != exitFailure || !strings.Contains(r.stderr, "no embeddings server answers at "+url) || !strings.Contains(r.stderr, "--embed-base-url") {
		t.Errorf("search with the server gone: exit %d, stderr %q; want 1, the URL and the flag", r.code, r.stderr)
	}
}

// TestIndexLuceneNorms builds a BM25 index with Lucene's length norms and
// finds them recorded in its meta.json.
func TestIndexLuceneNorms(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", "exact"}, ""},
		{[]string{"--out", "lucene", "--lucene-norms"}, "lucene"},
	} {
		if r := runDistill(t, append([]string{"--quiet", "index", "--dataset", "sample"}, tt.args...)...); r.code != 0 {
			t.Fatalf("index %v: exit %d, stderr %q", tt.args, r.code, r.stderr)
		}
		x, err := bm25.Open(tt.args[1])
		if err != nil {
			t.Fatal(err)
		}
		if got := x.Meta().Norms; got != tt.want {
			t.Errorf("index %v: norms %q, want %q", tt.args, got, tt.want)
		}
		x.Close()
	}
}
