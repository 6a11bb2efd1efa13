package elastictest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
)

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

	hits, e := s.matches(ix, body)
	if e != nil {
		return e.reply()
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

// matches returns the documents that a search body's query or knn
// matches, with their scores, in the index's order.
func (s *Server) matches(ix *index, body map[string]any) ([]hit, *badRequest) {
	if knn, ok := body["knn"]; ok {
		if _, both := body["query"]; both {
			return nil, illegal("elastictest does not combine a query with knn")
		}
		return s.topLevelKNN(ix, knn)
	}
	q, ok := body["query"]
	if !ok {
		q = map[string]any{"match_all": map[string]any{}}
	}
	m, e := s.compile(ix, q)
	if e != nil {
		return nil, e
	}
	var hits []hit
	for _, d := range ix.visible {
		if ok, score := m(d); ok {
			hits = append(hits, hit{d, score})
		}
	}
	return hits, nil
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
