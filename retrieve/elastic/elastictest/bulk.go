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

// _bulk: documents parsed against the mapping, stored and analysed.

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
