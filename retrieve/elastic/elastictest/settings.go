package elastictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Index settings as the cluster keeps them: flat "index.*" keys with
// string values, checked when an index is created and when they change.

func (ix *index) refreshInterval() string {
	v, _ := ix.settings["index.refresh_interval"].(string)
	return v
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

// Settings an open index cannot change.
var staticSettings = []string{"index.number_of_shards", "index.similarity.", "index.analysis.", "index.knn"}

// Built-in analysis components the server accepts.
var (
	builtinAnalyzers = []string{"standard", "simple", "whitespace", "keyword", "english"}
	builtinFilters   = []string{"lowercase", "asciifolding", "porter_stem", "stop", "trim"}
	stemmerLanguages = []string{"english", "light_english", "minimal_english", "lovins", "porter2", "possessive_english"}
)

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
