package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/dense"
	"github.com/distill-rag/distill/retrieve/elastic"
)

// retrieverFlags are the flags of the commands that open an --index: how to
// embed the queries of a dense index.
func retrieverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "embed-base-url", Usage: "embeddings server `URL`(s), with /v1, for dense indexes (default: the server the index was built with)", EnvVars: []string{"DISTILL_EMBED_BASE_URL"}},
		&cli.IntFlag{Name: "nprobe", Usage: "search this many IVF partitions of a dense index built with --ivf (0: exact search)"},
	}
}

// indexSpecHelp says what --index takes.
const indexSpecHelp = "index: a `DIR` built by distill index (BM25 or dense), es://HOST:PORT/NAME (Elasticsearch or OpenSearch; ess:// for https; ?search=knn or ?search=exact searches the vectors it was loaded with), or several joined by commas (hybrid: reciprocal rank fusion)"

// indexKinds is the registry of the kinds of index that --index opens:
// the one place where they are wired.
func indexKinds(c *cli.Context) *retrieve.Registry {
	// Queries are embedded by the model an index was built with, on the
	// server it was built with unless --embed-base-url says otherwise.
	queryEmbedder := func(model, base string, inputType bool) (llm.Embedder, error) {
		if u := c.String("embed-base-url"); u != "" {
			base = u
		}
		it := ""
		if inputType {
			it = "query"
		}
		return embedder(c, model, base, it)
	}
	denseEmbed := func(m dense.Meta) (llm.Embedder, error) {
		return queryEmbedder(m.Model, m.BaseURL, m.InputType)
	}
	esEmbed := func(_ context.Context, e elastic.Embedding) (elastic.Embedder, error) {
		return queryEmbedder(e.Model, e.BaseURL, e.InputType)
	}
	return retrieve.NewRegistry(
		bm25.Kind(),
		dense.Kind(denseEmbed, dense.OpenOptions{NProbe: c.Int("nprobe")}),
		elastic.Kind(elastic.OpenOptions{EmbedderFor: esEmbed}),
	)
}

// openIndex opens what --index names: an index directory (BM25 or dense),
// an Elasticsearch or OpenSearch index (es://HOST/NAME), or several of
// those separated by commas, fused by reciprocal rank fusion.
func openIndex(c *cli.Context, spec string) (retrieve.Index, error) {
	x, err := indexKinds(c).Open(c.Context, spec)
	var se *retrieve.SpecError
	if errors.As(err, &se) {
		return nil, usageErrorf("%w", err)
	}
	return x, err
}

// embedder returns the embeddings client of a model, with retries and the
// limits of the model flags, on baseURL (a list of replicas is a pool;
// empty: --base-url, OPENAI_BASE_URL or OpenAI's API) with the key in
// DISTILL_EMBED_API_KEY or OPENAI_API_KEY; inputType, when set, goes with
// every request (llm.Config.InputType).
func embedder(c *cli.Context, model, baseURL, inputType string) (llm.Embedder, error) {
	if model == "" {
		return nil, errors.New("no embedding model")
	}
	client, err := newModelClient(c, "embed", model, baseURL, func(cfg *llm.Config) { cfg.InputType = inputType })
	if err != nil {
		return nil, err
	}
	return llm.StackEmbedder(client, stackOptions(c)), nil
}

// embedServerHint names the flag to change when err is an embeddings
// request that got no answer at all (nothing listening, no such host): ""
// for any other error.
func embedServerHint(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) || !strings.HasSuffix(ue.URL, "/embeddings") {
		return ""
	}
	var op *net.OpError
	var dns *net.DNSError
	if !errors.As(ue.Err, &op) && !errors.As(ue.Err, &dns) {
		return ""
	}
	return fmt.Sprintf("(no embeddings server answers at %s: start it, or give its URL with --embed-base-url "+
		"(else --base-url or OPENAI_BASE_URL); a dense index records the server it was built with, and search, rollout and bench use it unless told otherwise)",
		strings.TrimSuffix(ue.URL, "/embeddings"))
}
