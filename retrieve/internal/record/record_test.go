package record

import (
	"errors"
	"slices"
	"testing"
)

func TestBodyRoundTrip(t *testing.T) {
	tests := []struct {
		text      string
		sentences []string
	}{
		{"", nil},
		{"One. Two.", []string{"One.", "Two."}},
		{"One. Two.", []string{"Two.", "One."}}, // not in order: stored as strings
		{"abc", []string{"x"}},
	}
	for _, tt := range tests {
		b := AppendBody(AppendString(nil, "id"), tt.text, tt.sentences)
		r := Reader{B: b}
		if id := string(r.Bytes()); id != "id" {
			t.Fatalf("id %q", id)
		}
		text, sentences := r.Body()
		if r.Err != nil || text != tt.text || !slices.Equal(sentences, tt.sentences) || len(r.B) != 0 {
			t.Errorf("%q %q: got %q %q, %v", tt.text, tt.sentences, text, sentences, r.Err)
		}
		// Every truncation is an error, never a panic.
		for n := range len(b) {
			r := Reader{B: b[:n]}
			r.Bytes()
			r.Body()
			if n < len(b) && r.Err == nil && len(tt.sentences) > 0 {
				t.Errorf("truncated at %d of %d: no error", n, len(b))
			}
			if r.Err != nil && !errors.Is(r.Err, ErrCorrupt) {
				t.Errorf("error %v", r.Err)
			}
		}
	}
}
