package llm

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// SchemaFor returns a strict JSON Schema for T, which must be a struct (or
// a pointer to one), named name (letters, digits, "_" and "-", at most 64).
//
// The schema follows OpenAI's strict mode: every object lists all its
// properties as required and forbids others; properties keep the order of
// the struct's fields (models write them in that order). Field names and
// "-" come from json tags as encoding/json reads them, embedded structs are
// flattened; a `description:"..."` tag describes a field and an
// `enum:"a,b,c"` tag restricts a string (or the strings of a slice). A
// pointer field may be null. Maps, interfaces, channels, functions and
// recursive types are refused: strict mode cannot say them.
func SchemaFor[T any](name string) (Schema, error) {
	if !validSchemaName(name) {
		return Schema{}, fmt.Errorf("llm: schema name %q: want 1-64 letters, digits, _ or -", name)
	}
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return Schema{}, fmt.Errorf("llm: schema %s: root type %s is not a struct", name, t)
	}
	n, err := schemaOf(t, map[reflect.Type]bool{})
	if err != nil {
		return Schema{}, fmt.Errorf("llm: schema %s: %w", name, err)
	}
	b, err := json.Marshal(n)
	if err != nil {
		return Schema{}, fmt.Errorf("llm: schema %s: %w", name, err)
	}
	return Schema{Name: name, Schema: b}, nil
}

func validSchemaName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// schemaNode is one JSON Schema, marshalled with its keys in a fixed order
// and its properties in field order.
type schemaNode struct {
	Type        []string
	Description string
	Enum        []any
	Props       []schemaProp
	IsObject    bool
	Items       *schemaNode
}

type schemaProp struct {
	Name string
	Node *schemaNode
}

func (n *schemaNode) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(key string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(vb)
		return nil
	}
	var err error
	if len(n.Type) == 1 {
		err = field("type", n.Type[0])
	} else {
		err = field("type", n.Type)
	}
	if err == nil && n.Description != "" {
		err = field("description", n.Description)
	}
	if err == nil && n.Enum != nil {
		err = field("enum", n.Enum)
	}
	if err == nil && n.IsObject {
		err = field("properties", orderedProps(n.Props))
		if err == nil {
			req := make([]string, len(n.Props))
			for i, p := range n.Props {
				req[i] = p.Name
			}
			err = field("required", req)
		}
		if err == nil {
			err = field("additionalProperties", false)
		}
	}
	if err == nil && n.Items != nil {
		err = field("items", n.Items)
	}
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type orderedProps []schemaProp

func (ps orderedProps) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.Name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.Node)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

func schemaOf(t reflect.Type, visiting map[reflect.Type]bool) (*schemaNode, error) {
	if t.Kind() == reflect.Pointer {
		n, err := schemaOf(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		if len(n.Type) == 1 {
			n.Type = append(n.Type, "null")
			if n.Enum != nil {
				n.Enum = append(n.Enum, nil)
			}
		}
		return n, nil
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		if t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
			return &schemaNode{Type: []string{"string"}}, nil
		}
		return nil, fmt.Errorf("type %s marshals itself: its schema is unknown", t)
	}
	if t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return &schemaNode{Type: []string{"string"}}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return &schemaNode{Type: []string{"string"}}, nil
	case reflect.Bool:
		return &schemaNode{Type: []string{"boolean"}}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schemaNode{Type: []string{"integer"}}, nil
	case reflect.Float32, reflect.Float64:
		return &schemaNode{Type: []string{"number"}}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &schemaNode{Type: []string{"string"}}, nil // base64, as encoding/json writes it
		}
		items, err := schemaOf(t.Elem(), visiting)
		if err != nil {
			return nil, err
		}
		return &schemaNode{Type: []string{"array"}, Items: items}, nil
	case reflect.Struct:
		if visiting[t] {
			return nil, fmt.Errorf("type %s is recursive", t)
		}
		visiting[t] = true
		defer delete(visiting, t)
		n := &schemaNode{Type: []string{"object"}, IsObject: true}
		seen := map[string]bool{}
		if err := addFields(n, t, visiting, seen); err != nil {
			return nil, err
		}
		return n, nil
	default:
		return nil, fmt.Errorf("type %s (%s) has no strict JSON Schema", t, t.Kind())
	}
}

// addFields appends the JSON properties of struct t to n, flattening
// untagged embedded structs as encoding/json does.
func addFields(n *schemaNode, t reflect.Type, visiting map[reflect.Type]bool, seen map[string]bool) error {
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		ft := f.Type
		if f.Anonymous && f.Tag.Get("json") == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if err := addFields(n, et, visiting, seen); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if seen[name] {
			return fmt.Errorf("field %s.%s: duplicate JSON name %q", t, f.Name, name)
		}
		seen[name] = true
		p, err := schemaOf(ft, visiting)
		if err != nil {
			return fmt.Errorf("field %s.%s: %w", t, f.Name, err)
		}
		if d := f.Tag.Get("description"); d != "" {
			p.Description = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			target := p
			for target.Items != nil {
				target = target.Items
			}
			if target.Type[0] != "string" {
				return fmt.Errorf("field %s.%s: enum on a %s", t, f.Name, target.Type[0])
			}
			for _, v := range strings.Split(e, ",") {
				target.Enum = append(target.Enum, v)
			}
			if len(target.Type) > 1 {
				target.Enum = append(target.Enum, nil)
			}
		}
		n.Props = append(n.Props, schemaProp{Name: name, Node: p})
	}
	return nil
}

// jsonName returns the JSON member name of f, and false for fields that
// encoding/json skips.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if !f.IsExported() && !(f.Anonymous && name == "") {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}
