package elastictest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/distill-rag/distill/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

// call sends one request and returns the status and decoded JSON body.
func call(t *testing.T, s *Server, method, path, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, raw := testkit.Do(t, s.Client(), req)
	var v map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	}
	return res.StatusCode, v
}

func errType(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

const mapping = `{
  "settings": {"index": {"number_of_shards": 1, "refresh_interval": "-1",
    "similarity": {"sim": {"type": "BM25", "k1": 0.9, "b": 0.4}},
    "analysis": {"analyzer": {"en": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}}}}},
  "mappings": {"dynamic": "strict", "properties": {
    "id": {"type": "keyword"},
    "title": {"type": "text", "analyzer": "en", "similarity": "sim", "copy_to": "all"},
    "text": {"type": "text", "analyzer": "en", "similarity": "sim", "copy_to": "all"},
    "all": {"type": "text", "analyzer": "en", "similarity": "sim"}}}}`

const docs = `{"index":{"_id":"a"}}
{"id":"a","title":"Red fox","text":"The red fox jumps."}
{"index":{"_id":"b"}}
{"id":"b","title":"Blue whale","text":"A whale of a tale about a red boat."}
{"index":{"_id":"c"}}
{"id":"c","title":"Green","text":"Nothing here.","extra":1}
{"index":{"_id":"d"}}
{"id":"d","title":["Dog"],"text":{"no":"object"}}
`

func TestBulkAndSearch(t *testing.T) {
	s := NewServer(Options{})
	defer s.Close()
	if st, v := call(t, s, "PUT", "/idx", mapping); st != 200 {
		t.Fatalf("create: %d %v", st, v)
	}
	st, v := call(t, s, "POST", "/idx/_bulk", docs)
	if st != 200 || v["errors"] != true {
		t.Fatalf("bulk: %d %v", st, v)
	}
	var got []string
	for _, it := range v["items"].([]any) {
		r := it.(map[string]any)["index"].(map[string]any)
		got = append(got, r["_id"].(string)+" "+jsonString(r["status"])+" "+errType(map[string]any{"error": r["error"]}))
	}
	want := []string{"a 201 ", "b 201 ", "c 400 strict_dynamic_mapping_exception", "d 400 document_parsing_exception"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bulk items (-want +got):\n%s", diff)
	}

	search := `{"query": {"bool": {"must": [{"match": {"all": {"query": "red"}}}]}}}`
	if _, v := call(t, s, "POST", "/idx/_search", search); len(hitIDs(v)) != 0 {
		t.Errorf("hits before refresh: %v", hitIDs(v))
	}
	call(t, s, "POST", "/idx/_refresh", "")
	_, v = call(t, s, "POST", "/idx/_search", search)
	if diff := cmp.Diff([]string{"a", "b"}, hitIDs(v)); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	total := v["hits"].(map[string]any)["total"].(map[string]any)["value"]
	if total != 2.0 {
		t.Errorf("total %v, want 2", total)
	}
	excl := `{"query": {"bool": {"must": {"match": {"all": "red"}}, "must_not": [{"terms": {"id": ["a"]}}]}}, "_source": ["title"]}`
	_, v = call(t, s, "POST", "/idx/_search", excl)
	if diff := cmp.Diff([]string{"b"}, hitIDs(v)); diff != "" {
		t.Errorf("hits with must_not (-want +got):\n%s", diff)
	}
	src := v["hits"].(map[string]any)["hits"].([]any)[0].(map[string]any)["_source"]
	if diff := cmp.Diff(map[string]any{"title": "Blue whale"}, src); diff != "" {
		t.Errorf("_source filtering (-want +got):\n%s", diff)
	}
	if st, v := call(t, s, "POST", "/idx/_count", ""); st != 200 || v["count"] != 2.0 {
		t.Errorf("count: %d %v", st, v)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func hitIDs(v map[string]any) []string {
	var out []string
	hits, _ := v["hits"].(map[string]any)
	list, _ := hits["hits"].([]any)
	for _, h := range list {
		out = append(out, h.(map[string]any)["_id"].(string))
	}
	return out
}

func TestRefusals(t *testing.T) {
	es := NewServer(Options{})
	defer es.Close()
	osrv := NewServer(Options{Flavor: OpenSearch})
	defer osrv.Close()
	call(t, es, "PUT", "/idx", mapping)
	tests := []struct {
		name         string
		s            *Server
		method, path string
		body         string
		header       []string
		status       int
		typ          string
	}{
		{"index exists", es, "PUT", "/idx", mapping, nil, 400, "resource_already_exists_exception"},
		{"bad index name", es, "PUT", "/Idx", "", nil, 400, "invalid_index_name_exception"},
		{"knn setting on elasticsearch", es, "PUT", "/v", `{"settings": {"index": {"knn": true}}}`, nil, 400, "illegal_argument_exception"},
		{"dense_vector on opensearch", osrv, "PUT", "/v", `{"mappings": {"properties": {"v": {"type": "dense_vector", "dims": 3}}}}`, nil, 400, "mapper_parsing_exception"},
		{"knn_vector on elasticsearch", es, "PUT", "/v", `{"mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 3}}}}`, nil, 400, "mapper_parsing_exception"},
		{"unknown analyzer", es, "PUT", "/v", `{"mappings": {"properties": {"t": {"type": "text", "analyzer": "nope"}}}}`, nil, 400, "mapper_parsing_exception"},
		{"unknown similarity", es, "PUT", "/v", `{"mappings": {"properties": {"t": {"type": "text", "similarity": "nope"}}}}`, nil, 400, "mapper_parsing_exception"},
		{"unknown stemmer", es, "PUT", "/v", `{"settings": {"analysis": {"filter": {"s": {"type": "stemmer", "language": "klingon"}}}}}`, nil, 400, "illegal_argument_exception"},
		{"no final newline", es, "POST", "/idx/_bulk", `{"index":{"_id":"x"}}` + "\n" + `{"id":"x"}`, nil, 400, "illegal_argument_exception"},
		{"malformed action", es, "POST", "/idx/_bulk", "not json\n", nil, 400, "illegal_argument_exception"},
		{"missing index", es, "POST", "/nope/_search", "{}", nil, 404, "index_not_found_exception"},
		{"unknown query", es, "POST", "/idx/_search", `{"query": {"fuzzy_thing": {}}}`, nil, 400, "parsing_exception"},
		{"result window", es, "POST", "/idx/_search", `{"size": 10001}`, nil, 400, "illegal_argument_exception"},
		{"sort on text", es, "POST", "/idx/_search", `{"sort": ["title"]}`, nil, 400, "illegal_argument_exception"},
		{"static setting", es, "PUT", "/idx/_settings", `{"index": {"number_of_shards": 2}}`, nil, 400, "illegal_argument_exception"},
		{"compat media type on opensearch", osrv, "GET", "/", "", []string{"Accept", "application/vnd.elasticsearch+json;compatible-with=8"}, 406, ""},
		{"method", es, "DELETE", "/idx/_search", "", nil, 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, v := call(t, tt.s, tt.method, tt.path, tt.body, tt.header...)
			if st != tt.status || errType(v) != tt.typ {
				t.Errorf("got %d %q (%v), want %d %q", st, errType(v), v, tt.status, tt.typ)
			}
		})
	}
}

func TestInfoAndHeaders(t *testing.T) {
	for _, tt := range []struct {
		flavor, distribution, product string
	}{
		{Elasticsearch, "", "Elasticsearch"},
		{OpenSearch, "opensearch", ""},
	} {
		s := NewServer(Options{Flavor: tt.flavor})
		res, err := s.Client().Get(s.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Version struct {
				Number, Distribution string
			}
		}
		json.NewDecoder(res.Body).Decode(&v)
		res.Body.Close()
		if v.Version.Distribution != tt.distribution || v.Version.Number == "" {
			t.Errorf("%s: version %+v", tt.flavor, v.Version)
		}
		if got := res.Header.Get("X-Elastic-Product"); got != tt.product {
			t.Errorf("%s: X-Elastic-Product %q, want %q", tt.flavor, got, tt.product)
		}
		s.Close()
	}
}

func TestAuth(t *testing.T) {
	s := NewServer(Options{APIKey: "k", Username: "u", Password: "p"})
	defer s.Close()
	for _, tt := range []struct {
		auth   string
		status int
	}{
		{"", 401}, {"ApiKey k", 200}, {"APIKey k", 200}, {"ApiKey x", 401},
		{"Basic dTpw", 200}, {"Basic dTp4", 401}, {"Bearer k", 401},
	} {
		var h []string
		if tt.auth != "" {
			h = []string{"Authorization", tt.auth}
		}
		if st, _ := call(t, s, "GET", "/", "", h...); st != tt.status {
			t.Errorf("Authorization %q: got %d, want %d", tt.auth, st, tt.status)
		}
	}
}

func TestItemFaults(t *testing.T) {
	s := NewServer(Options{RejectItems: map[string]int{"a": 1}, BadItems: []string{"b"}})
	defer s.Close()
	call(t, s, "PUT", "/idx", mapping)
	body := `{"index":{"_id":"a"}}` + "\n" + `{"id":"a"}` + "\n" + `{"index":{"_id":"b"}}` + "\n" + `{"id":"b"}` + "\n"
	statuses := func() []string {
		_, v := call(t, s, "POST", "/idx/_bulk", body)
		var out []string
		for _, it := range v["items"].([]any) {
			r := it.(map[string]any)["index"].(map[string]any)
			out = append(out, jsonString(r["status"])+" "+errType(map[string]any{"error": r["error"]}))
		}
		return out
	}
	if diff := cmp.Diff([]string{"429 es_rejected_execution_exception", "400 mapper_parsing_exception"}, statuses()); diff != "" {
		t.Errorf("first try (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"201 ", "400 mapper_parsing_exception"}, statuses()); diff != "" {
		t.Errorf("second try (-want +got):\n%s", diff)
	}
}

func TestFaults(t *testing.T) {
	for _, tt := range []struct {
		f      Fault
		status int
	}{{TooManyRequests, 429}, {ServerError, 500}, {Unavailable, 503}} {
		s := NewServer(Options{Fault: func(r Request) Fault { return tt.f }})
		if st, _ := call(t, s, "GET", "/", ""); st != tt.status {
			t.Errorf("%v: got %d, want %d", tt.f, st, tt.status)
		}
		if r := s.Requests(); len(r) != 1 || r[0].Fault != tt.f || r[0].Status != tt.status {
			t.Errorf("%v: recorded %+v", tt.f, r)
		}
		s.Close()
	}
}
