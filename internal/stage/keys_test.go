package stage

import (
	"fmt"
	"testing"
)

func TestKeyMap(t *testing.T) {
	type key struct {
		id    string
		round int32
	}
	var m keyMap[key, int]
	if _, ok := m.get(key{"a", 0}); ok {
		t.Fatal("the empty map holds a key")
	}
	if m.len() != 0 {
		t.Fatalf("empty map of %d keys", m.len())
	}
	const n = 10000
	for i := range n {
		m.set(key{fmt.Sprint("q", i), int32(i % 3)}, i)
	}
	m.set(key{"q7", 1}, -7) // q7's round is 1: replaced
	if m.len() != n {
		t.Fatalf("%d keys, want %d", m.len(), n)
	}
	for i := range n {
		// The key is built anew: the map holds its content, not the
		// string it was first given.
		want := i
		if i == 7 {
			want = -7
		}
		if v, ok := m.get(key{fmt.Sprint("q", i), int32(i % 3)}); !ok || v != want {
			t.Fatalf("key %d: got %d, %v, want %d", i, v, ok, want)
		}
		if _, ok := m.get(key{fmt.Sprint("q", i), int32(i%3 + 1)}); ok {
			t.Fatalf("key %d found with another round", i)
		}
	}
	if _, ok := m.get(key{"q", 0}); ok {
		t.Fatal("found a key never set")
	}
}
