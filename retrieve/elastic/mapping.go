package elastic

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/distill-rag/distill/internal/analysis"
)

// The index's fields. Title and text are copied into "all", which BM25
// scores: one field holding title + " " + text, as the in-process index
// and the method's reference runs index it. Sentences are stored only.
const (
	fieldID        = "id"
	fieldTitle     = "title"
	fieldText      = "text"
	fieldSentences = "sentences"
	fieldAll       = "all"
	fieldVector    = "vector"

	similarityName = "distill_bm25"
	analyzerName   = "distill_english"
)

// doc is the stored document.
type doc struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Text      string    `json:"text"`
	Sentences []string  `json:"sentences,omitempty"`
	Vector    []float32 `json:"vector,omitempty"`
}

// The k-NN engines LoadOptions.Engine accepts (OpenSearch only).
const (
	// EngineFaiss is the k-NN plugin's native faiss HNSW: OpenSearch's
	// default, fast, and needs the plugin's native libraries.
	EngineFaiss = "faiss"
	// EngineLucene is Lucene's own HNSW, in Java: it runs wherever the
	// k-NN plugin is installed, native libraries or not.
	EngineLucene = "lucene"
)

// Stemmers LoadOptions.Stemmer accepts.
const (
	// StemmerPorter2 is Snowball's English stemmer, the default of
	// distill's in-process BM25 index.
	StemmerPorter2 = string(analysis.Porter2)
	// StemmerPorter is Porter's original stemmer, the one Lucene's
	// EnglishAnalyzer (and so Pyserini) uses: --stemmer porter.
	StemmerPorter = string(analysis.Porter)
)

// indexBody is the body of the create-index request: settings with the
// BM25 similarity and the English analyzer, and the strict mapping.
// dims > 0 adds the vector field.
func indexBody(flavor Flavor, opts LoadOptions, dims int) ([]byte, error) {
	stemmer := map[string]any{"type": "stemmer", "language": "porter2"}
	switch opts.Stemmer {
	case StemmerPorter2:
	case StemmerPorter:
		stemmer = map[string]any{"type": "porter_stem"}
	default:
		return nil, fmt.Errorf("stemmer %q: want %q or %q", opts.Stemmer, StemmerPorter2, StemmerPorter)
	}
	index := map[string]any{
		"number_of_shards":   opts.Shards,
		"number_of_replicas": opts.Replicas,
		// Refreshing while loading only costs; Load refreshes at the end.
		"refresh_interval": "-1",
		"similarity": map[string]any{
			similarityName: map[string]any{"type": "BM25", "k1": opts.K1, "b": opts.B},
		},
		// Lucene's EnglishAnalyzer, spelled out: standard tokenizer,
		// possessive "'s" removed, lower case, English stop words, stemmer.
		"analysis": map[string]any{
			"filter": map[string]any{
				"distill_possessive": map[string]any{"type": "stemmer", "language": "possessive_english"},
				"distill_stop":       map[string]any{"type": "stop", "stopwords": "_english_"},
				"distill_stemmer":    stemmer,
			},
			"analyzer": map[string]any{
				analyzerName: map[string]any{
					"type":      "custom",
					"tokenizer": "standard",
					"filter":    []string{"distill_possessive", "lowercase", "distill_stop", "distill_stemmer"},
				},
			},
		},
	}
	text := func(extra map[string]any) map[string]any {
		m := map[string]any{"type": "text", "analyzer": analyzerName, "similarity": similarityName}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	props := map[string]any{
		fieldID: map[string]any{"type": "keyword"},
		fieldTitle: text(map[string]any{
			"copy_to": fieldAll,
			"fields":  map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": 512}},
		}),
		fieldText:      text(map[string]any{"copy_to": fieldAll}),
		fieldAll:       text(nil),
		fieldSentences: map[string]any{"type": "text", "index": false},
	}
	if dims > 0 {
		switch flavor {
		case OpenSearch:
			// k-NN search needs index.knn; both engines filter during the
			// graph search (faiss from OpenSearch 2.9 on).
			index["knn"] = true
			props[fieldVector] = map[string]any{
				"type":      "knn_vector",
				"dimension": dims,
				"method":    map[string]any{"name": "hnsw", "space_type": "innerproduct", "engine": opts.Engine},
			}
		default:
			props[fieldVector] = map[string]any{
				"type": "dense_vector", "dims": dims, "index": true, "similarity": "dot_product",
			}
		}
	}
	return json.Marshal(map[string]any{
		"settings": map[string]any{"index": index},
		"mappings": map[string]any{"dynamic": "strict", "properties": props},
	})
}

// loadMeta is what Load records in the mapping's _meta under "distill":
// whether the load finished, and a digest of the settings and mapping it
// made, so that a load run again after an interruption goes on in the
// same index only when it would make the same one.
type loadMeta struct {
	State     string     `json:"load"` // loadRunning or loadComplete
	Digest    string     `json:"digest"`
	Passages  int64      `json:"passages,omitempty"`
	Embedding *Embedding `json:"embedding,omitempty"`
}

// Embedding is how the vectors of an index were made: the embeddings
// model, the server it was asked on (empty: the client's default), whether
// the server was told the input type (then queries go as "query"), and
// the prefix queries take ("query: " for E5 models without input types).
type Embedding struct {
	Model       string `json:"model"`
	BaseURL     string `json:"base_url,omitempty"`
	InputType   bool   `json:"input_type,omitempty"`
	QueryPrefix string `json:"query_prefix,omitempty"`
}

const (
	loadRunning  = "running"
	loadComplete = "complete"
)

// withMeta returns the create-index body with m in the mapping's _meta.
func withMeta(body []byte, m loadMeta) ([]byte, error) {
	var v map[string]map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	v["mappings"]["_meta"] = map[string]any{"distill": m}
	return json.Marshal(v)
}

// indexInfo is what GET /{index} says about one index.
type indexInfo struct {
	Mappings struct {
		Meta struct {
			Distill *loadMeta `json:"distill"`
		} `json:"_meta"`
		Properties map[string]fieldInfo `json:"properties"`
	} `json:"mappings"`
	Settings struct {
		Index struct {
			Shards flexInt `json:"number_of_shards"`
		} `json:"index"`
	} `json:"settings"`
}

type fieldInfo struct {
	Type      string  `json:"type"`
	Dims      flexInt `json:"dims"`
	Dimension flexInt `json:"dimension"`
}

// flexInt reads a number sent as a number or, as index settings are, as a
// string.
type flexInt int

func (n *flexInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		*n = flexInt(v)
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = flexInt(v)
	return nil
}
