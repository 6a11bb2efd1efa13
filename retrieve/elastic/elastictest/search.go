package elastictest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
)

// matcher says whether a document matches a query, and its score.
type matcher func(d *doc) (bool, float64)

// badRequest is a query the cluster refuses.
type badRequest struct {
	typ, reason string
}

func (e *badRequest) reply() reply { return errorReply(http.StatusBadRequest, e.typ, e.reason) }

func parsing(format string, args ...any) *badRequest {
	return &badRequest{"parsing_exception", fmt.Sprintf(format, args...)}
}

func illegal(format string, args ...any) *badRequest {
	return &badRequest{"illegal_argument_exception", fmt.Sprintf(format, args...)}
}

// hit is a matching document with its score.
type hit struct {
	d     *doc
	score float64
}

// maxResultWindow is the cluster's default index.max_result_window.
const maxResultWindow = 10000

func (s *Server) search(ix *index, rec Request) reply {
	if st := rec.Query.Get("search_type"); st != "" && st != "query_then_fetch" && st != "dfs_query_then_fetch" {
		return illegal("No search type for [%s]", st).reply()
	}
	body := map[string]any{}
	if len(bytes.TrimSpace(rec.Body)) > 0 {
		var err error
		if body, err = decodeJSON(rec.Body); err != nil {
			return errorReply(http.StatusBadRequest, "x_content_parse_exception", "[1:1] "+err.Error())
		}
	}
	size, from := 10, 0
	trackScores, trackTotal := false, true
	for k, v := range body {
		var ok bool
		switch k {
		case "size":
			size, ok = intOf(v)
		case "from":
			from, ok = intOf(v)
		case "track_scores":
			trackScores, ok = v.(bool)
		case "track_total_hits":
			switch x := v.(type) {
			case bool:
				trackTotal, ok = x, true
			case json.Number:
				trackTotal, ok = true, true
			}
		case "query", "sort", "_source":
			ok = true
		case "knn":
			ok = s.opts.Flavor == Elasticsearch
		}
		if !ok {
			return parsing("Unknown key for a %T in [%s].", v, k).reply()
		}
	}
	if size < 0 || from < 0 {
		return illegal("[from] and [size] must not be negative").reply()
	}
	if from+size > maxResultWindow {
		return illegal("Result window is too large, from + size must be less than or equal to: [%d] but was [%d]. See the scroll api for a more efficient way to request large data sets.", maxResultWindow, from+size).reply()
	}
	sortBy, e := parseSort(ix, body["sort"])
	if e != nil {
		return e.reply()
	}
	include, e := parseSource(body["_source"])
	if e != nil {
		return e.reply()
	}

	var hits []hit
	if knn, ok := body["knn"]; ok {
		if _, both := body["query"]; both {
			return illegal("elastictest does not combine a query with knn").reply()
		}
		if hits, e = s.topLevelKNN(ix, knn); e != nil {
			return e.reply()
		}
	} else {
		q, ok := body["query"]
		if !ok {
			q = map[string]any{"match_all": map[string]any{}}
		}
		m, e := s.compile(ix, q)
		if e != nil {
			return e.reply()
		}
		for _, d := range ix.visible {
			if ok, score := m(d); ok {
				hits = append(hits, hit{d, score})
			}
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return sortBy.compare(a, b) })

	total := len(hits)
	page := hits[min(from, len(hits)):min(from+size, len(hits))]
	showScore := sortBy.keys == nil || trackScores
	out := make([]any, len(page))
	var maxScore any
	if showScore && len(hits) > 0 {
		m := float32(hits[0].score)
		for _, h := range hits {
			m = max(m, float32(h.score))
		}
		maxScore = m
	}
	for i, h := range page {
		item := map[string]any{"_index": ix.name, "_id": h.d.id, "_score": nil}
		if showScore {
			item["_score"] = float32(h.score)
		}
		if src := include.apply(h.d); src != nil {
			item["_source"] = src
		}
		if sortBy.keys != nil {
			item["sort"] = sortBy.values(h)
		}
		out[i] = item
	}
	hitsObj := map[string]any{"max_score": maxScore, "hits": out}
	if trackTotal {
		hitsObj["total"] = map[string]any{"value": total, "relation": "eq"}
	}
	return jsonReply(http.StatusOK, map[string]any{"took": 1, "timed_out": false, "_shards": shards(), "hits": hitsObj})
}

func (s *Server) count(ix *index, rec Request) reply {
	q := any(map[string]any{"match_all": map[string]any{}})
	if len(bytes.TrimSpace(rec.Body)) > 0 {
		body, err := decodeJSON(rec.Body)
		if err != nil {
			return errorReply(http.StatusBadRequest, "x_content_parse_exception", err.Error())
		}
		if v, ok := body["query"]; ok {
			q = v
		}
	}
	m, e := s.compile(ix, q)
	if e != nil {
		return e.reply()
	}
	n := 0
	for _, d := range ix.visible {
		if ok, _ := m(d); ok {
			n++
		}
	}
	return jsonReply(http.StatusOK, map[string]any{"count": n, "_shards": shards()})
}

func intOf(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n.String())
	return i, err == nil
}

// one reads a query object: exactly one key.
func one(q any, what string) (string, any, *badRequest) {
	m, ok := q.(map[string]any)
	if !ok || len(m) != 1 {
		return "", nil, parsing("[%s] malformed query, expected a single key", what)
	}
	for k, v := range m {
		return k, v, nil
	}
	panic("unreachable")
}

// compile turns a query into a matcher over the visible documents.
func (s *Server) compile(ix *index, q any) (matcher, *badRequest) {
	kind, spec, e := one(q, "query")
	if e != nil {
		return nil, e
	}
	switch kind {
	case "match_all":
		return func(*doc) (bool, float64) { return true, 1 }, nil
	case "match":
		return s.match(ix, spec)
	case "term", "terms", "ids":
		return termsQuery(ix, kind, spec)
	case "bool":
		return s.boolQuery(ix, spec)
	case "knn":
		if s.opts.Flavor != OpenSearch {
			return nil, parsing("unknown query [knn]: use the top-level knn section")
		}
		return s.openSearchKNN(ix, spec)
	}
	return nil, parsing("unknown query [%s]", kind)
}

func (s *Server) match(ix *index, spec any) (matcher, *badRequest) {
	name, v, e := one(spec, "match")
	if e != nil {
		return nil, e
	}
	var text, operator string
	switch x := v.(type) {
	case string:
		text = x
	case map[string]any:
		for k, p := range x {
			switch k {
			case "query":
				t, ok := p.(string)
				if !ok {
					return nil, parsing("[match] query must be a string")
				}
				text = t
			case "operator":
				operator = fmt.Sprint(p)
			default:
				return nil, parsing("[match] query does not support [%s]", k)
			}
		}
	default:
		return nil, parsing("[match] malformed query")
	}
	f := ix.fields[name]
	if f == nil || !f.indexed {
		return func(*doc) (bool, float64) { return false, 0 }, nil
	}
	if f.typ == "keyword" {
		return func(d *doc) (bool, float64) { return slices.Contains(d.kw[name], text), 1 }, nil
	}
	if f.typ != "text" {
		return nil, illegal("field [%s] of type [%s] does not support match queries", name, f.typ)
	}
	terms := s.an.Terms(text)
	if len(terms) == 0 {
		return func(*doc) (bool, float64) { return false, 0 }, nil
	}
	// Collection statistics over the visible documents, as Lucene keeps
	// them per field: documents with the field, their total length, and
	// the document frequency of each query term.
	var n, total float64
	df := make(map[string]float64)
	for _, d := range ix.visible {
		dt := d.terms[name]
		if len(dt) == 0 {
			continue
		}
		n++
		total += float64(len(dt))
		seen := make(map[string]bool)
		for _, t := range dt {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	avg := total / max(n, 1)
	k1, b := f.k1, f.b
	and := operator == "and"
	return func(d *doc) (bool, float64) {
		dt := d.terms[name]
		if len(dt) == 0 {
			return false, 0
		}
		tf := make(map[string]float64)
		for _, t := range dt {
			tf[t]++
		}
		dl := float64(len(dt))
		var score float64
		matched := false
		for _, t := range terms {
			f := tf[t]
			if f == 0 {
				if and {
					return false, 0
				}
				continue
			}
			matched = true
			idf := math.Log(1 + (n-df[t]+0.5)/(df[t]+0.5))
			// Lucene's BM25 (no (k1+1) factor since Lucene 8), with exact
			// document lengths instead of Lucene's one-byte norms.
			score += idf * f / (f + k1*(1-b+b*dl/avg))
		}
		return matched, score
	}, nil
}

// termsQuery serves term, terms and ids.
func termsQuery(ix *index, kind string, spec any) (matcher, *badRequest) {
	m, ok := spec.(map[string]any)
	if !ok {
		return nil, parsing("[%s] malformed query", kind)
	}
	var name string
	var raw any
	for k, v := range m {
		if k == "boost" {
			continue
		}
		if name != "" {
			return nil, parsing("[%s] query does not support multiple fields", kind)
		}
		name, raw = k, v
	}
	if kind == "ids" {
		if name != "values" {
			return nil, parsing("[ids] query does not support [%s]", name)
		}
		name = "_id"
	}
	if kind == "term" {
		if obj, ok := raw.(map[string]any); ok {
			raw = obj["value"]
		}
		raw = []any{raw}
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, parsing("[%s] query does not support [%s]", kind, name)
	}
	want := make(map[string]bool, len(list))
	for _, v := range list {
		s, err := scalar(v)
		if err != nil {
			return nil, parsing("[%s] unexpected value %v", kind, v)
		}
		want[s] = true
	}
	if name != "_id" {
		if f := ix.fields[name]; f != nil && f.typ != "keyword" && f.typ != "text" {
			return nil, illegal("field [%s] of type [%s] does not support term queries", name, f.typ)
		}
	}
	return func(d *doc) (bool, float64) {
		if name == "_id" {
			return want[d.id], 1
		}
		for _, v := range d.kw[name] {
			if want[v] {
				return true, 1
			}
		}
		for _, v := range d.terms[name] {
			if want[v] {
				return true, 1
			}
		}
		return false, 0
	}, nil
}

func (s *Server) boolQuery(ix *index, spec any) (matcher, *badRequest) {
	m, ok := spec.(map[string]any)
	if !ok {
		return nil, parsing("[bool] malformed query")
	}
	var must, filter, should, mustNot []matcher
	minShould := -1
	for k, v := range m {
		var dst *[]matcher
		switch k {
		case "must":
			dst = &must
		case "filter":
			dst = &filter
		case "should":
			dst = &should
		case "must_not":
			dst = &mustNot
		case "minimum_should_match":
			n, ok := intOf(v)
			if !ok {
				return nil, parsing("[bool] minimum_should_match must be a number here")
			}
			minShould = n
			continue
		case "boost":
			continue
		default:
			return nil, parsing("[bool] query does not support [%s]", k)
		}
		clauses, ok := v.([]any)
		if !ok {
			clauses = []any{v}
		}
		for _, c := range clauses {
			cm, e := s.compile(ix, c)
			if e != nil {
				return nil, e
			}
			*dst = append(*dst, cm)
		}
	}
	if minShould < 0 {
		minShould = 0
		if len(should) > 0 && len(must) == 0 && len(filter) == 0 {
			minShould = 1
		}
	}
	return func(d *doc) (bool, float64) {
		var score float64
		for _, c := range must {
			ok, s := c(d)
			if !ok {
				return false, 0
			}
			score += s
		}
		for _, c := range filter {
			if ok, _ := c(d); !ok {
				return false, 0
			}
		}
		for _, c := range mustNot {
			if ok, _ := c(d); ok {
				return false, 0
			}
		}
		n := 0
		for _, c := range should {
			if ok, s := c(d); ok {
				n++
				score += s
			}
		}
		return n >= minShould, score
	}, nil
}

// filterOf compiles a kNN filter: a query or a list of queries, all of
// which must match.
func (s *Server) filterOf(ix *index, v any) (matcher, *badRequest) {
	if v == nil {
		return func(*doc) (bool, float64) { return true, 0 }, nil
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	var ms []matcher
	for _, q := range list {
		m, e := s.compile(ix, q)
		if e != nil {
			return nil, e
		}
		ms = append(ms, m)
	}
	return func(d *doc) (bool, float64) {
		for _, m := range ms {
			if ok, _ := m(d); !ok {
				return false, 0
			}
		}
		return true, 0
	}, nil
}

// nearest scores the visible documents that pass filter against vec and
// returns the best k, best first (ties in index order). The search is
// exact: an HNSW graph would find these or nearly these.
func nearest(ix *index, name string, vec []float64, k int, filter matcher, score func(dot, l2, cos float64) float64) []hit {
	var hits []hit
	var qn float64
	for _, x := range vec {
		qn += x * x
	}
	for _, d := range ix.visible {
		v, ok := d.vecs[name]
		if !ok {
			continue
		}
		if ok, _ := filter(d); !ok {
			continue
		}
		var dot, l2, vn float64
		for i, x := range v {
			dot += x * vec[i]
			l2 += (x - vec[i]) * (x - vec[i])
			vn += x * x
		}
		cos := dot / math.Sqrt(max(qn*vn, 1e-30))
		hits = append(hits, hit{d, score(dot, l2, cos)})
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	return hits[:min(k, len(hits))]
}

// topLevelKNN serves Elasticsearch's knn search section.
func (s *Server) topLevelKNN(ix *index, v any) ([]hit, *badRequest) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parsing("[knn] malformed: elastictest takes one knn object")
	}
	var name string
	var vec []float64
	k, nc := 10, -1
	var filter any
	for key, p := range m {
		switch key {
		case "field":
			name = fmt.Sprint(p)
		case "query_vector":
			if vec, ok = floats(p); !ok {
				return nil, parsing("[knn] query_vector must be a list of numbers")
			}
		case "k":
			if k, ok = intOf(p); !ok {
				return nil, parsing("[knn] k must be a number")
			}
		case "num_candidates":
			if nc, ok = intOf(p); !ok {
				return nil, parsing("[knn] num_candidates must be a number")
			}
		case "filter":
			filter = p
		case "boost":
		default:
			return nil, parsing("[knn] unknown field [%s]", key)
		}
	}
	if nc < 0 {
		nc = max(k, 10) * 3 / 2
	}
	switch {
	case k < 1:
		return nil, illegal("[k] must be greater than 0")
	case nc < k:
		return nil, illegal("[num_candidates] cannot be less than [k]")
	case nc > 10000:
		return nil, illegal("[num_candidates] cannot exceed [10000]")
	}
	f := ix.fields[name]
	if f == nil || f.typ != "dense_vector" || !f.vecIndexed {
		return nil, illegal("[knn] queries are only supported on [dense_vector] fields that are indexed, not [%s]", name)
	}
	if len(vec) != f.dims {
		return nil, illegal("The query vector has a different number of dimensions [%d] than the document vectors [%d].", len(vec), f.dims)
	}
	fm, e := s.filterOf(ix, filter)
	if e != nil {
		return nil, e
	}
	return nearest(ix, name, vec, k, fm, func(dot, l2, cos float64) float64 {
		switch f.vecSim {
		case "cosine":
			return (1 + cos) / 2
		case "l2_norm":
			return 1 / (1 + l2)
		case "max_inner_product":
			if dot < 0 {
				return 1 / (1 - dot)
			}
			return dot + 1
		}
		return (1 + dot) / 2
	}), nil
}

// openSearchKNN serves OpenSearch's knn query:
// {"knn": {FIELD: {"vector": [...], "k": K, "filter": {...}}}}.
func (s *Server) openSearchKNN(ix *index, spec any) (matcher, *badRequest) {
	name, v, e := one(spec, "knn")
	if e != nil {
		return nil, e
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parsing("[knn] malformed query")
	}
	var vec []float64
	k := 0
	var filter any
	for key, p := range m {
		switch key {
		case "vector":
			if vec, ok = floats(p); !ok {
				return nil, parsing("[knn] vector must be a list of numbers")
			}
		case "k":
			if k, ok = intOf(p); !ok {
				return nil, parsing("[knn] k must be a number")
			}
		case "filter":
			filter = p
		case "boost":
		default:
			return nil, parsing("[knn] unknown token [%s]", key)
		}
	}
	f := ix.fields[name]
	switch {
	case f == nil || f.typ != "knn_vector":
		return nil, illegal("Field '%s' is not knn_vector type.", name)
	case k < 1:
		return nil, illegal("[knn] requires k > 0")
	case len(vec) != f.dims:
		return nil, illegal("Query vector has invalid dimension: %d. Dimension should be: %d", len(vec), f.dims)
	}
	fm, e := s.filterOf(ix, filter)
	if e != nil {
		return nil, e
	}
	top := nearest(ix, name, vec, k, fm, func(dot, l2, cos float64) float64 {
		switch f.vecSim {
		case "l2":
			return 1 / (1 + l2)
		case "cosinesimil":
			return (1 + cos) / 2
		}
		if dot > 0 {
			return 1 + dot
		}
		return 1 / (1 - dot)
	})
	scores := make(map[*doc]float64, len(top))
	for _, h := range top {
		scores[h.d] = h.score
	}
	return func(d *doc) (bool, float64) {
		s, ok := scores[d]
		return ok, s
	}, nil
}

// sortSpec is a parsed sort: keys in order; nil keys mean by score, then
// index order.
type sortSpec struct {
	keys []sortKey
}

type sortKey struct {
	field string // "_score" or a keyword field
	desc  bool
}

func parseSort(ix *index, v any) (sortSpec, *badRequest) {
	if v == nil {
		return sortSpec{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	var spec sortSpec
	for _, e := range list {
		var key sortKey
		switch x := e.(type) {
		case string:
			key.field = x
			key.desc = x == "_score"
		case map[string]any:
			if len(x) != 1 {
				return spec, parsing("[sort] malformed")
			}
			for f, o := range x {
				key.field = f
				order := ""
				switch y := o.(type) {
				case string:
					order = y
				case map[string]any:
					order, _ = y["order"].(string)
				}
				switch order {
				case "":
					key.desc = f == "_score"
				case "desc":
					key.desc = true
				case "asc":
				default:
					return spec, illegal("Unknown SortOrder [%s]", order)
				}
			}
		default:
			return spec, parsing("[sort] malformed")
		}
		if key.field != "_score" {
			f := ix.fields[key.field]
			switch {
			case f == nil:
				return spec, &badRequest{"query_shard_exception", "No mapping found for [" + key.field + "] in order to sort on"}
			case f.typ == "text":
				return spec, illegal("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead.")
			case f.typ != "keyword":
				return spec, illegal("elastictest sorts on keyword fields only, not [%s]", key.field)
			}
		}
		spec.keys = append(spec.keys, key)
	}
	return spec, nil
}

func (sp sortSpec) compare(a, b hit) int {
	if sp.keys == nil {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.d.seq, b.d.seq))
	}
	for _, k := range sp.keys {
		var c int
		if k.field == "_score" {
			c = cmp.Compare(a.score, b.score)
		} else {
			av, bv := first(a.d.kw[k.field]), first(b.d.kw[k.field])
			switch {
			case av == nil && bv == nil:
			case av == nil:
				return 1 // missing values sort last
			case bv == nil:
				return -1
			default:
				c = cmp.Compare(*av, *bv)
			}
		}
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(a.d.seq, b.d.seq)
}

func (sp sortSpec) values(h hit) []any {
	out := make([]any, len(sp.keys))
	for i, k := range sp.keys {
		if k.field == "_score" {
			out[i] = float32(h.score)
		} else if v := first(h.d.kw[k.field]); v != nil {
			out[i] = *v
		}
	}
	return out
}

func first(vs []string) *string {
	if len(vs) == 0 {
		return nil
	}
	return &vs[0]
}

// sourceFilter is a parsed _source parameter.
type sourceFilter struct {
	none     bool
	includes []string // nil: all fields
}

func parseSource(v any) (sourceFilter, *badRequest) {
	switch x := v.(type) {
	case nil:
		return sourceFilter{}, nil
	case bool:
		return sourceFilter{none: !x}, nil
	case string:
		return sourceFilter{includes: []string{x}}, nil
	case []any:
		f := sourceFilter{includes: []string{}}
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return f, parsing("[_source] expected strings")
			}
			f.includes = append(f.includes, s)
		}
		return f, nil
	case map[string]any:
		f := sourceFilter{}
		if inc, ok := x["includes"]; ok {
			sub, e := parseSource(inc)
			if e != nil {
				return f, e
			}
			f.includes = sub.includes
		}
		return f, nil
	}
	return sourceFilter{}, parsing("[_source] malformed")
}

// apply returns the filtered source of d (nil when none is wanted).
func (f sourceFilter) apply(d *doc) any {
	if f.none {
		return nil
	}
	if f.includes == nil {
		return json.RawMessage(d.source)
	}
	out := make(map[string]any)
	for _, k := range f.includes {
		if v, ok := d.src[k]; ok {
			out[k] = v
		}
	}
	return out
}
