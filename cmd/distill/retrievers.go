package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/dense"
	"github.com/distill-rag/distill/retrieve/elastic"
)

// openedIndex is an open retriever of any kind.
type openedIndex interface {
	retrieve.Retriever
	Close() error
}

// retrieverFlags are the flags of the commands that open an --index: how to
// embed the queries of a dense index.
func retrieverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "embed-base-url", Usage: "embeddings server `URL`(s), with /v1, for dense indexes (default: OpenAI's API)", EnvVars: []string{"DISTILL_EMBED_BASE_URL"}},
		&cli.IntFlag{Name: "nprobe", Usage: "search this many IVF partitions of a dense index built with --ivf (0: exact search)"},
	}
}

// indexSpecHelp says what --index takes.
const indexSpecHelp = "index: a `DIR` built by distill index (BM25 or dense), es://HOST:PORT/NAME (Elasticsearch or OpenSearch; ess:// for https), or several joined by commas (hybrid: reciprocal rank fusion)"

// openIndex opens what --index names: an index directory (BM25 or dense,
// told apart by its meta.json), an Elasticsearch or OpenSearch index
// (es://HOST/NAME), or several of those separated by commas, fused by
// reciprocal rank fusion.
func openIndex(c *cli.Context, spec string) (openedIndex, error) {
	parts := strings.Split(spec, ",")
	if len(parts) > 1 {
		var f fusedIndex
		for _, p := range parts {
			x, err := openIndex(c, strings.TrimSpace(p))
			if err != nil {
				f.Close()
				return nil, err
			}
			f.parts = append(f.parts, x)
			f.Retrievers = append(f.Retrievers, x)
		}
		return &f, nil
	}
	if elastic.IsURL(spec) {
		cfg, err := elastic.ParseURL(spec)
		if err != nil {
			return nil, usageErrorf("%w", err)
		}
		return elastic.Open(c.Context, cfg, elastic.OpenOptions{})
	}
	var meta struct {
		Format string `json:"format"`
		Model  string `json:"model"`
	}
	b, err := os.ReadFile(filepath.Join(spec, "meta.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not an index directory (build one with distill index): %w", spec, err)
	}
	if meta.Format == "distill-dense" {
		emb, err := embedder(c, meta.Model)
		if err != nil {
			return nil, err
		}
		return dense.Open(spec, dense.OpenOptions{Embedder: emb, NProbe: c.Int("nprobe")})
	}
	return bm25.Open(spec)
}

// embedder returns the embeddings client of a model, with retries and the
// limits of the model flags, from --embed-base-url (a list of replicas is
// a pool) and the key in DISTILL_EMBED_API_KEY or OPENAI_API_KEY.
func embedder(c *cli.Context, model string) (llm.Embedder, error) {
	if model == "" {
		return nil, errors.New("no embedding model")
	}
	client, err := newModelClient(c, "embed", model, c.String("embed-base-url"))
	if err != nil {
		return nil, err
	}
	return llm.StackEmbedder(client, llm.StackOptions{Logger: loggerFrom(c),
		Limits: llm.LimitOptions{MaxConcurrent: c.Int("max-concurrent"), RequestsPerMinute: c.Float64("requests-per-minute"), TokensPerMinute: c.Float64("tokens-per-minute")}}), nil
}

// fusedIndex is a hybrid of open indexes, closed together.
type fusedIndex struct {
	retrieve.Fusion
	parts []openedIndex
}

func (f *fusedIndex) Close() error {
	var errs []error
	for _, p := range f.parts {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
