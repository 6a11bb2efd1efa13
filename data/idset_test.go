package data

import (
	"fmt"
	"runtime"
	"testing"
)

func TestIDSet(t *testing.T) {
	var s IDSet
	if s.Has("a") || s.Len() != 0 {
		t.Fatal("the zero set is not empty")
	}
	const n = 100_000
	for i := range n {
		if !s.Add(fmt.Sprintf("question-%08d", i)) {
			t.Fatalf("id %d taken for one added before", i)
		}
	}
	for i := range n {
		id := fmt.Sprintf("question-%08d", i)
		if !s.Has(id) || s.Add(id) {
			t.Fatalf("id %d not found again", i)
		}
	}
	if s.Has("question-x") || s.Has("") {
		t.Error("an id never added is in the set")
	}
	if !s.Add("") || s.Add("") {
		t.Error("the empty id is not an id like the others")
	}
	if s.Len() != n+1 {
		t.Errorf("Len %d, want %d", s.Len(), n+1)
	}
}

// TestIDSetMemory checks that the set does not keep the ids: its memory
// per id stays well under that of a set of the strings themselves.
func TestIDSetMemory(t *testing.T) {
	const n = 200_000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var s IDSet
	for i := range n {
		// Each id a string of its own, as a decoded row's, that only the
		// set could keep.
		s.Add(fmt.Sprintf("5a8b57f25542995d1e6f1371-%08d", i))
	}
	perID := float64(heap()-before) / n
	runtime.KeepAlive(&s)
	t.Logf("%.1f bytes an id", perID)
	if perID > 48 {
		t.Errorf("%.1f bytes an id: the set holds more than its hashes", perID)
	}
}
