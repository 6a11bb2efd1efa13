//go:build e2e

package main

// distill's commands against a real OpenSearch node (scripts/opensearch),
// run by make e2e-opensearch; they skip where Java or Maven is absent.

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/testkit"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/retrieve/elastic/opensearchtest"
	"github.com/distill-rag/distill/rollout/runner"
)

// proxy forwards to the node and calls hook after each answer it relays,
// with the request's path; it stands where the command line names the
// cluster, so that a test can act at a chosen request.
func proxy(t *testing.T, node *opensearchtest.Node, hook func(path string)) string {
	t.Helper()
	target, err := url.Parse(node.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a node stopped on purpose is no news
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(w, r)
		if hook != nil {
			mu.Lock()
			defer mu.Unlock()
			hook(r.URL.Path)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// nodeGet decodes GET path of the node into out.
func nodeGet(t *testing.T, node *opensearchtest.Node, path string, out any) {
	t.Helper()
	res, err := http.Get(node.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func docCount(t *testing.T, node *opensearchtest.Node, index string) int {
	t.Helper()
	nodeGet(t, node, "/"+index+"/_refresh", &struct{}{})
	var c struct{ Count int }
	nodeGet(t, node, "/"+index+"/_count", &c)
	return c.Count
}

func buildDistill(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "distill")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestOpenSearchVectorsFromTheCommandLine loads the sample's corpus with
// vectors (an embeddings server on loopback) into the real node, with the
// Lucene engine, and searches it from the command line by kNN and exactly,
// by the model and server the load recorded: the graph's top 10 must hold
// the exact top 10 (a few hundred vectors), and a rollout runs over BM25
// and kNN of the node fused with a BM25 directory.
func TestOpenSearchVectorsFromTheCommandLine(t *testing.T) {
	node := opensearchtest.Start(t, opensearchtest.Options{Heap: "512m"})
	emb := llmtest.NewServer(llmtest.Options{EmbeddingDim: 32})
	defer emb.Close()
	t.Setenv("OPENAI_API_KEY", "")
	bin := buildDistill(t)
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--quiet"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("distill %s: %v\n%s", strings.Join(args, " "), err, exit.Stderr)
			}
			t.Fatal(err)
		}
		return string(out)
	}
	run("index", "--kind", "elasticsearch", "--dataset", "sample", "--es-url", node.URL, "--es-index", "vectors",
		"--embed-model", "e5-test", "--embed-base-url", emb.URL(), "--es-knn-engine", "lucene")
	u, err := url.Parse(node.URL)
	if err != nil {
		t.Fatal(err)
	}
	index := "es://" + u.Host + "/vectors"
	ids := func(search, query string) []string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(run("search", "--index", index+"?search="+search, "-k", "10", "--json", query)), "\n") {
			var h struct{ ID string }
			if err := json.Unmarshal([]byte(line), &h); err != nil {
				t.Fatalf("search output %q: %v", line, err)
			}
			got = append(got, h.ID)
		}
		return got
	}
	for _, q := range []string{"director born city", "which magazine was started first", "river longest country"} {
		knn, exact := ids("knn", q), ids("exact", q)
		if len(exact) != 10 || !sameSet(knn, exact) {
			t.Errorf("%q: kNN %v, exact %v: want the same 10", q, knn, exact)
		}
	}
	run("index", "--dataset", "sample", "--out", "bm25")
	run("rollout", "--index", "bm25,"+index+","+index+"?search=knn", "--out", "ro", "--limit", "10")
	rows := checkTrajectories(t, filepath.Join(dir, "ro", runner.TrajectoriesFile), testkit.QuestionIDs(synth.Sample().Questions[:10]))
	if len(rows) == 0 || len(rows[len(rows)-1].Retrieved) == 0 {
		t.Error("nothing retrieved through the hybrid of the node and a BM25 directory")
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestOpenSearchIndexKill9 kills `distill index --kind elasticsearch` with
// SIGKILL in the middle of loading the 2Wiki corpus, then runs the same
// command again: the index ends with every passage exactly once.
func TestOpenSearchIndexKill9(t *testing.T) {
	node := opensearchtest.Start(t, opensearchtest.Options{Heap: "512m"})
	corpus := opensearchtest.SharedFile(t, "2wikimultihopqa/2wiki_corpus.jsonl")
	passages := 0
	r, err := data.OpenCorpus(corpus, data.CorpusJSONL)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		passages++
	}
	r.Close()
	bin := buildDistill(t)

	var cmd *exec.Cmd
	bulks := 0
	addr := proxy(t, node, func(path string) {
		if !strings.HasSuffix(path, "/_bulk") {
			return
		}
		if bulks++; bulks == 3 && cmd != nil {
			cmd.Process.Kill() // SIGKILL: no chance to clean up
		}
	})
	args := []string{"--quiet", "index", "--kind", "elasticsearch", "--corpus", corpus, "--es-url", addr, "--es-index", "wiki"}
	cmd = exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("distill index: %v, want it killed", err)
	}
	if n := docCount(t, node, "wiki"); n == 0 || n >= passages {
		t.Fatalf("after the kill the index holds %d of %d passages, want some", n, passages)
	}
	cmd = nil
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("the same command again: %v\n%s", err, out)
	}
	if n := docCount(t, node, "wiki"); n != passages {
		t.Errorf("after the second run the index holds %d documents, want %d", n, passages)
	}
	// Passage ids held by more than one document (exact on one shard).
	var dups struct {
		Aggregations struct {
			Dups struct {
				Buckets []struct {
					Key   string
					Count int `json:"doc_count"`
				}
			} `json:"dups"`
		} `json:"aggregations"`
	}
	body := `{"size":0,"aggs":{"dups":{"terms":{"field":"id","min_doc_count":2,"size":10}}}}`
	res, err := http.Post(node.URL+"/wiki/_search", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&dups); err != nil {
		t.Fatal(err)
	}
	if b := dups.Aggregations.Dups.Buckets; len(b) > 0 {
		t.Errorf("passage ids held by several documents: %v", b)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	var again *exec.ExitError
	if !errors.As(err, &again) || again.ExitCode() != exitUsage || !strings.Contains(string(out), "--recreate") {
		t.Errorf("a third run over the complete index: %v\n%s\nwant exit %d naming --recreate", err, out, exitUsage)
	}
}

// TestOpenSearchRolloutClusterGoesAway stops the node in the middle of a
// rollout that retrieves from it: the run ends with an error naming the
// cluster and keeps the questions it finished; once the node is back,
// --resume finishes with every question exactly once.
func TestOpenSearchRolloutClusterGoesAway(t *testing.T) {
	node := opensearchtest.Start(t, opensearchtest.Options{Heap: "512m"})
	dir := t.TempDir()
	ds, out := filepath.Join(dir, "ds"), filepath.Join(dir, "run")
	if r := runDistill(t, "--quiet", "data", "import", "--dataset", "sample", "--out", ds); r.code != 0 {
		t.Fatalf("data import: exit %d: %s", r.code, r.stderr)
	}
	if r := runDistill(t, "--quiet", "index", "--kind", "elasticsearch", "--corpus", filepath.Join(ds, data.CorpusFile),
		"--es-url", node.URL, "--es-index", "sample"); r.code != 0 {
		t.Fatalf("index: exit %d: %s", r.code, r.stderr)
	}
	searches := 0
	var stopErr error
	addr := proxy(t, node, func(path string) {
		if strings.HasSuffix(path, "/_search") {
			if searches++; searches == 150 {
				stopErr = node.Stop()
			}
		}
	})
	index := "es://" + strings.TrimPrefix(addr, "http://") + "/sample"
	args := []string{"rollout", "--questions", filepath.Join(ds, data.QuestionsFile), "--index", index,
		"--out", out, "--workers", "2", "--checkpoint-questions", "10", "--policy", "fixed"}
	r := runDistill(t, append([]string{"--quiet"}, args...)...)
	if stopErr != nil {
		t.Fatal(stopErr)
	}
	if r.code != exitFailure || !strings.Contains(r.stderr, "sample") {
		t.Fatalf("rollout while the cluster went away: exit %d, stderr %q; want exit %d naming the index", r.code, r.stderr, exitFailure)
	}
	parts, _ := filepath.Glob(filepath.Join(out, runner.PartsDir, "part-*.parquet"))
	if len(parts) == 0 {
		t.Fatal("no questions kept from before the cluster went away")
	}
	if err := node.Restart(); err != nil {
		t.Fatal(err)
	}
	r = runDistill(t, append(append([]string{"--quiet"}, args...), "--resume")...)
	if r.code != exitOK {
		t.Fatalf("resume: exit %d, stderr %q", r.code, r.stderr)
	}
	qs, err := data.ReadParquet[data.Question](filepath.Join(ds, data.QuestionsFile))
	if err != nil {
		t.Fatal(err)
	}
	checkTrajectories(t, filepath.Join(out, runner.TrajectoriesFile), testkit.QuestionIDs(qs))
	t.Logf("stopped the node at search %d; %d parts kept; resume finished: %s", 150, len(parts), strings.TrimSpace(r.stdout))
}
