package llm

import (
	"encoding/json"
	"log/slog"
)

// Secret holds an API key. It prints, logs and marshals as "[redacted]"
// (or "" when empty) so that a key never reaches a log line or run.json;
// only the client reads its value.
type Secret string

const redacted = "[redacted]"

func (s Secret) display() string {
	if s == "" {
		return ""
	}
	return redacted
}

// String redacts the key.
func (s Secret) String() string { return s.display() }

// GoString redacts the key under %#v.
func (s Secret) GoString() string { return `llm.Secret("` + s.display() + `")` }

// LogValue redacts the key in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.display()) }

// MarshalJSON redacts the key in JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.display()) }

// MarshalText redacts the key in text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.display()), nil }
