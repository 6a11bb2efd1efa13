package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Instance returns a small JSON value valid against schema: required
// members only, the first enum or const value, the first branch of
// anyOf/oneOf, minItems items, minLength characters, minimum numbers, false
// and "" otherwise. It follows local $ref (#/$defs/..., #/definitions/...).
// It knows the subset of JSON Schema that structured output uses, not all
// of it.
func Instance(schema json.RawMessage) (json.RawMessage, error) {
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("llmtest: schema: %w", err)
	}
	v, err := instance(root, root, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

const maxDepth = 64

func instance(node, root any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("llmtest: schema nests too deep (recursive without a way out?)")
	}
	s, ok := node.(map[string]any)
	if !ok {
		// true, or a schema this generator cannot read: anything goes.
		return nil, nil
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := resolve(root, ref)
		if err != nil {
			return nil, err
		}
		return instance(target, root, depth+1)
	}
	if c, ok := s["const"]; ok {
		return c, nil
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0], nil
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if bs, ok := s[k].([]any); ok && len(bs) > 0 {
			return instance(bs[0], root, depth+1)
		}
	}
	typ := ""
	switch t := s["type"].(type) {
	case string:
		typ = t
	case []any:
		for _, x := range t {
			if name, ok := x.(string); ok && name != "null" {
				typ = name
				break
			}
		}
		if typ == "" && len(t) > 0 {
			typ = "null"
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		} else if _, ok := s["items"]; ok {
			typ = "array"
		}
	}
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		obj := map[string]any{}
		req, _ := s["required"].([]any)
		names := make([]string, 0, len(req))
		for _, r := range req {
			if name, ok := r.(string); ok {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			v, err := instance(props[name], root, depth+1)
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
		return obj, nil
	case "array":
		n := intOf(s["minItems"])
		arr := make([]any, 0, n)
		for range n {
			v, err := instance(s["items"], root, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case "string":
		return strings.Repeat("x", intOf(s["minLength"])), nil
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m, nil
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok {
			return m + 1, nil
		}
		if m, ok := s["maximum"].(float64); ok && m < 0 {
			return m, nil
		}
		return 0, nil
	case "boolean":
		return false, nil
	default:
		return nil, nil
	}
}

func intOf(v any) int {
	f, _ := v.(float64)
	if f < 0 || f > 1000 {
		return 0
	}
	return int(f)
}

func resolve(root any, ref string) (any, error) {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("llmtest: schema: only local $ref are supported, got %q", ref)
	}
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("llmtest: schema: cannot resolve %q", ref)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("llmtest: schema: cannot resolve %q", ref)
		}
	}
	return cur, nil
}
