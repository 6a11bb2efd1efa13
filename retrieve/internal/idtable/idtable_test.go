package idtable

import (
	"fmt"
	"strings"
	"testing"
)

func TestBuildAndLookup(t *testing.T) {
	ids := make([][]byte, 1000)
	for i := range ids {
		ids[i] = fmt.Appendf(nil, "doc-%d", i)
	}
	idOf := func(row int) []byte { return ids[row] }
	table, err := Build(len(ids), idOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != Size(len(ids)) || len(table) < 2*len(ids) || len(table)&(len(table)-1) != 0 {
		t.Errorf("table of %d slots for %d ids: want a power of two at least twice as many", len(table), len(ids))
	}
	for row, id := range ids {
		if got := Lookup(table, string(id), idOf); got != row {
			t.Fatalf("Lookup(%s): got %d, want %d", id, got, row)
		}
	}
	if got := Lookup(table, "doc-x", idOf); got != -1 {
		t.Errorf("unknown id: got %d, want -1", got)
	}
	if got := Lookup(nil, "doc-1", idOf); got != -1 {
		t.Errorf("empty table: got %d, want -1", got)
	}
	// A damaged table with no empty slot ends the probe all the same.
	full := make([]uint32, 4)
	for i := range full {
		full[i] = 1
	}
	if got := Lookup(full, "doc-x", idOf); got != -1 {
		t.Errorf("full table: got %d, want -1", got)
	}
}

func TestBuildFindsDuplicates(t *testing.T) {
	ids := []string{"a", "b", "a"}
	_, err := Build(len(ids), func(row int) []byte { return []byte(ids[row]) })
	if err == nil || !strings.Contains(err.Error(), `duplicate doc id "a" (passages 1 and 3)`) {
		t.Errorf("got %v, want the duplicate named with its passages", err)
	}
}
