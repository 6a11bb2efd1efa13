package elastic

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/distill-rag/distill/internal/testkit"
)

// TestIndexBody keeps the create-index bodies in golden files, so that a
// change to the settings or the mapping shows up in review.
func TestIndexBody(t *testing.T) {
	defaults, err := LoadOptions{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	porter := defaults
	porter.Stemmer = StemmerPorter
	porter.Shards, porter.Replicas = 3, 1
	lucene := defaults
	lucene.Engine = EngineLucene
	tests := []struct {
		name   string
		flavor Flavor
		opts   LoadOptions
		dims   int
	}{
		{"bm25", Elasticsearch, defaults, 0},
		{"bm25-porter-3-shards", Elasticsearch, porter, 0},
		{"elasticsearch-vectors", Elasticsearch, defaults, 768},
		{"opensearch-vectors", OpenSearch, defaults, 768},
		{"opensearch-vectors-lucene", OpenSearch, lucene, 768},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := indexBody(tt.flavor, tt.opts, tt.dims)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, body, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			testkit.Golden(t, "create-"+tt.name+".json", pretty.String())
		})
	}
}

func TestIndexBodyBadStemmer(t *testing.T) {
	opts, _ := LoadOptions{}.withDefaults()
	opts.Stemmer = "lovins"
	if _, err := indexBody(Elasticsearch, opts, 0); err == nil {
		t.Error("got no error for an unknown stemmer")
	}
}

func TestBackoff(t *testing.T) {
	c := Config{Backoff: 500 * time.Millisecond}
	for _, tt := range []struct {
		attempt int
		want    float64 // seconds
	}{{1, 0.5}, {2, 1}, {3, 2}, {7, 30}, {50, 30}} {
		if got := c.backoff(tt.attempt).Seconds(); got != tt.want {
			t.Errorf("backoff(%d) = %vs, want %vs", tt.attempt, got, tt.want)
		}
	}
}
