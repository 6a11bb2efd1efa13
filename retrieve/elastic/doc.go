// Package elastic is a retrieval backend of distill held in an
// Elasticsearch (8.x) or OpenSearch (2.x) cluster, for corpora that
// outgrow one machine or that a team already keeps in a cluster.
//
// Data flows in two steps. Load creates an index and bulk-loads a corpus
// into it; Open connects to that index and returns a Retriever, which
// meets the contract of package retrieve (and passes retrievetest).
//
// Load creates the index with:
//
//   - a BM25 similarity with the method's k1 = 0.9 and b = 0.4 (the
//     cluster's default is 1.2 and 0.75);
//   - an English analyzer built like Lucene's EnglishAnalyzer: standard
//     tokenizer, possessive "'s" removed, lower case, English stop words,
//     then Snowball's English (Porter2) stemmer, as distill's in-process
//     index (LoadOptions.Stemmer chooses Porter's, as Pyserini);
//   - a strict mapping: id (keyword), title (text, with a keyword
//     sub-field), text (text), sentences (stored, not indexed), and "all",
//     into which title and text are copied, so that BM25 scores
//     title + " " + text as one field, as the in-process index and the
//     method's reference runs do; with LoadOptions.Vectors, a vector field
//     ("dense_vector" with dot_product similarity on Elasticsearch,
//     "knn_vector" with inner product on OpenSearch, in the k-NN plugin's
//     faiss HNSW or, with LoadOptions.Engine, Lucene's), holding
//     unit-length vectors;
//   - in the mapping's _meta, whether the load is running or complete, so
//     that Load run again after an interruption goes on in the same index
//     (documents are indexed by id: each passage ends there once) and Open
//     refuses an index whose load did not finish.
//
// It sends the passages with the _bulk API in batches (1000 per request,
// 2 requests in flight by default) and reads the answer item by item:
// documents the cluster rejected for a while (429
// es_rejected_execution_exception, 5xx) are sent again with a doubling
// wait; those it refused (mapper_parsing_exception and the like) are
// reported by id in a *BulkError once the rest is in. It loads with
// refresh switched off and refreshes at the end.
//
// Search sends one _search request: a bool query that must match the
// query text on "all" and must_not hold any id of Query.Exclude, so
// that exclusion happens in the cluster and K hits come back whenever
// K others match. With OpenOptions.Embedder it runs a kNN search
// instead, with the excluded ids filtered out during the graph search, or,
// with OpenOptions.Exact, a script_score query that scores every vector.
// An index of several shards is searched with dfs_query_then_fetch so
// that scores use global term statistics.
//
// # Elasticsearch and OpenSearch
//
// The package sends the requests of the official client's esapi package
// through its elastictransport, not through elasticsearch.Client: that
// client refuses any server whose answers lack the header
// "X-Elastic-Product: Elasticsearch" (OpenSearch sends none) and may send
// the "compatible-with=8" media type, which OpenSearch refuses. Without
// them the REST calls used here are the same on both products. The
// flavour is read from the cluster's info (OpenSearch names its
// distribution) and decides only how vectors are mapped and searched.
//
// # Addresses and credentials
//
// An index is named by an address for ParseURL: es://HOST:PORT/INDEX for
// plain HTTP (port 9200 when none is given), ess://HOST:PORT/INDEX for
// HTTPS; several comma-separated hosts are nodes of one cluster.
// Credentials never go in the address: they come from
// DISTILL_ES_API_KEY (an Elasticsearch API key, the base64 "encoded"
// form), or DISTILL_ES_USERNAME and DISTILL_ES_PASSWORD, and are never
// logged.
//
// # Running it against a real cluster
//
// scripts/opensearch start DIR runs a real single-node OpenSearch 2.19.6
// on a free loopback port, built from its Maven Central artifacts by the
// launcher in retrieve/elastic/node, and writes DIR/env with
// DISTILL_ES_URL; package opensearchtest starts one for tests (make
// e2e-opensearch). For Elasticsearch 8, start a single node with security
// off (`docker run -d --name es -p 9200:9200 -e discovery.type=single-node
// -e xpack.security.enabled=false -e ES_JAVA_OPTS="-Xms2g -Xmx2g"
// docker.elastic.co/elasticsearch/elasticsearch:8.19.7`) and wait until
// `curl localhost:9200` answers. Load a corpus with `distill index --kind
// elasticsearch --corpus corpus.jsonl --es-url http://localhost:9200
// --es-index wiki` (add --recreate to replace an existing index; BM25 k1 =
// 0.9 and b = 0.4 are set in the index, and dense vectors are added when
// an embedding model is given), then retrieve from it anywhere an index
// path is accepted with `--index es://localhost:9200/wiki`. Against a
// secured cluster use ess:// and set DISTILL_ES_API_KEY, or
// DISTILL_ES_USERNAME and DISTILL_ES_PASSWORD. Ties between equal BM25
// scores come in the index's loading order; kNN search needs
// Elasticsearch 8.4 or later, or OpenSearch 2.9 or later (2.13 for the
// lucene engine with inner product).
package elastic
