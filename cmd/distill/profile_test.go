package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// hold keeps the test's allocation reachable while the profiler samples.
var hold []byte

// peakAllocation allocates 64 MiB, holds it while the live heap is
// sampled, and lets it go before the command ends: only a profile taken at
// the peak shows it.
func peakAllocation() {
	hold = make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	runtime.GC() // the live heap metric is measured by a collection
	time.Sleep(400 * time.Millisecond)
	hold = nil
	runtime.GC()
}

// readProfile returns a profile's decompressed bytes (runtime/pprof writes
// gzipped protocol buffers, whose string table holds function names).
func readProfile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not a gzipped profile: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	cmd := &cli.Command{Name: "work", Action: func(*cli.Context) error {
		peakAllocation()
		return nil
	}}
	r := runCommands(t, []*cli.Command{cmd}, "--cpuprofile", cpu, "--memprofile", mem, "work")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if b := readProfile(t, cpu); len(b) == 0 {
		t.Error("empty CPU profile")
	}
	if b := readProfile(t, mem); !bytes.Contains(b, []byte("peakAllocation")) {
		t.Error("the heap profile does not show the allocation held at the peak (peakAllocation)")
	}

	// The profile kept is the one taken while the 64 MiB were live, not
	// the one at the end, when they are gone.
	p := &profiler{memPath: filepath.Join(dir, "peak.pprof"), stop: make(chan struct{}), done: make(chan struct{})}
	go p.watchHeap()
	peakAllocation()
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	if p.peak < 64<<20 {
		t.Errorf("profile kept at a live heap of %d bytes, want at least the 64 MiB held", p.peak)
	}

	// A profile that cannot be written is an error of the run.
	r = runCommands(t, []*cli.Command{cmd}, "--cpuprofile", filepath.Join(dir, "no", "such", "dir"), "work")
	if r.code == 0 || !bytes.Contains([]byte(r.stderr), []byte("--cpuprofile")) {
		t.Errorf("unwritable --cpuprofile: exit %d, stderr %q; want an error naming the flag", r.code, r.stderr)
	}
}
