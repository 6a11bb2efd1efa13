//go:build e2e

package elastic_test

// Tests against a real OpenSearch node (scripts/opensearch), run by make
// e2e-opensearch. They skip where Java or Maven is absent.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/elastic"
	"github.com/distill-rag/distill/retrieve/elastic/opensearchtest"
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
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
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

var _ = context.Background
