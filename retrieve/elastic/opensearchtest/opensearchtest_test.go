package opensearchtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	text := "export DISTILL_ES_URL=http://127.0.0.1:41234\nexport DISTILL_ES_USERNAME=distill\n# a comment\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readEnv(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"DISTILL_ES_URL": "http://127.0.0.1:41234", "DISTILL_ES_USERNAME": "distill"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readEnv (-want +got):\n%s", diff)
	}
	if _, err := readEnv(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("readEnv of a missing file: got no error")
	}
}

func TestAddress(t *testing.T) {
	n := &Node{URL: "http://127.0.0.1:41234"}
	if got, want := n.Address("wiki"), "es://127.0.0.1:41234/wiki"; got != want {
		t.Errorf("Address = %q, want %q", got, want)
	}
}

func TestScriptIsThere(t *testing.T) {
	if _, err := os.Stat(Script()); err != nil {
		t.Errorf("scripts/opensearch: %v", err)
	}
}
