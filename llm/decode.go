package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ParseError is a model answer that could not be read as the JSON object
// the caller wanted, even after one re-ask. Callers record it (it is a
// failure of one item, not of the run).
type ParseError struct {
	// Outputs are the raw answers that failed, in the order received.
	Outputs []string
	// Reason says what was wrong with the last one.
	Reason string
	// Err is the underlying decoding error, if any.
	Err error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("llm: model output not usable after %d answers: %s", len(e.Outputs), e.Reason)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrCutOff is the reason for an answer that the server cut off at the
// token limit (finish reason "length") before it was usable; a
// *ParseError of such an answer wraps it.
var ErrCutOff = errors.New("the reply was cut off at the token limit before a complete answer")

// errNoJSON is the reason for an answer holding no JSON object at all.
var errNoJSON = errors.New("the reply contains no JSON object")

// ExtractJSON returns the first JSON object in text: text itself when it is
// one (surrounding white space aside), else the first balanced, valid
// object that starts at a "{" of text, which finds objects inside code
// fences or prose. It reports false when there is none.
//
// When no object is valid as written, it looks again with the control
// characters inside strings escaped (a raw newline in a string becomes
// \n): small models write them, and some servers' grammars let them
// through. The result is a substring of text, or of text with those
// characters escaped.
func ExtractJSON(text string) (string, bool) {
	if obj, ok := firstObject(text, false); ok {
		return obj, true
	}
	return firstObject(text, true)
}

// firstObject returns the first valid JSON object that starts at a "{" of
// text; with escape, each candidate is read with the control characters
// inside its strings escaped.
func firstObject(text string, escape bool) (string, bool) {
	if escape && !hasControl(text) {
		return "", false
	}
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			break
		}
		i += j
		candidate := text[i:]
		if escape {
			candidate = escapeControls(candidate)
		}
		var raw json.RawMessage
		if err := json.NewDecoder(strings.NewReader(candidate)).Decode(&raw); err == nil {
			// The decoder reads exactly one value, starting at candidate[0].
			return candidate[:len(raw)], true
		}
		i++
	}
	return "", false
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 }) >= 0
}

// escapeControls escapes the control characters inside the JSON strings of
// s, which starts outside a string; the rest of s is kept as it is.
func escapeControls(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !inString:
			inString = c == '"'
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inString = false
		case c < 0x20:
			b.WriteString(controlEscape(c))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func controlEscape(c byte) string {
	switch c {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	return fmt.Sprintf(`\u%04x`, c)
}

// DecodeJSON asks c and decodes the JSON object of the answer into v, a
// non-nil pointer. The object may sit in prose or a code fence; members v
// does not know are ignored, but type mismatches, and missing or null
// members that v's struct fields do not mark omitempty, are errors. On
// such an error it asks once more, showing the model its answer and what
// was wrong; if that fails too it returns a *ParseError holding both
// answers. An answer cut off at the token limit is not asked again (the
// same limit would cut the next one, at twice the cost: small models that
// run on until the limit do so again); its *ParseError holds it alone.
// v is only written on success.
//
// The Response is the last one received, with the usage of both calls
// and Reasked set when there was a re-ask. Errors of c are returned as they are.
func DecodeJSON(ctx context.Context, c Chatter, req Request, v any) (Response, error) {
	return decodeJSON(ctx, c, req, v, true)
}

// DecodeJSONOnce is DecodeJSON without the second request: an unusable
// answer is a *ParseError holding it.
func DecodeJSONOnce(ctx context.Context, c Chatter, req Request, v any) (Response, error) {
	return decodeJSON(ctx, c, req, v, false)
}

func decodeJSON(ctx context.Context, c Chatter, req Request, v any, reask bool) (Response, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return Response{}, fmt.Errorf("llm: DecodeJSON needs a non-nil pointer, got %T", v)
	}
	resp, err := c.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	first := resp
	perr := decodeInto(resp, rv)
	if perr == nil {
		return resp, nil
	}
	if resp.FinishReason == "length" {
		// The lenient extraction may have found an inner object (a gap
		// item, say) of the cut answer: the reason is the cut.
		cut := fmt.Errorf("%w (%v)", ErrCutOff, perr)
		return resp, &ParseError{Outputs: []string{resp.Content}, Reason: cut.Error(), Err: cut}
	}
	if !reask {
		return resp, &ParseError{Outputs: []string{resp.Content}, Reason: perr.Error(), Err: perr}
	}

	again := req
	again.Messages = RepairMessages(req.Messages, resp.Content, "Your reply could not be used: "+perr.Error()+
		". Reply again with only the JSON object, with every required field and the right types, and nothing else.")
	resp, err = c.Chat(ctx, again)
	if err != nil {
		return first, fmt.Errorf("re-ask after unusable output: %w", err)
	}
	resp.Usage.PromptTokens += first.Usage.PromptTokens
	resp.Usage.CompletionTokens += first.Usage.CompletionTokens
	resp.Reasked = true
	perr2 := decodeInto(resp, rv)
	if perr2 == nil {
		return resp, nil
	}
	return resp, &ParseError{
		Outputs: []string{first.Content, resp.Content},
		Reason:  perr2.Error(),
		Err:     perr2,
	}
}

// RepairMessages returns the messages of a request asked once more: the
// request's messages, the model's unusable reply as the assistant's turn,
// and complaint, the user's turn saying what was wrong. An empty reply has
// no turn of its own (an assistant message without content breaks some
// servers' chat templates); the complaint then says the reply was empty.
// msgs is not changed.
func RepairMessages(msgs []Message, reply, complaint string) []Message {
	out := slices.Clip(msgs)
	if strings.TrimSpace(reply) == "" {
		return append(out, Message{Role: "user", Content: "Your reply was empty. " + complaint})
	}
	return append(out, Message{Role: "assistant", Content: reply}, Message{Role: "user", Content: complaint})
}

// decodeInto decodes the answer into a fresh value and stores it in *rv
// only when nothing was wrong.
func decodeInto(resp Response, rv reflect.Value) error {
	obj, ok := ExtractJSON(resp.Content)
	if !ok {
		return errNoJSON
	}
	t := rv.Type().Elem()
	fresh := reflect.New(t)
	if err := json.Unmarshal([]byte(obj), fresh.Interface()); err != nil {
		return err
	}
	var generic any
	if err := json.Unmarshal([]byte(obj), &generic); err != nil {
		return err
	}
	if err := checkPresent(generic, t, ""); err != nil {
		return err
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// checkPresent reports the first member of val that t's struct fields
// require (no omitempty) but that is missing or null.
func checkPresent(val any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		if val == nil {
			return nil
		}
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := val.(map[string]any)
		if !ok {
			return nil // a type mismatch; json.Unmarshal has said so
		}
		return checkFields(m, t, path)
	case reflect.Slice, reflect.Array:
		a, ok := val.([]any)
		if !ok {
			return nil
		}
		for i, e := range a {
			if err := checkPresent(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkFields(m map[string]any, t reflect.Type, path string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		if f.Anonymous && f.Tag.Get("json") == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if err := checkFields(m, et, path); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		val, present := lookupMember(m, name)
		_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		optional := slices.Contains(strings.Split(opts, ","), "omitempty")
		switch {
		case !present && !optional:
			return fmt.Errorf("member %q is missing", p)
		case present && val == nil && !optional && !nullable(f.Type):
			return fmt.Errorf("member %q is null", p)
		}
		if err := checkPresent(val, f.Type, p); err != nil {
			return err
		}
	}
	return nil
}

// lookupMember finds name in m as encoding/json does: exactly, else
// ignoring case.
func lookupMember(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}
