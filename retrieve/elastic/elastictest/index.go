package elastictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
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

func (ix *index) refreshInterval() string {
	v, _ := ix.settings["index.refresh_interval"].(string)
	return v
}

// refresh makes every stored document visible, in index order.
func (ix *index) refresh() {
	ix.visible = ix.visible[:0]
	for _, d := range ix.docs {
		ix.visible = append(ix.visible, d)
	}
	slices.SortFunc(ix.visible, func(a, b *doc) int { return a.seq - b.seq })
}

// flatten turns settings into flat "index.*" keys with string values, as
// the cluster stores them. A null value stays nil (it resets a setting).
func flatten(v map[string]any) (map[string]any, error) {
	out := make(map[string]any)
	var walk func(prefix string, v any) error
	walk = func(prefix string, v any) error {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				if err := walk(key, e); err != nil {
					return err
				}
			}
		case []any:
			list := make([]string, len(x))
			for i, e := range x {
				s, err := scalar(e)
				if err != nil {
					return fmt.Errorf("setting [%s]: %w", prefix, err)
				}
				list[i] = s
			}
			out[prefix] = list
		case nil:
			out[prefix] = nil
		default:
			s, err := scalar(x)
			if err != nil {
				return fmt.Errorf("setting [%s]: %w", prefix, err)
			}
			out[prefix] = s
		}
		return nil
	}
	if err := walk("", v); err != nil {
		return nil, err
	}
	fixed := make(map[string]any, len(out))
	for k, v := range out {
		if !strings.HasPrefix(k, "index.") {
			k = "index." + k
		}
		fixed[k] = v
	}
	return fixed, nil
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case json.Number:
		return x.String(), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("unexpected value %v", v)
}

// nest turns flat settings back into the nested form GET answers with.
func nest(flat map[string]any) map[string]any {
	out := make(map[string]any)
	for k, v := range flat {
		parts := strings.Split(k, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = make(map[string]any)
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	return out
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

// Settings an open index cannot change.
var staticSettings = []string{"index.number_of_shards", "index.similarity.", "index.analysis.", "index.knn"}

// Built-in analysis components the server accepts.
var (
	builtinAnalyzers = []string{"standard", "simple", "whitespace", "keyword", "english"}
	builtinFilters   = []string{"lowercase", "asciifolding", "porter_stem", "stop", "trim"}
	stemmerLanguages = []string{"english", "light_english", "minimal_english", "lovins", "porter2", "possessive_english"}
)

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

// checkSettings validates what the server understands of the settings.
func (s *Server) checkSettings(ix *index) *reply {
	bad := func(reason string) *reply {
		r := errorReply(http.StatusBadRequest, "illegal_argument_exception", reason)
		return &r
	}
	for k, v := range ix.settings {
		if k == "index.knn" && s.opts.Flavor != OpenSearch {
			return bad("unknown setting [index.knn] please check that any required plugins are installed, or check the breaking changes documentation for removed settings")
		}
		if k == "index.number_of_shards" || k == "index.number_of_replicas" {
			n, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil || n < 0 || (k == "index.number_of_shards" && n < 1) {
				return bad(fmt.Sprintf("Failed to parse value [%v] for setting [%s]", v, k))
			}
		}
	}
	// Similarities.
	for k, v := range ix.settings {
		rest, ok := strings.CutPrefix(k, "index.similarity.")
		if !ok {
			continue
		}
		name, key, _ := strings.Cut(rest, ".")
		switch key {
		case "type":
			if v != "BM25" && v != "boolean" {
				return bad(fmt.Sprintf("Unknown Similarity type [%v] for [%s]", v, name))
			}
		case "k1", "b":
			f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
			if err != nil || f < 0 || (key == "b" && f > 1) {
				return bad(fmt.Sprintf("illegal %s value: %v, must be a non-negative finite value", key, v))
			}
		case "discount_overlaps":
		default:
			return bad(fmt.Sprintf("Unknown settings for similarity of type [BM25]: [%s]", key))
		}
	}
	// Analysis: every filter an analyzer names is built in or defined.
	for k, v := range ix.settings {
		rest, ok := strings.CutPrefix(k, "index.analysis.")
		if !ok {
			continue
		}
		kind, rest, _ := strings.Cut(rest, ".")
		name, key, _ := strings.Cut(rest, ".")
		switch {
		case kind == "analyzer" && key == "filter":
			list, _ := v.([]string)
			if s, ok := v.(string); ok {
				list = []string{s}
			}
			for _, f := range list {
				if !slices.Contains(builtinFilters, f) && ix.settings["index.analysis.filter."+f+".type"] == nil {
					return bad(fmt.Sprintf("failed to find global token filter under [%s]", f))
				}
			}
		case kind == "analyzer" && key == "tokenizer":
			if v != "standard" && v != "whitespace" && v != "keyword" {
				return bad(fmt.Sprintf("failed to find global tokenizer under [%v]", v))
			}
		case kind == "filter" && key == "type":
			switch v {
			case "stemmer":
				lang := ix.settings["index.analysis.filter."+name+".language"]
				if lang == nil {
					lang = ix.settings["index.analysis.filter."+name+".name"]
				}
				if !slices.Contains(stemmerLanguages, fmt.Sprint(lang)) {
					return bad(fmt.Sprintf("Unknown stemmer language [%v]", lang))
				}
			case "stop", "lowercase", "porter_stem", "asciifolding":
			default:
				return bad(fmt.Sprintf("Unknown token filter type [%v] for [%s]", v, name))
			}
		}
	}
	return nil
}

func (ix *index) analyzerDefined(name string) bool {
	return slices.Contains(builtinAnalyzers, name) || ix.settings["index.analysis.analyzer."+name+".type"] != nil ||
		ix.settings["index.analysis.analyzer."+name+".tokenizer"] != nil
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
		case "properties", "_source":
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
			sim := fmt.Sprint(v)
			if sim != "BM25" && sim != "boolean" && ix.settings["index.similarity."+sim+".type"] == nil {
				return bad(fmt.Sprintf("Unknown Similarity type [%s] for field [%s]", sim, name))
			}
			f.similarity = sim
			if k1, ok := ix.settings["index.similarity."+sim+".k1"]; ok {
				f.k1, _ = strconv.ParseFloat(fmt.Sprint(k1), 64)
			}
			if b, ok := ix.settings["index.similarity."+sim+".b"]; ok {
				f.b, _ = strconv.ParseFloat(fmt.Sprint(b), 64)
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
			mm, _ := v.(map[string]any)
			f.vecSim, _ = mm["space_type"].(string)
			if f.vecSim != "innerproduct" && f.vecSim != "l2" && f.vecSim != "cosinesimil" {
				return bad(fmt.Sprintf("Invalid space type [%v]", mm["space_type"]))
			}
			if e, _ := mm["engine"].(string); e != "faiss" && e != "lucene" && e != "nmslib" {
				return bad(fmt.Sprintf("Invalid engine [%v]", mm["engine"]))
			}
		default:
			return bad(fmt.Sprintf("unknown parameter [%s] on mapper [%s] of type [%s]", k, name, typ))
		}
	}
	if typ == "dense_vector" {
		sim, _ := spec["similarity"].(string)
		switch {
		case f.dims == 0:
			return bad("Missing required parameter [dims] for field [" + name + "]")
		case sim != "dot_product" && sim != "cosine" && sim != "l2_norm" && sim != "max_inner_product":
			return bad(fmt.Sprintf("Unknown value [%s] for field [similarity]", sim))
		}
		f.vecSim = sim
		f.similarity = ""
	}
	if typ == "knn_vector" && f.dims == 0 {
		return bad("Dimension value missing for vector: " + name)
	}
	if typ == "knn_vector" && f.vecSim == "" {
		f.vecSim = "l2"
	}
	ix.fields[name] = f
	return nil
}

func (ix *index) updateSettings(body []byte) reply {
	m, err := decodeJSON(body)
	if err != nil {
		return errorReply(http.StatusBadRequest, "x_content_parse_exception", err.Error())
	}
	if inner, ok := m["settings"].(map[string]any); ok && len(m) == 1 {
		m = inner
	}
	flat, err := flatten(m)
	if err != nil {
		return errorReply(http.StatusBadRequest, "illegal_argument_exception", err.Error())
	}
	for k := range flat {
		for _, p := range staticSettings {
			if k == p || (strings.HasSuffix(p, ".") && strings.HasPrefix(k, p)) {
				return errorReply(http.StatusBadRequest, "illegal_argument_exception", "Can't update non dynamic settings [["+k+"]] for open indices [["+ix.name+"]]")
			}
		}
	}
	for k, v := range flat {
		if v == nil {
			delete(ix.settings, k)
		} else {
			ix.settings[k] = v
		}
	}
	if ix.refreshInterval() != "-1" {
		ix.refresh()
	}
	return jsonReply(http.StatusOK, map[string]any{"acknowledged": true})
}

// itemError is one bulk item's failure.
type itemError struct {
	status      int
	typ, reason string
}

// bulk serves _bulk: NDJSON action and source lines in, one result per
// action out.
func (s *Server) bulk(rec Request) reply {
	body := rec.Body
	if len(body) == 0 {
		return errorReply(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: no requests added;")
	}
	if body[len(body)-1] != '\n' {
		return errorReply(http.StatusBadRequest, "illegal_argument_exception", "The bulk request must be terminated by a newline [\\n]")
	}
	lines := bytes.Split(body[:len(body)-1], []byte{'\n'})
	type result struct {
		action, index, id string
		status            int
		result            string
		err               *itemError
	}
	var results []result
	touched := make(map[*index]bool)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		meta, err := decodeJSON(line)
		if err != nil || len(meta) != 1 {
			return errorReply(http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf("Malformed action/metadata line [%d], expected START_OBJECT or END_OBJECT", i+1))
		}
		var action string
		var params map[string]any
		for k, v := range meta {
			action = k
			params, _ = v.(map[string]any)
		}
		if action != "index" && action != "create" && action != "delete" {
			return errorReply(http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf("Malformed action/metadata line [%d], expected one of [create, delete, index, update] but found [%s]", i+1, action))
		}
		r := result{action: action, index: rec.Index}
		if v, ok := params["_index"].(string); ok {
			r.index = v
		}
		if v, ok := params["_id"].(string); ok {
			r.id = v
		}
		if r.index == "" {
			return errorReply(http.StatusBadRequest, "action_request_validation_exception", "Validation Failed: 1: index is missing;")
		}
		var source []byte
		if action != "delete" {
			i++
			if i >= len(lines) {
				return errorReply(http.StatusBadRequest, "illegal_argument_exception", fmt.Sprintf("Validation Failed: 1: no source for action [%s] on line [%d];", action, i))
			}
			source = lines[i]
		}
		ix, ok := s.indices[r.index]
		if !ok {
			r.status, r.err = http.StatusNotFound, &itemError{http.StatusNotFound, "index_not_found_exception", "no such index [" + r.index + "]"}
			results = append(results, r)
			continue
		}
		if r.id == "" && action != "delete" {
			ix.seq++
			r.id = fmt.Sprintf("auto-%d", ix.seq)
		}
		if action == "delete" {
			if _, ok := ix.docs[r.id]; ok {
				delete(ix.docs, r.id)
				r.status, r.result = http.StatusOK, "deleted"
			} else {
				r.status, r.result = http.StatusNotFound, "not_found"
			}
			touched[ix] = true
			results = append(results, r)
			continue
		}
		if e := s.indexDoc(ix, action, r.id, source); e != nil {
			r.status, r.err = e.status, e
		} else {
			r.status, r.result = http.StatusCreated, "created"
			touched[ix] = true
		}
		results = append(results, r)
	}
	for ix := range touched {
		if ix.refreshInterval() != "-1" {
			ix.refresh()
		}
	}
	items := make([]any, len(results))
	anyErr := false
	for i, r := range results {
		item := map[string]any{"_index": r.index, "_id": r.id, "status": r.status}
		if r.err != nil {
			anyErr = true
			item["error"] = map[string]any{"type": r.err.typ, "reason": r.err.reason, "index": r.index}
		} else {
			item["result"] = r.result
			item["_version"] = 1
			item["_shards"] = map[string]any{"total": 1, "successful": 1, "failed": 0}
		}
		items[i] = map[string]any{r.action: item}
	}
	return jsonReply(http.StatusOK, map[string]any{"took": 1, "errors": anyErr, "items": items})
}

// indexDoc parses and stores one document, or says why it cannot.
func (s *Server) indexDoc(ix *index, action, id string, source []byte) *itemError {
	if s.bad[id] {
		return &itemError{http.StatusBadRequest, "mapper_parsing_exception", "failed to parse (injected by elastictest)"}
	}
	if n := s.opts.RejectItems[id]; s.rejected[id] < n {
		s.rejected[id]++
		return &itemError{http.StatusTooManyRequests, "es_rejected_execution_exception",
			"rejected execution of primary operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0] (injected by elastictest)"}
	}
	if _, ok := ix.docs[id]; ok && action == "create" {
		return &itemError{http.StatusConflict, "version_conflict_engine_exception", fmt.Sprintf("[%s]: version conflict, document already exists (current version [1])", id)}
	}
	parseErr := func(reason string) *itemError {
		return &itemError{http.StatusBadRequest, s.parseError(), reason}
	}
	src, err := decodeJSON(source)
	if err != nil {
		return parseErr(fmt.Sprintf("failed to parse: %v", err))
	}
	d := &doc{id: id, source: slices.Clone(source), src: src, terms: map[string][]string{}, kw: map[string][]string{}, vecs: map[string][]float64{}}
	for name, v := range src {
		f := ix.fields[name]
		if f == nil {
			if ix.strict {
				return &itemError{http.StatusBadRequest, "strict_dynamic_mapping_exception",
					fmt.Sprintf("[1:2] mapping set to strict, dynamic introduction of [%s] within [_doc] is not allowed", name)}
			}
			continue
		}
		preview := fmt.Sprint(v)
		if len(preview) > 40 {
			preview = preview[:40]
		}
		failField := parseErr(fmt.Sprintf("failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s'", name, f.typ, id, preview))
		switch f.typ {
		case "text", "keyword":
			values, ok := strings_(v)
			if !ok {
				return failField
			}
			targets := append([]string{name}, f.copyTo...)
			for sub := range ix.fields {
				if strings.HasPrefix(sub, name+".") {
					targets = append(targets, sub)
				}
			}
			for _, t := range targets {
				tf := ix.fields[t]
				for _, val := range values {
					s.indexValue(d, tf, val)
				}
			}
		case "dense_vector", "knn_vector":
			vec, ok := floats(v)
			if !ok {
				return failField
			}
			if len(vec) != f.dims {
				if f.typ == "knn_vector" {
					return parseErr(fmt.Sprintf("Vector dimension mismatch. Expected: %d, Given: %d", f.dims, len(vec)))
				}
				return parseErr(fmt.Sprintf("The [dense_vector] field [%s] in doc [document with id '%s'] has a different number of dimensions [%d] than defined in the mapping [%d]", name, id, len(vec), f.dims))
			}
			if f.vecSim == "dot_product" {
				var sq float64
				for _, x := range vec {
					sq += x * x
				}
				if math.Abs(float64(float32(sq))-1) > 1e-4 {
					return parseErr(fmt.Sprintf("The [dot_product] similarity can only be used with unit-length vectors. Preview of invalid vector: %s", preview))
				}
			}
			d.vecs[name] = vec
		}
	}
	ix.seq++
	d.seq = ix.seq
	ix.docs[id] = d
	return nil
}

// indexValue indexes one value into a text or keyword field.
func (s *Server) indexValue(d *doc, f *field, val string) {
	if f == nil || !f.indexed {
		return
	}
	switch f.typ {
	case "text":
		// Every analyzer is distill's English analyzer here.
		d.terms[f.name] = append(d.terms[f.name], s.an.Terms(val)...)
	case "keyword":
		if f.ignoreAbv == 0 || len([]rune(val)) <= f.ignoreAbv {
			d.kw[f.name] = append(d.kw[f.name], val)
		}
	}
}

// strings_ reads a text or keyword value: a string, a number, null or a
// list of those.
func strings_(v any) ([]string, bool) {
	switch x := v.(type) {
	case nil:
		return nil, true
	case string:
		return []string{x}, true
	case json.Number:
		return []string{x.String()}, true
	case bool:
		return []string{strconv.FormatBool(x)}, true
	case []any:
		var out []string
		for _, e := range x {
			s, ok := strings_(e)
			if !ok || len(s) > 1 {
				return nil, false
			}
			out = append(out, s...)
		}
		return out, true
	}
	return nil, false
}

func floats(v any) ([]float64, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]float64, len(list))
	for i, e := range list {
		n, ok := e.(json.Number)
		if !ok {
			return nil, false
		}
		f, err := n.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}
