//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPeersShared runs the peers command on the shared datasets' slices
// with every engine, as make bench-peers does without generated corpora:
// each engine builds and searches, and distill built as Pyserini is (Lucene's
// lengths, Porter's stemmer) agrees with it on at least 0.99 of the top 10.
// make e2e-peers installs the peers and sets DISTILL_PEERS_PYTHON.
func TestPeersShared(t *testing.T) {
	python := os.Getenv("DISTILL_PEERS_PYTHON")
	if python == "" {
		t.Skip("set DISTILL_PEERS_PYTHON to the peers' Python (make e2e-peers)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(root, "..", "shared", "data")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("no shared datasets in %s", shared)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "peers")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	jsonPath := filepath.Join(dir, "peers.json")
	cmd := exec.Command(exe, "-sizes", "", "-python", python, "-shared", shared, "-dir", dir, "-json", jsonPath)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("peers: %v", err)
	}
	t.Logf("\n%s", out)
	rows, err := readRows(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), 3*len(allEngines); got != want {
		t.Fatalf("got %d rows, want %d (3 corpora x %d engines)", got, want, len(allEngines))
	}
	for _, r := range rows {
		if r.Error != "" {
			t.Errorf("%s on %s: %s", r.Engine, r.Corpus, r.Error)
			continue
		}
		if r.QPSSingle <= 0 || r.QPSBatch <= 0 || r.Overlap10 == nil {
			t.Errorf("%s on %s: no figures: %+v", r.Engine, r.Corpus, r)
			continue
		}
		if r.Engine == engineDistillLucene && *r.Overlap10 < 0.99 {
			t.Errorf("%s on %s: overlap@10 with Pyserini %.4f, want at least 0.99", r.Engine, r.Corpus, *r.Overlap10)
		}
	}
}
