package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedData returns the path of rel under the shared datasets, kept
// outside the repository at ../shared/data (beside the module root); it
// skips the test with a clear message when they are not there.
func SharedData(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("real data %s: module root not found above the working directory", rel)
		}
		dir = parent
	}
	path := filepath.Join(dir, "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real data not available (%v); it is kept outside the repository at ../shared/data", err)
	}
	return path
}
