package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/distill-rag/distill/data"
)

// ErrVerdict is the cause of every ParseVerdict error, for callers that
// count parse failures with errors.Is.
var ErrVerdict = errors.New("bad verdict")

// ParseVerdict reads a verdict from a JSON object of the judge's schema,
// {"sufficient": bool, "gap_items": [{"category", "target", "slot",
// "description"}]}. It is strict where the method is: "sufficient" must be
// present and a boolean, "gap_items" (optional, null meaning none) must be a
// list of objects whose four fields, when present, are strings. Other keys
// are ignored. Gap items of a sufficient verdict are dropped, as the method
// says. Finding the JSON object inside a model's free text is the caller's
// business.
func ParseVerdict(raw []byte) (data.Verdict, error) {
	var v struct {
		Sufficient json.RawMessage   `json:"sufficient"`
		GapItems   []json.RawMessage `json:"gap_items"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return data.Verdict{}, fmt.Errorf("%w: %w", ErrVerdict, err)
	}
	var out data.Verdict
	switch string(bytes.TrimSpace(v.Sufficient)) {
	case "true":
		out.Sufficient = true
	case "false":
	case "", "null":
		return data.Verdict{}, fmt.Errorf("%w: no \"sufficient\" field", ErrVerdict)
	default:
		return data.Verdict{}, fmt.Errorf("%w: \"sufficient\" is %s, want true or false", ErrVerdict, truncate(string(v.Sufficient), 40))
	}
	if out.Sufficient {
		return out, nil
	}
	for i, rawItem := range v.GapItems {
		var g data.GapItem
		if err := json.Unmarshal(rawItem, &g); err != nil || !isObject(rawItem) {
			return data.Verdict{}, fmt.Errorf("%w: gap item %d is not an object of strings", ErrVerdict, i)
		}
		out.GapItems = append(out.GapItems, g)
	}
	return out, nil
}

// isObject reports whether raw JSON is an object (not null, which
// json.Unmarshal accepts into a struct).
func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// VerdictJSON returns the verdict as the judge writes it, the completion of
// a training example: {"sufficient": ..., "gap_items": [{"category",
// "target", "slot", "description"}]} with the members in that order, an
// empty list when there are no gap items (always when sufficient), and no
// HTML escaping. ParseVerdict reads it back to the same verdict.
func VerdictJSON(v data.Verdict) string {
	type gap struct {
		Category    string `json:"category"`
		Target      string `json:"target"`
		Slot        string `json:"slot"`
		Description string `json:"description"`
	}
	out := struct {
		Sufficient bool  `json:"sufficient"`
		GapItems   []gap `json:"gap_items"`
	}{Sufficient: v.Sufficient, GapItems: []gap{}}
	if !v.Sufficient {
		for _, g := range v.GapItems {
			out.GapItems = append(out.GapItems, gap(g))
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		panic("judge: VerdictJSON: " + err.Error()) // strings and a bool always encode
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// VerdictJSONSpaced is VerdictJSON with a space after every ',' and ':'
// between members and items, as Python's json.dumps writes by default:
// the authors' training targets. ParseVerdict reads it as it reads
// VerdictJSON.
func VerdictJSONSpaced(v data.Verdict) string {
	compact := VerdictJSON(v)
	var b strings.Builder
	b.Grow(len(compact) + 16)
	inString, escaped := false, false
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		b.WriteByte(c)
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}
