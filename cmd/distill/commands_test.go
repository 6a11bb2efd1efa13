package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/data/synth"
)

// TestSampleEndToEnd runs the README's commands on the bundled sample:
// import it, index it, search it one query at a time and in batch.
func TestSampleEndToEnd(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "sample")
	idx := filepath.Join(ds, "index")

	r := runDistill(t, "--quiet", "data", "import", "--dataset", "sample", "--out", ds)
	if r.code != 0 {
		t.Fatalf("data import: exit %d, stderr %q", r.code, r.stderr)
	}
	world := synth.Sample()
	for _, want := range []string{"questions:", "200", "passages:", "969"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("data import output %q lacks %q", r.stdout, want)
		}
	}

	r = runDistill(t, "data", "show", "-n", "2", filepath.Join(ds, data.QuestionsFile))
	if r.code != 0 {
		t.Fatalf("data show: exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("data show -n 2: got %d lines, want 2", len(lines))
	}
	var q data.Question
	if err := json.Unmarshal([]byte(lines[0]), &q); err != nil || q.ID != world.Questions[0].ID {
		t.Errorf("data show: first line %q: got id %q (err %v), want %q", lines[0], q.ID, err, world.Questions[0].ID)
	}

	r = runDistill(t, "data", "show", "--count", "--schema", filepath.Join(ds, data.QuestionsFile))
	if r.code != 0 || !strings.Contains(r.stdout, "rows:") || !strings.Contains(r.stdout, "200") || !strings.Contains(r.stdout, "kind:        questions") ||
		!strings.Contains(r.stdout, "message ") || !strings.Contains(r.stdout, "gold_titles") {
		t.Errorf("data show --count --schema: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	r = runDistill(t, "--quiet", "index", "--corpus", filepath.Join(ds, data.CorpusFile), "--out", idx)
	if r.code != 0 {
		t.Fatalf("index: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "passages:") || !strings.Contains(r.stdout, "969") {
		t.Errorf("index output %q lacks the passage count", r.stdout)
	}
	r = runDistill(t, "--quiet", "index", "--corpus", filepath.Join(ds, data.CorpusFile), "--out", idx)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--overwrite") {
		t.Errorf("index over an existing index: exit %d, stderr %q; want %d and the flag to use", r.code, r.stderr, exitUsage)
	}
	r = runDistill(t, "--quiet", "index", "--dataset", "sample", "--out", idx, "--overwrite")
	if r.code != 0 {
		t.Fatalf("index --overwrite: exit %d, stderr %q", r.code, r.stderr)
	}

	// One query: the question's own gold passages should come first.
	bridge := world.Questions[0]
	r = runDistill(t, "search", "--index", idx, "-k", "3", "--json", bridge.Text)
	if r.code != 0 {
		t.Fatalf("search: exit %d, stderr %q", r.code, r.stderr)
	}
	var hits []struct {
		Rank  int     `json:"rank"`
		DocID string  `json:"doc_id"`
		Title string  `json:"title"`
		Score float64 `json:"score"`
		Text  string  `json:"text"`
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var one struct {
			Rank  int     `json:"rank"`
			DocID string  `json:"doc_id"`
			Title string  `json:"title"`
			Score float64 `json:"score"`
			Text  string  `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &one); err != nil {
			t.Fatalf("search --json line %q: %v", line, err)
		}
		hits = append(hits, one)
	}
	if len(hits) != 3 || hits[0].Text == "" {
		t.Fatalf("search --json: got %+v, want 3 hits with text", hits)
	}
	gold := map[string]bool{}
	for _, g := range bridge.GoldTitles {
		gold[g] = true
	}
	if !gold[hits[0].Title] {
		t.Errorf("search %q: first hit %q is not a gold title %v", bridge.Text, hits[0].Title, bridge.GoldTitles)
	}

	// Excluding the first hit promotes the second.
	r = runDistill(t, "search", "--index", idx, "-k", "1", "--json", "--exclude", hits[0].DocID, bridge.Text)
	if r.code != 0 || !strings.Contains(r.stdout, hits[1].DocID) {
		t.Errorf("search --exclude: exit %d, stdout %q; want hit %s", r.code, r.stdout, hits[1].DocID)
	}

	// Human-readable output names the title.
	r = runDistill(t, "search", "--index", idx, "-k", "2", bridge.Text)
	if r.code != 0 || !strings.Contains(r.stdout, hits[0].Title) {
		t.Errorf("search: exit %d, stdout %q; want %q in it", r.code, r.stdout, hits[0].Title)
	}

	// Batch mode: every question, in order, k lines each.
	qfile := filepath.Join(dir, "queries.jsonl")
	f, err := os.Create(qfile)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for _, q := range world.Questions {
		enc.Encode(map[string]string{"id": q.ID, "query": q.Text})
	}
	f.Close()
	r = runDistill(t, "--quiet", "search", "--index", idx, "-k", "5", "--queries", qfile)
	if r.code != 0 {
		t.Fatalf("batch search: exit %d, stderr %q", r.code, r.stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	n := 0
	allGold := 0
	for sc.Scan() {
		var h struct {
			QueryID string  `json:"query_id"`
			Rank    int     `json:"rank"`
			DocID   string  `json:"doc_id"`
			Title   string  `json:"title"`
			Score   float64 `json:"score"`
		}
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("batch line %q: %v", sc.Text(), err)
		}
		wantQ := world.Questions[n/5]
		if h.QueryID != wantQ.ID || h.Rank != n%5+1 {
			t.Fatalf("batch line %d: got query %s rank %d, want %s rank %d", n, h.QueryID, h.Rank, wantQ.ID, n%5+1)
		}
		if h.Rank == 1 && (h.Title == wantQ.GoldTitles[0] || h.Title == wantQ.GoldTitles[1]) {
			allGold++
		}
		n++
	}
	if n != 5*len(world.Questions) {
		t.Errorf("batch search: got %d lines, want %d", n, 5*len(world.Questions))
	}
	t.Logf("sample: a gold passage ranks first for %d of %d questions", allGold, len(world.Questions))
	if allGold < len(world.Questions)*3/4 {
		t.Errorf("a gold passage ranks first for only %d of %d sample questions", allGold, len(world.Questions))
	}

	r = runDistill(t, "--quiet", "search", "--index", idx, "-k", "2", "--format", "trec", "--run-tag", "t1", "--queries", qfile)
	first := strings.SplitN(r.stdout, "\n", 2)[0]
	if r.code != 0 || !strings.HasPrefix(first, world.Questions[0].ID+" Q0 ") || !strings.HasSuffix(first, " t1") {
		t.Errorf("trec run: exit %d, first line %q", r.code, first)
	}
}

func TestCommandUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	good := `{"_id": "1", "question": "q", "answer": "a", "type": "bridge", "level": "easy", "supporting_facts": [["T", 0]], "context": [["T", ["A sentence."]]]}`
	os.WriteFile(bad, []byte(good+"\nnot json\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	odd := filepath.Join(dir, "odd.jsonl")
	os.WriteFile(odd, []byte(`{"question": "q"}`+"\n"), 0o644)
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"import without out", []string{"data", "import", "--dataset", "sample"}, 2, "--out is required"},
		{"import without in", []string{"data", "import", "--out", dir}, 2, "--in and --format are required"},
		{"import unknown format", []string{"data", "import", "--in", bad, "--format", "squad", "--out", dir}, 2, `unknown question format "squad"`},
		{"import unknown dataset", []string{"data", "import", "--dataset", "nq", "--out", dir}, 2, `unknown --dataset "nq"`},
		{"import bad record", []string{"data", "import", "--in", bad, "--format", "hotpotqa", "--out", filepath.Join(dir, "o")}, 1, "bad.jsonl: record 2 (line 2): invalid JSON"},
		{"import missing file", []string{"data", "import", "--in", filepath.Join(dir, "nope.json"), "--format", "hotpotqa", "--out", dir}, 1, "nope.json"},
		{"import empty file", []string{"data", "import", "--in", empty, "--format", "hotpotqa", "--out", filepath.Join(dir, "e")}, 1, "empty.jsonl holds no questions"},
		{"label missing input", []string{"label", "--in", filepath.Join(dir, "nope"), "--out", filepath.Join(dir, "l")}, 1, "label: --in: stat " + filepath.Join(dir, "nope")},
		{"filter missing input", []string{"filter", "--in", filepath.Join(dir, "nope.parquet"), "--out", filepath.Join(dir, "f")}, 1, "nope.parquet: no such file"},
		{"filter of trajectories", []string{"filter", "--in", bad, "--out", filepath.Join(dir, "f")}, 2, "filter: bad input"},
		{"show flag after file", []string{"data", "show", "x.parquet", "-n", "3"}, 2, "put flags before arguments"},
		{"show no file", []string{"data", "show"}, 2, "want one FILE"},
		{"synth bad size", []string{"data", "synth", "--count", "0", "--out", dir}, 2, "question count out of range"},
		{"index without out", []string{"index", "--dataset", "sample"}, 2, "--out is required"},
		{"index without corpus", []string{"index", "--out", dir}, 2, "--corpus or --dataset is required"},
		{"index bad corpus format", []string{"index", "--corpus", bad, "--corpus-format", "csv", "--out", filepath.Join(dir, "i")}, 2, `unknown corpus format "csv"`},
		{"index undetectable corpus", []string{"index", "--corpus", odd, "--out", filepath.Join(dir, "i")}, 1, "cannot tell the corpus format"},
		{"search without index", []string{"search", "who"}, 2, "--index is required"},
		{"search nothing", []string{"search", "--index", dir}, 2, "give a QUERY or --queries FILE"},
		{"search bad k", []string{"search", "--index", dir, "-k", "0", "who"}, 2, "-k must be at least 1"},
		{"search not an index", []string{"search", "--index", dir, "who"}, 1, "is not an index directory"},
		{"search flag after query", []string{"search", "--index", dir, "who", "--json"}, 2, "put flags before arguments"},
		{"compare not a flag after argument", []string{"bench", "compare", "a", "b", "--bogus"}, 2, "bench compare: --bogus comes after an argument, and is not a flag of bench compare"},
		{"train status flag after dir", []string{"train", "status", dir, "--poll-interval", "1s"}, 2, "train status: --poll-interval comes after an argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runDistill(t, append([]string{"--quiet"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tc.code, tc.inStderr)
			}
		})
	}
}

// TestImportRealDatasets imports the shared slices through the CLI and checks
// the counts it prints.
func TestImportRealDatasets(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("shared datasets not found at %s (they sit beside the repository): %v", shared, err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"hotpotqa", []string{"--format", "hotpotqa", "--in", filepath.Join(shared, "hotpotqa", "hotpot_train_distractor_100.json")},
			[]string{"questions:", " 100\n", "passages:", " 994\n"}},
		{"2wiki", []string{"--format", "flashrag", "--name", "2wikimultihopqa", "--in", filepath.Join(shared, "2wikimultihopqa", "2wiki_dev_sample_40.jsonl"),
			"--corpus", filepath.Join(shared, "2wikimultihopqa", "2wiki_corpus.jsonl")},
			[]string{" 40\n", " 6119\n", "questions with all gold titles in the corpus:  40"}},
		{"musique", []string{"--format", "musique", "--in", filepath.Join(shared, "musique", "musique_train_100.json"),
			"--corpus", filepath.Join(shared, "musique", "musique_train_corpus.json")},
			[]string{" 100\n", " 1890\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tc.name)
			r := runDistill(t, append([]string{"--quiet", "data", "import", "--out", out}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output %q lacks %q", r.stdout, w)
				}
			}
		})
	}
}

func TestImportSkipBad(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "hotpot.jsonl")
	good := func(id string) string {
		return `{"_id": "` + id + `", "question": "Who?", "answer": "Ann", "type": "bridge", "level": "easy", "supporting_facts": [["T` + id + `", 0]], "context": [["T` + id + `", ["Ann did it."]]]}`
	}
	os.WriteFile(in, []byte(good("a")+"\n{broken\n"+`{"_id": "c", "question": "", "answer": "x", "supporting_facts": [], "context": [["T", ["s"]]]}`+"\n"+good("d")+"\n"), 0o644)
	r := runDistill(t, "--quiet", "data", "import", "--format", "hotpotqa", "--in", in, "--out", filepath.Join(dir, "out"), "--skip-bad")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{"questions:", " 2\n", "bad records skipped:", "skipped: " + in + ": record 2 (line 2): invalid JSON", "record 3 (line 3)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output %q lacks %q", r.stdout, want)
		}
	}
}

func TestIndexSkipBad(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.jsonl")
	os.WriteFile(corpus, []byte(`{"id": "1", "title": "Alpha", "text": "alpha text"}`+"\nnot json\n"+`{"id": "2", "title": "Beta", "text": "beta text"}`+"\n"), 0o644)
	idx := filepath.Join(dir, "idx")
	r := runDistill(t, "--quiet", "index", "--corpus", corpus, "--out", idx)
	if r.code != 1 || !strings.Contains(r.stderr, "c.jsonl: record 2 (line 2): invalid JSON") {
		t.Errorf("without --skip-bad: exit %d, stderr %q; want 1 and the bad record named", r.code, r.stderr)
	}
	r = runDistill(t, "--quiet", "index", "--corpus", corpus, "--out", idx, "--skip-bad")
	if r.code != 0 || !strings.Contains(r.stdout, "bad records skipped:") || !strings.Contains(r.stdout, "passages:") {
		t.Fatalf("with --skip-bad: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "skipped bad passage") {
		t.Errorf("with --skip-bad the bad record is not logged: stderr %q", r.stderr)
	}
	r = runDistill(t, "search", "--index", idx, "beta")
	if r.code != 0 || !strings.Contains(r.stdout, "Beta") {
		t.Errorf("search after a skip-bad build: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestOutputInUse: every command that writes an output directory refuses
// one that another writer holds, at once, with exit status 2 and the
// holder named, and leaves what it holds alone.
func TestOutputInUse(t *testing.T) {
	ch := offlineChain(t)
	held := filepath.Join(t.TempDir(), "held")
	d, err := outdir.Claim(t.Context(), held, outdir.New)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.WriteFile(filepath.Join(held, "mine"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := [][]string{
		{"data", "import", "--dataset", "sample"},
		{"data", "synth", "--count", "5"},
		{"index", "--dataset", "sample"},
		{"index", "--dataset", "sample", "--kind", "dense", "--embed-model", "e5", "--embed-base-url", "http://127.0.0.1:9/v1"},
		{"rollout", "--limit", "3"},
		{"rollout", "--limit", "3", "--resume"},
		{"label", "--in", ch.Rollout, "--teacher", "retrieval-truth"},
		{"filter", "--in", ch.Labels, "--overwrite"},
		{"train", "--in", ch.SFT, "--backend", "builtin"},
		{"bench", "--limit", "3", "--variants", "full"},
		{"bench", "--limit", "3", "--variants", "full", "--resume"},
		{"merge", "--out", "OUT", ch.Rollout},
	}
	want := fmt.Sprintf("is in use by process %d", os.Getpid())
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if !slices.Contains(args, "OUT") {
				args = append(args, "--out", "OUT")
			}
			args = slices.Clone(args)
			args[slices.Index(args, "OUT")] = held
			r := runDistill(t, append([]string{"--quiet"}, args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, want)
			}
			if entries, _ := os.ReadDir(held); len(entries) != 2 {
				t.Errorf("the held directory holds %d entries, want the lock file and mine", len(entries))
			}
		})
	}
}

// TestDatasetNotReplaced: a dataset is never replaced silently: a second
// import or synth into it is refused, --overwrite replaces it, and a
// failed fresh import leaves nothing behind.
func TestDatasetNotReplaced(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	count := func() int {
		t.Helper()
		qs, err := data.ReadParquet[data.Question](filepath.Join(ds, data.QuestionsFile))
		if err != nil {
			t.Fatal(err)
		}
		return len(qs)
	}
	if r := runDistill(t, "--quiet", "data", "import", "--dataset", "sample", "--out", ds); r.code != 0 {
		t.Fatalf("import: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"data", "synth", "--count", "10", "--out", ds},
		{"data", "import", "--dataset", "sample", "--out", ds},
	} {
		r := runDistill(t, append([]string{"--quiet"}, args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--overwrite") {
			t.Errorf("%v over a dataset: exit %d, stderr %q; want %d and --overwrite", args, r.code, r.stderr, exitUsage)
		}
	}
	if n := count(); n != 200 {
		t.Fatalf("the dataset now has %d questions, want 200", n)
	}
	if r := runDistill(t, "--quiet", "data", "synth", "--count", "10", "--out", ds, "--overwrite"); r.code != 0 {
		t.Fatalf("synth --overwrite: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := count(); n != 10 {
		t.Errorf("after --overwrite: %d questions, want 10", n)
	}

	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("not json\n"), 0o644)
	out := filepath.Join(dir, "failed")
	if r := runDistill(t, "--quiet", "data", "import", "--in", bad, "--format", "hotpotqa", "--out", out); r.code != exitFailure {
		t.Errorf("import of a bad file: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed import left %s: %v", out, err)
	}
}
