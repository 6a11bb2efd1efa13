package elastictest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// kNN search in both flavours' syntax, exact over the stored vectors.

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

// The two exact-search scripts package elastic sends, one per flavour.
const (
	esDotScript = "dotProduct(params.query_vector, 'vector') + 1.0"
	osKNNScript = "knn_score"
)

// scriptScore serves a script_score query whose script is one of the two
// exact inner-product scripts package elastic sends: Elasticsearch's
// painless dotProduct + 1, or the OpenSearch k-NN plugin's knn_score with
// the innerproduct space (dot + 1, or 1 / (1 - dot) below zero). Other
// scripts are refused.
func (s *Server) scriptScore(ix *index, spec any) (matcher, *badRequest) {
	m, ok := spec.(map[string]any)
	if !ok {
		return nil, parsing("[script_score] malformed query")
	}
	inner, e := s.filterOf(ix, m["query"])
	if e != nil {
		return nil, e
	}
	script, _ := m["script"].(map[string]any)
	params, _ := script["params"].(map[string]any)
	source, _ := script["source"].(string)
	lang, _ := script["lang"].(string)
	var name, want string
	var vec []float64
	switch {
	case s.opts.Flavor == OpenSearch && lang == "knn" && source == osKNNScript:
		name, want = fmt.Sprint(params["field"]), "knn_vector"
		vec, ok = floats(params["query_value"])
		if !ok || params["space_type"] != "innerproduct" {
			return nil, illegal("elastictest: knn_score wants query_value and space_type innerproduct")
		}
	case s.opts.Flavor != OpenSearch && (lang == "" || lang == "painless") && source == esDotScript:
		name, want = fieldVectorName, "dense_vector"
		if vec, ok = floats(params["query_vector"]); !ok {
			return nil, illegal("elastictest: params.query_vector must be a list of numbers")
		}
	default:
		return nil, illegal("elastictest serves only package elastic's exact-search scripts, not lang [%s] source [%s]", lang, source)
	}
	f := ix.fields[name]
	if f == nil || f.typ != want {
		return nil, illegal("field [%s] is not a [%s] field", name, want)
	}
	if len(vec) != f.dims {
		return nil, illegal("query vector of %d dimensions, the field has %d", len(vec), f.dims)
	}
	return func(d *doc) (bool, float64) {
		v, has := d.vecs[name]
		if ok, _ := inner(d); !ok || !has {
			return false, 0
		}
		var dot float64
		for i, x := range v {
			dot += x * vec[i]
		}
		if dot < 0 && s.opts.Flavor == OpenSearch {
			return true, 1 / (1 - dot)
		}
		return true, dot + 1
	}, nil
}

// fieldVectorName is the vector field's name in package elastic's mapping.
const fieldVectorName = "vector"
