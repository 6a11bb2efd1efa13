package testkit

import (
	"os"
	"testing"
)

// DirNames returns the names of the entries of dir, sorted, failing the
// test if it cannot be read.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
