package elastictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// index is one index: its settings, mapping and documents.
type index struct {
	name     string
	settings map[string]any // flat "index.*" keys; values string or []string
	mappings json.RawMessage
	strict   bool
	fields   map[string]*field
	docs     map[string]*doc
	seq      int
	// visible are the documents a search sees, in index order: those
	// stored at the last refresh.
	visible []*doc
}

// field is one mapped field.
type field struct {
	name, typ  string
	indexed    bool // text and keyword: whether searchable
	analyzer   string
	similarity string
	k1, b      float64
	copyTo     []string
	ignoreAbv  int
	dims       int    // dense_vector dims, knn_vector dimension
	vecSim     string // dot_product, cosine, innerproduct, ...
	vecIndexed bool
}

// doc is one stored document.
type doc struct {
	id     string
	seq    int
	source json.RawMessage
	src    map[string]any
	terms  map[string][]string // text field -> analysed terms
	kw     map[string][]string // keyword field -> values
	vecs   map[string][]float64
}

// refresh makes every stored document visible, in index order.
func (ix *index) refresh() {
	ix.visible = ix.visible[:0]
	for _, d := range ix.docs {
		ix.visible = append(ix.visible, d)
	}
	slices.SortFunc(ix.visible, func(a, b *doc) int { return a.seq - b.seq })
}

// decodeJSON reads a JSON object keeping numbers exact.
func decodeJSON(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

func (s *Server) create(rec Request) reply {
	name := rec.Index
	if _, ok := s.indices[name]; ok {
		return errorReply(http.StatusBadRequest, "resource_already_exists_exception", "index ["+name+"/elastictest] already exists")
	}
	if name == "" || strings.ToLower(name) != name || strings.ContainsAny(name, `\/*?"<>| ,#:`) || strings.ContainsAny(name[:1], "-_+") {
		return errorReply(http.StatusBadRequest, "invalid_index_name_exception", "Invalid index name ["+name+"]")
	}
	body := map[string]any{}
	if len(bytes.TrimSpace(rec.Body)) > 0 {
		var err error
		if body, err = decodeJSON(rec.Body); err != nil {
			return errorReply(http.StatusBadRequest, "x_content_parse_exception", err.Error())
		}
	}
	for k := range body {
		if k != "settings" && k != "mappings" && k != "aliases" {
			return errorReply(http.StatusBadRequest, "parse_exception", "unknown key ["+k+"] for create index")
		}
	}
	ix := &index{name: name, fields: make(map[string]*field), docs: make(map[string]*doc), mappings: json.RawMessage(`{}`)}
	settings, _ := body["settings"].(map[string]any)
	flat, err := flatten(settings)
	if err != nil {
		return errorReply(http.StatusBadRequest, "illegal_argument_exception", err.Error())
	}
	ix.settings = flat
	if e := s.checkSettings(ix); e != nil {
		return *e
	}
	if ix.settings["index.number_of_shards"] == nil {
		ix.settings["index.number_of_shards"] = "1"
	}
	if ix.settings["index.number_of_replicas"] == nil {
		ix.settings["index.number_of_replicas"] = "1"
	}
	if m, ok := body["mappings"].(map[string]any); ok {
		if e := s.parseMappings(ix, m); e != nil {
			return *e
		}
		ix.mappings, _ = json.Marshal(m)
	}
	s.indices[name] = ix
	return jsonReply(http.StatusOK, map[string]any{"acknowledged": true, "shards_acknowledged": true, "index": name})
}

// updateMeta serves PUT /{index}/_mapping for a body that changes only
// the mapping's _meta, which replaces the old one; other changes are
// refused (a real node would merge them: nothing here sends any).
func (ix *index) updateMeta(body []byte) reply {
	m, err := decodeJSON(body)
	if err != nil {
		return errorReply(http.StatusBadRequest, "x_content_parse_exception", err.Error())
	}
	meta, ok := m["_meta"].(map[string]any)
	if !ok || len(m) != 1 {
		return errorReply(http.StatusBadRequest, "illegal_argument_exception", "elastictest: only {\"_meta\": {...}} mapping updates are served")
	}
	var mappings map[string]any
	if err := json.Unmarshal(ix.mappings, &mappings); err != nil {
		return errorReply(http.StatusInternalServerError, "exception", err.Error())
	}
	mappings["_meta"] = meta
	ix.mappings, _ = json.Marshal(mappings)
	return jsonReply(http.StatusOK, map[string]any{"acknowledged": true})
}

// parseMappings reads {"dynamic": ..., "properties": {...}}.
func (s *Server) parseMappings(ix *index, m map[string]any) *reply {
	bad := func(reason string) *reply {
		r := errorReply(http.StatusBadRequest, "mapper_parsing_exception", reason)
		return &r
	}
	for k, v := range m {
		switch k {
		case "dynamic":
			ix.strict = fmt.Sprint(v) == "strict"
		case "properties", "_source", "_meta":
		default:
			return bad("Root mapping definition has unsupported parameters:  [" + k + " : " + fmt.Sprint(v) + "]")
		}
	}
	props, _ := m["properties"].(map[string]any)
	for name, raw := range props {
		spec, ok := raw.(map[string]any)
		if !ok {
			return bad("Expected map for property [" + name + "]")
		}
		if e := s.parseField(ix, name, spec, bad); e != nil {
			return e
		}
	}
	for _, f := range ix.fields {
		for _, t := range f.copyTo {
			if ix.fields[t] == nil {
				return bad(fmt.Sprintf("Cannot copy to field [%s] since it is mapped as an object or is not defined", t))
			}
		}
	}
	return nil
}

func (s *Server) parseField(ix *index, name string, spec map[string]any, bad func(string) *reply) *reply {
	typ, _ := spec["type"].(string)
	f := &field{name: name, typ: typ, indexed: true, analyzer: "standard", similarity: "BM25", k1: 1.2, b: 0.75}
	unknownType := bad(fmt.Sprintf("No handler for type [%s] declared on field [%s]", typ, name))
	switch typ {
	case "text", "keyword":
	case "dense_vector":
		if s.opts.Flavor == OpenSearch {
			return unknownType
		}
		f.vecIndexed = true
	case "knn_vector":
		if s.opts.Flavor != OpenSearch {
			return unknownType
		}
	default:
		return unknownType
	}
	for k, v := range spec {
		switch k {
		case "type":
		case "index":
			if typ == "dense_vector" {
				f.vecIndexed = fmt.Sprint(v) == "true"
			} else {
				f.indexed = fmt.Sprint(v) != "false"
			}
		case "analyzer", "search_analyzer":
			if typ != "text" {
				return bad(fmt.Sprintf("unknown parameter [%s] on mapper [%s] of type [%s]", k, name, typ))
			}
			if !ix.analyzerDefined(fmt.Sprint(v)) {
				return bad(fmt.Sprintf("analyzer [%v] has not been configured in mappings", v))
			}
			f.analyzer = fmt.Sprint(v)
		case "similarity":
			if typ == "dense_vector" {
				continue // the vector similarity, read below
			}
			if msg := f.setSimilarity(ix, fmt.Sprint(v)); msg != "" {
				return bad(msg)
			}
		case "copy_to":
			switch t := v.(type) {
			case string:
				f.copyTo = []string{t}
			case []any:
				for _, e := range t {
					f.copyTo = append(f.copyTo, fmt.Sprint(e))
				}
			}
		case "ignore_above":
			n, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil || typ != "keyword" {
				return bad(fmt.Sprintf("bad ignore_above [%v] on field [%s]", v, name))
			}
			f.ignoreAbv = n
		case "fields":
			subs, _ := v.(map[string]any)
			for sub, raw := range subs {
				spec, ok := raw.(map[string]any)
				if !ok {
					return bad("Expected map for multi-field [" + sub + "]")
				}
				if e := s.parseField(ix, name+"."+sub, spec, bad); e != nil {
					return e
				}
			}
		case "dims", "dimension":
			if (k == "dims") != (typ == "dense_vector") {
				return bad(fmt.Sprintf("unknown parameter [%s] on mapper [%s] of type [%s]", k, name, typ))
			}
			n, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil || n < 1 || n > 4096 {
				return bad(fmt.Sprintf("The number of dimensions should be in the range [1, 4096] but was [%v]", v))
			}
			f.dims = n
		case "method":
			if typ != "knn_vector" {
				return bad(fmt.Sprintf("unknown parameter [method] on mapper [%s] of type [%s]", name, typ))
			}
			if msg := f.setMethod(v); msg != "" {
				return bad(msg)
			}
		default:
			return bad(fmt.Sprintf("unknown parameter [%s] on mapper [%s] of type [%s]", k, name, typ))
		}
	}
	if msg := f.finishVector(spec); msg != "" {
		return bad(msg)
	}
	ix.fields[name] = f
	return nil
}

// setSimilarity sets a text field's similarity, with the k1 and b the
// index settings give it; it returns why it cannot.
func (f *field) setSimilarity(ix *index, sim string) string {
	if sim != "BM25" && sim != "boolean" && ix.settings["index.similarity."+sim+".type"] == nil {
		return fmt.Sprintf("Unknown Similarity type [%s] for field [%s]", sim, f.name)
	}
	f.similarity = sim
	if k1, ok := ix.settings["index.similarity."+sim+".k1"]; ok {
		f.k1, _ = strconv.ParseFloat(fmt.Sprint(k1), 64)
	}
	if b, ok := ix.settings["index.similarity."+sim+".b"]; ok {
		f.b, _ = strconv.ParseFloat(fmt.Sprint(b), 64)
	}
	return ""
}

// setMethod reads an OpenSearch knn_vector's method; it returns why it
// cannot.
func (f *field) setMethod(v any) string {
	mm, _ := v.(map[string]any)
	f.vecSim, _ = mm["space_type"].(string)
	if f.vecSim != "innerproduct" && f.vecSim != "l2" && f.vecSim != "cosinesimil" {
		return fmt.Sprintf("Invalid space type [%v]", mm["space_type"])
	}
	if e, _ := mm["engine"].(string); e != "faiss" && e != "lucene" && e != "nmslib" {
		return fmt.Sprintf("Invalid engine [%v]", mm["engine"])
	}
	return ""
}

// finishVector checks a vector field's dimensions and similarity, and
// fills in their defaults; it returns what is wrong.
func (f *field) finishVector(spec map[string]any) string {
	switch f.typ {
	case "dense_vector":
		sim, _ := spec["similarity"].(string)
		switch {
		case f.dims == 0:
			return "Missing required parameter [dims] for field [" + f.name + "]"
		case sim != "dot_product" && sim != "cosine" && sim != "l2_norm" && sim != "max_inner_product":
			return fmt.Sprintf("Unknown value [%s] for field [similarity]", sim)
		}
		f.vecSim = sim
		f.similarity = ""
	case "knn_vector":
		if f.dims == 0 {
			return "Dimension value missing for vector: " + f.name
		}
		if f.vecSim == "" {
			f.vecSim = "l2"
		}
	}
	return ""
}
