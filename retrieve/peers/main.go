// Command peers holds distill's BM25 index against the retrieval engines a
// user would pick instead, on the same corpora and the same queries in one
// run, and prints one Markdown table:
//
//	make bench-peers                       # installs the peers, then runs this
//	go run ./retrieve/peers -python .cache/peers/venv/bin/python -sizes 1000000
//
// Corpora: generated passages at each of -sizes (package synth: 100-word
// passages, seeded, nothing downloaded; 1,000 queries of 4-8 words), and
// the shared HotpotQA, 2WikiMultiHopQA and MuSiQue slices searched with
// their datasets' questions (-shared; skipped when absent). Engines (-engines):
// distill as built by default (Porter2, exact lengths), distill with
// --lucene-norms --stemmer porter (Lucene's analysis and lengths, the one
// held to Pyserini), Pyserini (Anserini's Lucene), PISA (pyterrier-pisa),
// bm25s and tantivy, the last four through peers.py in the Python of
// -python. Each engine builds and searches in processes of its own, so that
// each peak resident memory is its own. Per engine and corpus: build
// seconds, index size, peak RSS of the build and of the search, queries/s
// one at a time on one thread and in batch on both cores, p50 and p99
// latency (one at a time, wall time, the faster of two timed passes after a
// warm-up pass), and the mean overlap of its top 10 with Pyserini's. The
// same figures go to -json as a list of objects; `go test -run
// TestPeersDense ./retrieve/dense` adds the dense rows (FAISS) to that file,
// and -print FILE prints the tables of a file without measuring.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Engines, in the order of the table.
const (
	engineDistill       = "distill"
	engineDistillLucene = "distill-lucene"
	enginePyserini      = "pyserini"
)

var allEngines = []string{engineDistill, engineDistillLucene, enginePyserini, "pisa", "bm25s", "tantivy"}

type config struct {
	sizes   []int
	engines []string
	python  string
	script  string
	shared  string
	dir     string
	queries int
	json    string
	real    bool
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	var c config
	var sizes, engines, phase, print string
	fs.StringVar(&sizes, "sizes", "1000000,5000000", "comma-separated sizes of the generated corpora (passages); empty for none")
	fs.StringVar(&engines, "engines", strings.Join(allEngines, ","), "comma-separated engines")
	fs.StringVar(&c.python, "python", ".cache/peers/venv/bin/python", "the Python that has the peers installed (make bench-peers)")
	fs.StringVar(&c.shared, "shared", "../shared/data", "the shared datasets (their corpora are searched with their questions)")
	fs.BoolVar(&c.real, "real", true, "measure the shared datasets' corpora too")
	fs.StringVar(&c.dir, "dir", os.TempDir(), "directory for corpora and indexes (removed after each corpus)")
	fs.IntVar(&c.queries, "queries", 1000, "queries per generated corpus")
	fs.StringVar(&c.json, "json", "bin/bench-peers.json", "write the figures to `FILE` (rows of other corpora already there are kept)")
	fs.StringVar(&print, "print", "", "print the tables of `FILE` and stop")
	fs.StringVar(&phase, "phase", "", "internal: build or search of distill, run as a child process")
	var child childArgs
	child.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case phase != "":
		return runChild(phase, child)
	case print != "":
		rows, err := readRows(print)
		if err != nil {
			return err
		}
		fmt.Print(tables(rows))
		return nil
	}
	for _, s := range strings.Split(sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("-sizes: %q is not a positive number", s)
		}
		c.sizes = append(c.sizes, n)
	}
	for _, e := range strings.Split(engines, ",") {
		e = strings.TrimSpace(e)
		if !slices.Contains(allEngines, e) {
			return fmt.Errorf("-engines: unknown engine %q (want some of %s)", e, strings.Join(allEngines, ", "))
		}
		c.engines = append(c.engines, e)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c.script, err = findScript()
	if err != nil {
		return err
	}
	return measure(c, exe)
}

// findScript finds peers.py beside this command's source, from the
// repository root or from this directory.
func findScript() (string, error) {
	for _, p := range []string{"retrieve/peers/peers.py", "peers.py"} {
		if _, err := os.Stat(p); err == nil {
			return filepath.Abs(p)
		}
	}
	return "", errors.New("peers.py not found: run from the repository root")
}

// readRows reads a -json file; a missing file holds no rows.
func readRows(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []Row
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}
