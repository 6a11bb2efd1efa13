package elastictest

import (
	"fmt"
	"math"
	"net/http"
	"slices"
)

// Queries: the part of the query DSL that distill's searches send (match,
// term, terms, ids, bool), compiled into matchers over the visible
// documents.

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
	case "script_score":
		return s.scriptScore(ix, spec)
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
