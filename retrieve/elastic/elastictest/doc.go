// Package elastictest runs a loopback cluster of one node that speaks the
// part of the Elasticsearch and OpenSearch REST APIs that package elastic
// uses, in their wire format, so that the retriever is tested without a
// real cluster.
//
// It serves:
//
//	GET, HEAD /                        cluster info (OpenSearch says "distribution": "opensearch")
//	HEAD, GET, PUT, DELETE /{index}    exists, get (settings and mappings), create, delete
//	GET, PUT /{index}/_settings        settings; static ones cannot change
//	PUT /{index}/_mapping              the mapping's _meta (nothing else)
//	POST /_bulk, /{index}/_bulk        NDJSON index, create and delete actions, one result per action
//	POST /{index}/_refresh             makes stored documents visible to searches
//	POST /{index}/_search              match, term(s), ids, bool, match_all; sort; _source filtering;
//	                                   Elasticsearch's top-level knn, OpenSearch's knn query;
//	                                   script_score with package elastic's exact inner-product scripts
//	POST /{index}/_count
//
// What it checks as a real node would: index settings (similarities,
// analyzers and their token filters, shard counts, index.knn only on
// OpenSearch), mappings (field types per flavour: dense_vector on
// Elasticsearch, knn_vector on OpenSearch; analyzers, similarities and
// copy_to targets that exist; "dynamic": "strict"), every document against
// the mapping (unknown fields, wrong types, vector dimensions, unit length
// for dot_product), the bulk body (actions, the final newline), query
// syntax, the result window, sorting on text fields, credentials (ApiKey
// or Basic) and, on OpenSearch, the Elasticsearch 8 compatibility media
// types, which it refuses with 406. Elasticsearch answers carry
// X-Elastic-Product; OpenSearch answers do not.
//
// Documents become visible to searches at a refresh, or at once when the
// index's refresh_interval is not -1. Searches score with Lucene's BM25
// (without the (k1+1) factor, as Lucene 8 and later) using the k1 and b of
// the field's similarity in the index settings, with exact field lengths
// rather than Lucene's one-byte norms, and analyse every text field with
// distill's English analyzer (analysis.Analyzer) whatever analyzer the
// mapping names. kNN search is exact. Ties come in index order, as in a
// one-shard Lucene index. The server answers bulk requests in full and
// ignores filter_path, which only trims answers.
//
// Faults: Options.Fault picks, per request, a whole-request 429, 500 or
// 503, a malformed body, or a hang; Options.RejectItems and
// Options.BadItems make single bulk items fail with 429
// es_rejected_execution_exception (for a number of tries) or 400
// mapper_parsing_exception (for good). Every request is recorded, with
// its body and the status answered, for assertions.
package elastictest
