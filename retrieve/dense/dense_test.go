package dense

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/llm/llmtest"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/raw"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

func build(t testing.TB, dir string, ps []data.Passage, emb llm.Embedder, opts BuildOptions) Stats {
	t.Helper()
	if _, named := emb.(interface{ Model() string }); opts.Model == "" && !named {
		opts.Model = "test-model"
	}
	st, err := Build(context.Background(), dir, data.NewPassageSlice(ps), emb, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return st
}

func open(t testing.TB, dir string, opts OpenOptions) *Index {
	t.Helper()
	x, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func TestConformance(t *testing.T) {
	for _, prec := range Precisions() {
		t.Run(string(prec), func(t *testing.T) {
			retrievetest.Run(t, func(t *testing.T, corpus []data.Passage) retrieve.Retriever {
				emb := newBagEmbedder(corpus)
				dir := filepath.Join(t.TempDir(), "idx")
				build(t, dir, corpus, emb, BuildOptions{Precision: prec, BatchSize: 7, ChunkSize: 16})
				return open(t, dir, OpenOptions{Embedder: emb})
			})
		})
	}
}

// TestConformanceIVF runs the contract on the IVF search probing every
// partition, which must be the exact search.
func TestConformanceIVF(t *testing.T) {
	retrievetest.Run(t, func(t *testing.T, corpus []data.Passage) retrieve.Retriever {
		emb := newBagEmbedder(corpus)
		dir := filepath.Join(t.TempDir(), "idx")
		build(t, dir, corpus, emb, BuildOptions{IVF: &IVFOptions{NList: 4, Seed: 3}})
		x := open(t, dir, OpenOptions{Embedder: emb, NProbe: 4})
		exact := open(t, dir, OpenOptions{Embedder: emb})
		for i, p := range corpus {
			q := retrieve.Query{Text: p.Title + " lighthouse", K: 10, Exclude: []string{corpus[(i+3)%len(corpus)].ID}}
			want := retrievetest.Search(context.Background(), t, exact, q)
			got := retrievetest.Search(context.Background(), t, x, q)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("IVF probing all partitions differs from exact search (-exact +ivf):\n%s", diff)
			}
		}
		return x
	})
}

// TestBuildWithServer builds through the real client against an
// embeddings server on loopback and checks what was sent and stored.
func TestBuildWithServer(t *testing.T) {
	const dim = 16
	srv := newServer(t, llmtest.Options{EmbeddingDim: dim})
	client := newClient(t, srv.URL(), "e5-test")
	corpus := textCorpus(50)
	corpus[3].Title = "" // embedded as the text alone
	dir := filepath.Join(t.TempDir(), "idx")
	var reports [][2]int64
	st := build(t, dir, corpus, client, BuildOptions{
		Model: "", BatchSize: 8, Workers: 3, ChunkSize: 20, SourceName: "corpus.jsonl",
		Progress: func(done, total int64) { reports = append(reports, [2]int64{done, total}) },
	})
	if st.Passages != 50 || st.Dim != dim || st.Embedded != 50 || st.Resumed != 0 || st.Requests != 8 {
		t.Errorf("stats: got %+v, want 50 passages of dimension %d in 8 requests", st, dim)
	}
	for i, r := range reports {
		if r[1] != 50 || (i > 0 && r[0] < reports[i-1][0]) {
			t.Fatalf("progress reports %v: want totals of 50 and counts that never go back", reports)
		}
	}
	if last := reports[len(reports)-1]; last[0] != 50 {
		t.Errorf("last progress report %v, want 50 of 50", last)
	}
	var sent []string
	for _, r := range srv.Requests() {
		if r.Model != "" && r.Model != "e5-test" {
			t.Errorf("request for model %q, want e5-test", r.Model)
		}
		if len(r.Input) > 8 {
			t.Errorf("request with %d inputs, want at most 8", len(r.Input))
		}
		sent = append(sent, r.Input...)
	}
	var want []string
	for _, p := range corpus {
		want = append(want, passageInput(DefaultPassagePrefix, retrieve.TitleText, p))
	}
	slices.Sort(sent)
	slices.Sort(want)
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("inputs sent (-want +got):\n%s", diff)
	}
	if want, got := "passage: "+corpus[3].Text, passageInput(DefaultPassagePrefix, retrieve.TitleText, corpus[3]); got != want {
		t.Errorf("input of an untitled passage: got %q, want %q", got, want)
	}
	if want, got := "passage: Article 0 "+corpus[0].Text, passageInput(DefaultPassagePrefix, retrieve.TitleText, corpus[0]); got != want {
		t.Errorf("input: got %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, chunksDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoints left after the build: %v", err)
	}

	x := open(t, dir, OpenOptions{Embedder: client})
	m := x.Meta()
	if m.Model != "e5-test" || m.Dim != dim || m.QueryPrefix != "query: " || m.PassagePrefix != "passage: " ||
		m.Precision != Float32 || !m.Normalized || m.Passages != 50 || m.Source != "corpus.jsonl" || m.Metric != "inner_product" {
		t.Errorf("meta: got %+v", m)
	}
	// Stored rows are the server's vectors, at unit length.
	buf := make([]float32, dim)
	for i, p := range corpus {
		got := x.rows.vectors(i, i+1, buf)
		v := llmtest.Vector(passageInput(DefaultPassagePrefix, retrieve.TitleText, p), dim)
		for j := range v {
			if math.Abs(float64(got[j]-v[j])) > 1e-6 {
				t.Fatalf("row %d: got %v, want %v", i, got, v)
			}
		}
	}
	// A passage's own vector finds it first, with score 1.
	v := llmtest.Vector(passageInput(DefaultPassagePrefix, retrieve.TitleText, corpus[9]), dim)
	hits, err := x.SearchVector(context.Background(), v, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || hits[0].ID != corpus[9].ID || math.Abs(hits[0].Score-1) > 1e-5 {
		t.Errorf("search by passage 9's vector: got %v, want it first with score 1", retrievetest.HitIDs(hits))
	}
	if diff := cmp.Diff(corpus[9], hits[0].Passage); diff != "" {
		t.Errorf("hit passage (-want +got):\n%s", diff)
	}
	// Search embeds the query with its prefix.
	before := len(srv.Requests())
	if _, err := x.Search(context.Background(), retrieve.Query{Text: "who built it", K: 5}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()[before:]
	if len(reqs) != 1 || !slices.Equal(reqs[0].Input, []string{"query: who built it"}) {
		t.Errorf("query requests: got %+v, want one with input [\"query: who built it\"]", reqs)
	}
}

// TestCustomPrefixes checks that prefixes are configurable, none included.
func TestCustomPrefixes(t *testing.T) {
	srv := newServer(t, llmtest.Options{EmbeddingDim: 4})
	client := newClient(t, srv.URL(), "m")
	corpus := textCorpus(3)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, corpus, client, BuildOptions{Prefixes: &Prefixes{}})
	if got := srv.Requests()[0].Input[0]; got != corpus[0].Title+" "+corpus[0].Text {
		t.Errorf("input without prefixes: got %q", got)
	}
	x := open(t, dir, OpenOptions{Embedder: client})
	x.Search(context.Background(), retrieve.Query{Text: "q", K: 1})
	reqs := srv.Requests()
	if got := reqs[len(reqs)-1].Input; !slices.Equal(got, []string{"q"}) {
		t.Errorf("query without prefix: got %q", got)
	}
}

func chunkFiles(t *testing.T, dir string) map[int]string {
	t.Helper()
	have, err := listChunks(filepath.Join(dir, chunksDir))
	if err != nil {
		t.Fatal(err)
	}
	return have
}

// sameRows fails unless two indexes store the same vectors.
func sameRows(t *testing.T, a, b string) {
	t.Helper()
	x, y := open(t, a, OpenOptions{}), open(t, b, OpenOptions{})
	if !slices.Equal(x.rows.f32, y.rows.f32) || x.Len() != y.Len() {
		t.Errorf("%s and %s hold different vectors", a, b)
	}
	for i := range x.Len() {
		p, _ := x.docs.passage(i, false)
		q, _ := y.docs.passage(i, false)
		if diff := cmp.Diff(p, q); diff != "" {
			t.Fatalf("passage %d differs:\n%s", i, diff)
		}
	}
}

// TestResumeAfterCancel stops a build part way, then runs it again: only
// the chunks without a checkpoint are embedded, and the index is the one an
// uninterrupted build makes.
func TestResumeAfterCancel(t *testing.T) {
	const n, chunk, batch = 300, 16, 4
	corpus := textCorpus(n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	count := 0
	srv := newServer(t, llmtest.Options{EmbeddingDim: 8, Observe: func(llmtest.Request) {
		mu.Lock()
		defer mu.Unlock()
		if count++; count == 30 {
			cancel()
		}
	}})
	client := newClient(t, srv.URL(), "e5-test")
	dir := filepath.Join(t.TempDir(), "idx")
	opts := BuildOptions{BatchSize: batch, Workers: 2, ChunkSize: chunk}
	_, err := Build(ctx, dir, data.NewPassageSlice(corpus), client, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled build: got error %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, metaFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("meta.json of an interrupted build: %v", err)
	}
	if _, err := Open(dir, OpenOptions{}); err == nil {
		t.Fatal("Open of an interrupted build: got nil error")
	}
	done := chunkFiles(t, dir)
	if len(done) == 0 || len(done) >= n/chunk {
		t.Fatalf("%d chunks finished before the cancel, want some but not all", len(done))
	}
	// Build returns as soon as its context ends, while the server may still
	// be handling (and about to record) the requests that were in flight:
	// Close waits for them, and the resumed build gets a server of its own
	// that sees its requests alone. Vectors depend on the text only, so
	// both servers embed alike.
	srv.Close()
	before := len(srv.Requests())
	srv2 := newServer(t, llmtest.Options{EmbeddingDim: 8})
	client = newClient(t, srv2.URL(), "e5-test")

	st := build(t, dir, corpus, client, opts)
	if want := int64(len(done) * chunk); st.Resumed != want || st.Embedded != n-want {
		t.Errorf("resumed build: %d passages from checkpoints and %d embedded, want %d and %d", st.Resumed, st.Embedded, want, n-want)
	}
	skip := map[string]bool{}
	for c := range done {
		for i := c * chunk; i < (c+1)*chunk; i++ {
			skip[passageInput(DefaultPassagePrefix, retrieve.TitleText, corpus[i])] = true
		}
	}
	requests := 0
	for _, r := range srv2.Requests() {
		requests++
		for _, in := range r.Input {
			if skip[in] {
				t.Errorf("resumed build embedded %q again: its chunk was finished", in)
			}
		}
	}
	if int64(requests) != st.Requests {
		t.Errorf("stats count %d requests, the server saw %d", st.Requests, requests)
	}
	want := 0
	for c := 0; c*chunk < n; c++ {
		if _, ok := done[c]; !ok {
			want += (min(chunk, n-c*chunk) + batch - 1) / batch
		}
	}
	if requests != want {
		t.Errorf("resumed build made %d requests, want %d: one per batch of the unfinished chunks", requests, want)
	}
	t.Logf("cancelled after %d requests with %d of %d chunks done; the rerun made %d requests", before, len(done), (n+chunk-1)/chunk, requests)
	clean := filepath.Join(t.TempDir(), "clean")
	build(t, clean, corpus, client, opts)
	sameRows(t, dir, clean)
}

// TestBuildChild is the build that TestResumeAfterKill kills; it runs only
// in that test's child process.
func TestBuildChild(t *testing.T) {
	dir := os.Getenv("DISTILL_DENSE_CHILD_DIR")
	if dir == "" {
		t.Skip("helper process of TestResumeAfterKill")
	}
	client := newClient(t, os.Getenv("DISTILL_DENSE_CHILD_URL"), "e5-test")
	Build(context.Background(), dir, data.NewPassageSlice(textCorpus(killCorpus)), client, killOptions)
	t.Error("the build ended: the parent should have killed it")
}

const killCorpus = 2000

func childCommand(t *testing.T, dir, url string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DISTILL_DENSE_CHILD_DIR="+dir, "DISTILL_DENSE_CHILD_URL="+url)
	return cmd
}

var killOptions = BuildOptions{BatchSize: 4, Workers: 2, ChunkSize: 16}

// TestResumeAfterKill runs a build in a child process, kills it (SIGKILL
// where there are signals) part way, and resumes the build here.
func TestResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	reached := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	count := 0
	srv := newServer(t, llmtest.Options{EmbeddingDim: 8, Latency: 2 * time.Millisecond, Observe: func(llmtest.Request) {
		mu.Lock()
		defer mu.Unlock()
		if count++; count == 60 {
			once.Do(func() { close(reached) })
		}
	}})
	dir := filepath.Join(t.TempDir(), "idx")
	cmd := childCommand(t, dir, srv.URL())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-reached:
	case err := <-exited:
		t.Fatalf("child ended before it was killed: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited

	done := chunkFiles(t, dir)
	if len(done) == 0 {
		t.Fatal("no chunk finished before the kill")
	}
	// A fresh server sees only the resumed build's requests.
	srv2 := newServer(t, llmtest.Options{EmbeddingDim: 8})
	client := newClient(t, srv2.URL(), "e5-test")
	corpus := textCorpus(killCorpus)
	st := build(t, dir, corpus, client, killOptions)
	t.Logf("killed with %d of %d chunks done; the rerun resumed %d passages and embedded %d in %d requests",
		len(done), killCorpus/killOptions.ChunkSize, st.Resumed, st.Embedded, len(srv2.Requests()))
	if st.Resumed < int64(len(done)*killOptions.ChunkSize) {
		t.Errorf("resumed %d passages, want at least the %d of the %d chunks found", st.Resumed, len(done)*killOptions.ChunkSize, len(done))
	}
	for _, r := range srv2.Requests() {
		for _, in := range r.Input {
			for c := range done {
				for i := c * 16; i < (c+1)*16; i++ {
					if in == passageInput(DefaultPassagePrefix, retrieve.TitleText, corpus[i]) {
						t.Fatalf("passage %d embedded again after the kill: chunk %d was finished", i, c)
					}
				}
			}
		}
	}
	clean := filepath.Join(t.TempDir(), "clean")
	build(t, clean, corpus, client, killOptions)
	sameRows(t, dir, clean)
}

// TestDamagedCheckpointIsEmbeddedAgain damages a checkpoint of an
// interrupted build: the resumed build embeds its passages again.
func TestDamagedCheckpointIsEmbeddedAgain(t *testing.T) {
	corpus := textCorpus(64)
	emb := &countingEmbedder{next: newBagEmbedder(corpus), fail: 3}
	dir := filepath.Join(t.TempDir(), "idx")
	opts := BuildOptions{Model: "m", BatchSize: 8, Workers: 1, ChunkSize: 16}
	if _, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), emb, opts); err == nil {
		t.Fatal("build with a failing embedder: got nil error")
	}
	done := chunkFiles(t, dir)
	path, ok := done[0]
	if !ok {
		t.Fatalf("chunk 0 not written; have %v", done)
	}
	b, _ := os.ReadFile(path)
	b[len(b)-3] ^= 0x40
	os.WriteFile(path, b, 0o644)
	emb.fail = 0
	emb.inputs = nil
	st := build(t, dir, corpus, emb, opts)
	if st.Resumed != 0 || st.Embedded != 64 {
		t.Errorf("got %d resumed and %d embedded, want 0 and 64 (the damaged chunk embedded again)", st.Resumed, st.Embedded)
	}
}

// countingEmbedder records inputs and fails its call number fail (from 1).
type countingEmbedder struct {
	next   llm.Embedder
	mu     sync.Mutex
	calls  int
	fail   int
	inputs []string
}

func (e *countingEmbedder) Embed(ctx context.Context, in []string) ([][]float32, llm.Usage, error) {
	e.mu.Lock()
	e.calls++
	fail := e.calls == e.fail
	e.inputs = append(e.inputs, in...)
	e.mu.Unlock()
	if fail {
		return nil, llm.Usage{}, errors.New("server down")
	}
	return e.next.Embed(ctx, in)
}

func TestRefusals(t *testing.T) {
	corpus := textCorpus(64)
	interrupted := func(t *testing.T, emb llm.Embedder, opts BuildOptions) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "idx")
		ce := &countingEmbedder{next: emb, fail: 3}
		if _, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), ce, opts); err == nil {
			t.Fatal("build with a failing embedder: got nil error")
		}
		if len(chunkFiles(t, dir)) == 0 {
			t.Fatal("no checkpoint written")
		}
		return dir
	}
	srv8 := newServer(t, llmtest.Options{EmbeddingDim: 8})
	srv6 := newServer(t, llmtest.Options{EmbeddingDim: 6})
	base := BuildOptions{Model: "e5", BatchSize: 8, Workers: 1, ChunkSize: 16}
	changed := slices.Clone(corpus)
	changed[2].Text = "changed"
	tests := []struct {
		name   string
		emb    llm.Embedder
		opts   func(BuildOptions) BuildOptions
		corpus []data.Passage
	}{
		{"model", newClient(t, srv8.URL(), "other"), func(o BuildOptions) BuildOptions { o.Model = "other"; return o }, corpus},
		{"dimension", newClient(t, srv6.URL(), "e5"), func(o BuildOptions) BuildOptions { return o }, corpus},
		{"passage prefix", newClient(t, srv8.URL(), "e5"), func(o BuildOptions) BuildOptions { o.Prefixes = &Prefixes{Passage: "doc: "}; return o }, corpus},
		{"normalisation", newClient(t, srv8.URL(), "e5"), func(o BuildOptions) BuildOptions { o.NoNormalize = true; return o }, corpus},
		{"chunk size", newClient(t, srv8.URL(), "e5"), func(o BuildOptions) BuildOptions { o.ChunkSize = 32; return o }, corpus},
		{"corpus", newClient(t, srv8.URL(), "e5"), func(o BuildOptions) BuildOptions { return o }, changed},
		{"shorter corpus", newClient(t, srv8.URL(), "e5"), func(o BuildOptions) BuildOptions { return o }, corpus[:10]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := interrupted(t, newClient(t, srv8.URL(), "e5"), base)
			_, err := Build(context.Background(), dir, data.NewPassageSlice(tc.corpus), tc.emb, tc.opts(base))
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("got error %v, want ErrMismatch", err)
			}
			// Overwrite starts afresh.
			o := tc.opts(base)
			o.Overwrite = true
			if _, err := Build(context.Background(), dir, data.NewPassageSlice(tc.corpus), tc.emb, o); err != nil {
				t.Fatalf("with Overwrite: %v", err)
			}
		})
	}

	t.Run("finished index", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "idx")
		emb := newBagEmbedder(corpus)
		build(t, dir, corpus, emb, BuildOptions{})
		if _, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), emb, BuildOptions{Model: "test-model"}); !errors.Is(err, ErrExists) {
			t.Errorf("second build: got %v, want ErrExists", err)
		}
		build(t, dir, corpus[:5], emb, BuildOptions{Overwrite: true})
		if x := open(t, dir, OpenOptions{}); x.Len() != 5 {
			t.Errorf("overwritten index has %d passages, want 5", x.Len())
		}
	})
	t.Run("not an index", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
		for _, overwrite := range []bool{false, true} {
			_, err := Build(context.Background(), dir, data.NewPassageSlice(corpus), newBagEmbedder(corpus), BuildOptions{Model: "m", Overwrite: overwrite})
			if !errors.Is(err, ErrExists) {
				t.Errorf("overwrite=%v: got %v, want ErrExists", overwrite, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
			t.Errorf("the directory's own file: %v", err)
		}
	})
}

func TestBuildErrors(t *testing.T) {
	corpus := textCorpus(10)
	emb := newBagEmbedder(corpus)
	dup := slices.Clone(corpus)
	dup[7].ID = dup[2].ID
	noID := slices.Clone(corpus)
	noID[4].ID = ""
	tests := []struct {
		name string
		src  retrieve.Source
		emb  llm.Embedder
		opts BuildOptions
		want string
	}{
		{"duplicate id", data.NewPassageSlice(dup), emb, BuildOptions{Model: "m"}, "duplicate doc id"},
		{"empty id", data.NewPassageSlice(noID), emb, BuildOptions{Model: "m"}, "empty doc id"},
		{"no model", data.NewPassageSlice(corpus), emb, BuildOptions{}, "no model name"},
		{"no embedder", data.NewPassageSlice(corpus), nil, BuildOptions{Model: "m"}, "no embedder"},
		{"bad precision", data.NewPassageSlice(corpus), emb, BuildOptions{Model: "m", Precision: "bf16"}, "unknown precision"},
		{"source error", &failingSource{after: 3}, emb, BuildOptions{Model: "m"}, "read passage 4: disk on fire"},
		{"wrong count", data.NewPassageSlice(corpus), shortEmbedder{}, BuildOptions{Model: "m"}, "got 0 vectors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(context.Background(), filepath.Join(t.TempDir(), "idx"), tc.src, tc.emb, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

type failingSource struct{ after, n int }

func (s *failingSource) Next() (data.Passage, error) {
	if s.n == s.after {
		return data.Passage{}, errors.New("disk on fire")
	}
	s.n++
	return data.Passage{ID: fmt.Sprint(s.n), Text: "x"}, nil
}

type shortEmbedder struct{}

func (shortEmbedder) Embed(context.Context, []string) ([][]float32, llm.Usage, error) {
	return nil, llm.Usage{}, nil
}

func TestEmptyCorpus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	emb := newBagEmbedder(nil)
	st := build(t, dir, nil, emb, BuildOptions{})
	if st.Passages != 0 {
		t.Errorf("got %d passages, want 0", st.Passages)
	}
	x := open(t, dir, OpenOptions{Embedder: emb})
	hits, err := x.Search(context.Background(), retrieve.Query{Text: "anything", K: 3})
	if err != nil || len(hits) != 0 {
		t.Errorf("search of an empty index: got %v, %v; want no hits", hits, err)
	}
}

func TestZeroVectors(t *testing.T) {
	corpus := textCorpus(5)
	corpus[1].Title, corpus[1].Text = "", "the of and"
	emb := newBagEmbedder(corpus)
	dir := filepath.Join(t.TempDir(), "idx")
	st := build(t, dir, corpus, emb, BuildOptions{})
	if st.ZeroVectors != 1 {
		t.Errorf("got %d zero vectors, want 1", st.ZeroVectors)
	}
	x := open(t, dir, OpenOptions{Embedder: emb})
	hits, err := x.Search(context.Background(), retrieve.Query{Text: "Article 3", K: 5})
	if err != nil || len(hits) != 5 || hits[0].ID != corpus[3].ID || hits[4].ID != corpus[1].ID || hits[4].Score != 0 {
		t.Errorf("got %v (%v), want passage 3 first and the zero vector last with score 0", retrievetest.HitIDs(hits), err)
	}
}

func TestSearchErrors(t *testing.T) {
	corpus := textCorpus(20)
	emb := newBagEmbedder(corpus)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, corpus, emb, BuildOptions{})
	ctx := context.Background()
	x := open(t, dir, OpenOptions{Embedder: emb})
	if _, err := x.SearchVector(ctx, []float32{1, 2}, 3, nil); !errors.Is(err, ErrDim) {
		t.Errorf("short vector: got %v, want ErrDim", err)
	}
	v := make([]float32, x.Dim())
	v[0] = float32(math.NaN())
	if _, err := x.SearchVector(ctx, v, 3, nil); err == nil {
		t.Error("NaN vector: got nil error")
	}
	if _, err := x.SearchVector(ctx, make([]float32, x.Dim()), 0, nil); !errors.Is(err, retrieve.ErrBadK) {
		t.Errorf("k=0: got %v, want ErrBadK", err)
	}
	if _, err := x.SearchBatchVectors(ctx, [][]float32{v, v}, 3, [][]string{nil}); err == nil {
		t.Error("exclusion lists of the wrong length: got nil error")
	}
	if hits, err := x.SearchVector(ctx, make([]float32, x.Dim()), 3, nil); err != nil || len(hits) != 0 {
		t.Errorf("zero vector: got %v, %v; want no hits", hits, err)
	}
	noEmb := open(t, dir, OpenOptions{})
	if _, err := noEmb.Search(ctx, retrieve.Query{Text: "Article", K: 2}); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("no embedder: got %v, want ErrNoEmbedder", err)
	}
	if _, err := Open(dir, OpenOptions{NProbe: 3}); err == nil {
		t.Error("NProbe without ivf.bin: got nil error")
	}
	x.Close()
	if _, err := x.Search(ctx, retrieve.Query{Text: "Article", K: 2}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), OpenOptions{}); err == nil {
		t.Error("Open of a missing directory: got nil error")
	}
}

// TestDamagedFiles flips and cuts bytes of every file of a real index:
// opening or searching must fail with an error or work, never panic.
func TestDamagedFiles(t *testing.T) {
	corpus := retrievetest.Corpus()
	emb := newBagEmbedder(corpus)
	ctx := context.Background()
	for _, prec := range Precisions() {
		dir := filepath.Join(t.TempDir(), string(prec))
		build(t, dir, corpus, emb, BuildOptions{Precision: prec, IVF: &IVFOptions{NList: 5}})
		meta, err := readMeta(dir)
		if err != nil {
			t.Fatal(err)
		}
		var orig [3][]byte
		for i, name := range []string{vectorsFile, docsFile, ivfFile} {
			if orig[i], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for trial := range 900 {
			var files [3][]byte
			for i := range files {
				files[i] = slices.Clone(orig[i])
			}
			b := &files[trial%3]
			switch trial % 4 {
			case 0:
				*b = (*b)[:rng.IntN(len(*b))]
			case 1:
				// Bytes past the headers, where no checksum covers them.
				at := min(len(*b)-1, pageHeader+rng.IntN(max(1, len(*b)-pageHeader)))
				(*b)[at] ^= byte(1 + rng.IntN(255))
			default:
				for range 1 + rng.IntN(8) {
					(*b)[rng.IntN(len(*b))] ^= byte(1 + rng.IntN(255))
				}
			}
			for _, nprobe := range []int{0, 2} {
				// Copies in fresh memory keep the views aligned.
				x, err := newIndex(meta, aligned(files[0]), aligned(files[1]), aligned(files[2]), OpenOptions{Embedder: emb, NProbe: nprobe})
				if err != nil {
					continue
				}
				for _, q := range []string{"lighthouse", "marker zq3xv", "Orvel Quessa crimson"} {
					x.Search(ctx, retrieve.Query{Text: q, K: 5, Exclude: []string{corpus[0].ID}})
				}
				x.SearchBatch(ctx, []retrieve.Query{{Text: "journal", K: 3}, {Text: "storms", K: 50, TitlesOnly: true}})
			}
		}
	}
	// meta.json that does not describe the vectors.
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, corpus, emb, BuildOptions{})
	m, _ := readMeta(dir)
	m.Dim++
	writeMeta(dir, m)
	if _, err := Open(dir, OpenOptions{}); err == nil {
		t.Error("Open with a meta.json of another dimension: got nil error")
	}
	os.WriteFile(filepath.Join(dir, metaFile), []byte("{"), 0o644)
	if _, err := Open(dir, OpenOptions{}); err == nil {
		t.Error("Open with a damaged meta.json: got nil error")
	}
}

// aligned copies b into memory aligned for 8-byte loads.
func aligned(b []byte) []byte {
	if b == nil {
		return nil
	}
	w := make([]uint64, (len(b)+7)/8)
	out := raw.Bytes(w)[:len(b)]
	copy(out, b)
	return out
}

// TestBatchMatchesSingle checks that batched, single, parallel and IVF
// (all partitions) searches agree exactly, for every precision.
func TestBatchMatchesSingle(t *testing.T) {
	const n, dim = 12000, 48
	vecs := clustered(7, n, dim, 40, 0.8)
	queries := around(centres(7, 40, dim), 8, 70, dim, 0.8)
	corpus := vecCorpus(n)
	ctx := context.Background()
	for _, prec := range Precisions() {
		t.Run(string(prec), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "idx")
			build(t, dir, corpus, &vecEmbedder{dim: dim, vecs: vecs}, BuildOptions{Precision: prec, BatchSize: 500, ChunkSize: 5000, IVF: &IVFOptions{NList: 20, Seed: 1}})
			one := open(t, dir, OpenOptions{Workers: 1})
			many := open(t, dir, OpenOptions{Workers: 3})
			ivf := open(t, dir, OpenOptions{Workers: 2, NProbe: 20})
			if p := many.rows.parts(n, 3); p < 2 {
				t.Fatalf("the index splits in %d part(s); the test needs a parallel scan", p)
			}
			qs := make([][]float32, 70)
			excl := make([][]string, 70)
			for i := range qs {
				qs[i] = queries[i*dim : (i+1)*dim]
				excl[i] = []string{corpus[i*17].ID, "unknown"}
			}
			batch, err := many.SearchBatchVectors(ctx, qs, 10, excl)
			if err != nil {
				t.Fatal(err)
			}
			ivfBatch, err := ivf.SearchBatchVectors(ctx, qs, 10, excl)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				a, err := one.SearchVector(ctx, q, 10, excl[i])
				if err != nil {
					t.Fatal(err)
				}
				b, _ := many.SearchVector(ctx, q, 10, excl[i])
				c, _ := ivf.SearchVector(ctx, q, 10, excl[i])
				for name, got := range map[string][]retrieve.Hit{"parallel": b, "batch": batch[i], "ivf": c, "ivf batch": ivfBatch[i]} {
					if diff := cmp.Diff(a, got); diff != "" {
						t.Fatalf("query %d: %s search differs from the single-goroutine one (-single +%s):\n%s", i, name, name, diff)
					}
				}
			}
		})
	}
}

// TestPrecisionsAgree compares float16 and int8 storage with float32.
func TestPrecisionsAgree(t *testing.T) {
	const n, dim, nq = 5000, 64, 200
	vecs := clustered(11, n, dim, 50, 0.9)
	queries := around(centres(11, 50, dim), 12, nq, dim, 0.9)
	corpus := vecCorpus(n)
	ctx := context.Background()
	results := map[Precision][][]retrieve.Hit{}
	for _, prec := range Precisions() {
		dir := filepath.Join(t.TempDir(), string(prec))
		st := build(t, dir, corpus, &vecEmbedder{dim: dim, vecs: vecs}, BuildOptions{Precision: prec, BatchSize: 1000})
		x := open(t, dir, OpenOptions{})
		size, _ := os.Stat(filepath.Join(dir, vectorsFile))
		t.Logf("%s: vectors.bin %d bytes (index %d)", prec, size.Size(), st.IndexBytes)
		qs := make([][]float32, nq)
		for i := range qs {
			qs[i] = queries[i*dim : (i+1)*dim]
		}
		hits, err := x.SearchBatchVectors(ctx, qs, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		results[prec] = hits
	}
	for _, prec := range []Precision{Float16, Int8} {
		overlap, top1 := 0.0, 0
		maxErr := 0.0
		for i, want := range results[Float32] {
			got := results[prec][i]
			overlap += float64(len(intersect(retrievetest.HitIDs(want), retrievetest.HitIDs(got)))) / 10
			if got[0].ID == want[0].ID {
				top1++
				maxErr = max(maxErr, math.Abs(got[0].Score-want[0].Score))
			}
		}
		overlap /= nq
		t.Logf("%s vs float32: mean top-10 overlap %.4f, top-1 agreement %d/%d, largest top-1 score difference %.2g", prec, overlap, top1, nq, maxErr)
		if overlap < 0.9 || top1 < nq*9/10 {
			t.Errorf("%s: top-10 overlap %.3f and top-1 agreement %d/%d with float32, want >= 0.9 and >= 90%%", prec, overlap, top1, nq)
		}
	}
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestIVFRecall measures recall@10 of IVF against exact search on 20,000
// clustered vectors, for queries drawn from the same clusters and for
// queries in random directions (far from every cluster: the harder case).
func TestIVFRecall(t *testing.T) {
	const n, dim, nq = 20000, 64, 200
	vecs := clustered(21, n, dim, 200, 1.0)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, vecCorpus(n), &vecEmbedder{dim: dim, vecs: vecs}, BuildOptions{BatchSize: 2000, ChunkSize: 10000})
	ist, err := BuildIVF(context.Background(), dir, IVFOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("IVF: %d partitions (largest %d, %d empty), trained on %d vectors in %d iterations, %v",
		ist.NList, ist.LargestList, ist.EmptyLists, ist.Sample, ist.Iterations, ist.Elapsed)
	if ist.NList != 566 {
		t.Errorf("default partitions for %d vectors: got %d, want 4*sqrt(N) = 566", n, ist.NList)
	}
	exact := open(t, dir, OpenOptions{})
	for _, set := range []struct {
		name    string
		queries []float32
	}{
		{"in-cluster", around(centres(21, 200, dim), 22, nq, dim, 1.0)},
		{"random", randomUnit(23, nq, dim)},
	} {
		qs := make([][]float32, nq)
		for i := range qs {
			qs[i] = set.queries[i*dim : (i+1)*dim]
		}
		want, err := exact.SearchBatchVectors(context.Background(), qs, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		reached := 0
		var curve []string
		for _, nprobe := range []int{1, 2, 4, 8, 16, 32, 64} {
			x := open(t, dir, OpenOptions{NProbe: nprobe})
			got, err := x.SearchBatchVectors(context.Background(), qs, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := recall(want, got)
			curve = append(curve, fmt.Sprintf("nprobe %d: %.4f", nprobe, r))
			if r >= 0.95 && reached == 0 {
				reached = nprobe
			}
		}
		t.Logf("%s queries, recall@10: %s", set.name, strings.Join(curve, ", "))
		if reached == 0 {
			t.Errorf("%s queries: recall@10 stays below 0.95 up to nprobe 64", set.name)
		}
	}
}

func recall(want, got [][]retrieve.Hit) float64 {
	var found, total int
	for i := range want {
		found += len(intersect(retrievetest.HitIDs(want[i]), retrievetest.HitIDs(got[i])))
		total += len(want[i])
	}
	return float64(found) / float64(total)
}

// TestIVFProbesFurther excludes most rows of the nearest partition: the
// search still returns k hits by probing more partitions.
func TestIVFProbesFurther(t *testing.T) {
	const n, dim = 400, 8
	vecs := clustered(31, n, dim, 10, 0.5)
	corpus := vecCorpus(n)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, corpus, &vecEmbedder{dim: dim, vecs: vecs}, BuildOptions{IVF: &IVFOptions{NList: 40}})
	x := open(t, dir, OpenOptions{NProbe: 1})
	q := vecs[:dim]
	// The rows of the partition nearest q: exclude them all.
	order := x.ivf.probeOrder(q, dim)
	slices.SortFunc(order, compareCands)
	near := order[0].row
	var exclude []string
	for _, r := range x.ivf.rows[x.ivf.listOff[near]:x.ivf.listOff[near+1]] {
		exclude = append(exclude, corpus[r].ID)
	}
	if len(exclude) == 0 || len(exclude) >= n/2 {
		t.Fatalf("nearest partition holds %d rows", len(exclude))
	}
	for _, k := range []int{5, n - len(exclude), n} {
		hits, err := x.SearchVector(context.Background(), q, k, exclude)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(k, n-len(exclude)); len(hits) != want {
			t.Errorf("k=%d: got %d hits, want %d", k, len(hits), want)
		}
		if len(intersect(retrievetest.HitIDs(hits), exclude)) != 0 {
			t.Error("excluded rows returned")
		}
	}
}

func TestIVFDeterministic(t *testing.T) {
	const n, dim = 3000, 16
	vecs := clustered(41, n, dim, 30, 0.7)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, vecCorpus(n), &vecEmbedder{dim: dim, vecs: vecs}, BuildOptions{BatchSize: 1000})
	var files [][]byte
	for _, workers := range []int{1, 3} {
		if _, err := BuildIVF(context.Background(), dir, IVFOptions{NList: 50, Seed: 9, Workers: workers}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, ivfFile))
		files = append(files, b)
	}
	if !slices.Equal(files[0], files[1]) {
		t.Error("the same seed with 1 and 3 workers made different partitions")
	}
	m, _ := readMeta(dir)
	if m.IVF == nil || m.IVF.NList != 50 || m.IVF.Seed != 9 {
		t.Errorf("meta.json ivf: got %+v", m.IVF)
	}
}

func TestFloat16(t *testing.T) {
	// Every half survives the round trip.
	for h := range 1 << 16 {
		f := fromFloat16(uint16(h))
		if f != f {
			continue
		}
		if got := toFloat16(f); got != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, got)
		}
	}
	// Rounding picks the nearest half, ties to even.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		if f != f || math.Abs(float64(f)) > 65504 {
			continue
		}
		h := toFloat16(f)
		got := float64(fromFloat16(h))
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 || (nb^h)&0x8000 != 0 {
				continue
			}
			alt := float64(fromFloat16(nb))
			d, da := math.Abs(got-float64(f)), math.Abs(alt-float64(f))
			if da < d || (da == d && h&1 == 1) {
				t.Fatalf("%v rounds to %v (%#04x), but %v (%#04x) is nearer or even", f, got, h, alt, nb)
			}
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e6, 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {5.960464477539063e-08, 1}, {1e-9, 0}} {
		if got := toFloat16(c.f); got != c.want {
			t.Errorf("toFloat16(%v): got %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestQuantizeInt8(t *testing.T) {
	v := []float32{0.5, -1, 0.25, 0}
	q := make([]int8, 4)
	scale := quantizeInt8(q, v)
	if scale != 1.0/127 || !slices.Equal(q, []int8{64, -127, 32, 0}) {
		t.Errorf("got %v scale %v, want [64 -127 32 0] scale 1/127", q, scale)
	}
	if s := quantizeInt8(q, make([]float32, 4)); s != 0 || !slices.Equal(q, make([]int8, 4)) {
		t.Errorf("zero vector: got %v scale %v", q, s)
	}
}

// TestKeepChunks rebuilds at another precision from kept checkpoints,
// embedding nothing.
func TestKeepChunks(t *testing.T) {
	corpus := textCorpus(40)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, corpus, newBagEmbedder(corpus), BuildOptions{KeepChunks: true, ChunkSize: 16})
	if got := len(chunkFiles(t, dir)); got != 3 {
		t.Errorf("kept %d chunks, want 3", got)
	}
	emb := &countingEmbedder{next: newBagEmbedder(corpus), fail: 1}
	st := build(t, dir, corpus, emb, BuildOptions{KeepChunks: true, ChunkSize: 16, Overwrite: true, Precision: Int8})
	if st.Resumed != 40 || st.Embedded != 0 || emb.calls != 0 {
		t.Errorf("rebuild: resumed %d, embedded %d, %d calls; want 40, 0, 0", st.Resumed, st.Embedded, emb.calls)
	}
	if x := open(t, dir, OpenOptions{}); x.Meta().Precision != Int8 || x.Len() != 40 {
		t.Errorf("rebuilt index: %s with %d passages, want int8 with 40", x.Meta().Precision, x.Len())
	}
	build(t, dir, corpus, newBagEmbedder(corpus), BuildOptions{ChunkSize: 16, Overwrite: true})
	for _, name := range []string{chunksDir, stateFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after a build without KeepChunks: %v", name, err)
		}
	}
}

// FuzzDocs feeds docs.bin readers damaged files: errors, never panics.
func FuzzDocs(f *testing.F) {
	dir := f.TempDir()
	w, err := newDocWriter(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range textCorpus(6) {
		w.add(p)
	}
	w.add(data.Passage{ID: "x", Text: "ab", Sentences: []string{"not in the text"}})
	if err := w.finish(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, docsFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := openDocs(aligned(b))
		if err != nil {
			return
		}
		for i := range s.n {
			s.passage(i, false)
			s.passage(i, true)
		}
		s.lookup("x")
		s.lookup("")
	})
}

// poisonEmbedder refuses (400) every request that holds a passage with the
// word "poison", or every request when all is set.
type poisonEmbedder struct {
	next llm.Embedder
	all  bool
}

func (e *poisonEmbedder) Embed(ctx context.Context, in []string) ([][]float32, llm.Usage, error) {
	for _, s := range in {
		if e.all || strings.Contains(s, "poison") {
			return nil, llm.Usage{}, &llm.StatusError{StatusCode: 400, Message: "input is too long"}
		}
	}
	return e.next.Embed(ctx, in)
}

// TestRefusedPassages: a passage the server refuses is stored as zeros,
// counted and explained; a server that refuses everything fails the build.
func TestRefusedPassages(t *testing.T) {
	corpus := textCorpus(30)
	corpus[11].Text = "poison " + corpus[11].Text
	dir := filepath.Join(t.TempDir(), "idx")
	st := build(t, dir, corpus, &poisonEmbedder{next: newBagEmbedder(corpus)}, BuildOptions{BatchSize: 8})
	if st.Failed != 1 || st.ZeroVectors != 1 || !strings.Contains(st.FailReason, "passage 12") ||
		!strings.Contains(st.FailReason, corpus[11].ID) || !strings.Contains(st.FailReason, "400") {
		t.Errorf("got %d failed, %d zero vectors, reason %q; want passage 12 refused with 400", st.Failed, st.ZeroVectors, st.FailReason)
	}
	// 4 batches, and the refused one split down to its poisoned passage:
	// 8 -> 4+4 -> (2+2) -> (1+1).
	if st.Requests != 4+2+2+2 {
		t.Errorf("got %d requests, want 10", st.Requests)
	}
	if m := open(t, dir, OpenOptions{}).Meta(); m.Failed != 1 {
		t.Errorf("meta.json: %d failed, want 1", m.Failed)
	}
	_, err := Build(context.Background(), filepath.Join(t.TempDir(), "idx"), data.NewPassageSlice(corpus),
		&poisonEmbedder{all: true}, BuildOptions{Model: "m"})
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("server refusing everything: got error %v, want the 400", err)
	}
}

// TestPassageFormat embeds passages as the authors' code does for E5
// ("passage: title: T, context: X"), records it in meta.json, and the
// default leaves meta.json without it.
func TestPassageFormat(t *testing.T) {
	srv := newServer(t, llmtest.Options{EmbeddingDim: 8})
	client := newClient(t, srv.URL(), "e5-test")
	corpus := textCorpus(4)
	dir := filepath.Join(t.TempDir(), "idx")
	build(t, dir, corpus, client, BuildOptions{PassageFormat: retrieve.TitleContext})
	var sent []string
	for _, r := range srv.Requests() {
		sent = append(sent, r.Input...)
	}
	want := "passage: title: " + corpus[1].Title + ", context: " + corpus[1].Text
	if !slices.Contains(sent, want) {
		t.Errorf("inputs %q lack %q", sent, want)
	}
	x := open(t, dir, OpenOptions{Embedder: client})
	if m := x.Meta(); m.PassageFormat != retrieve.TitleContext || !strings.Contains(m.Input, "context: ") {
		t.Errorf("meta.json: format %q, input %q", m.PassageFormat, m.Input)
	}
	if _, err := retrieve.ParsePassageFormat("title-context"); err != nil {
		t.Error(err)
	}
	if _, err := retrieve.ParsePassageFormat("markdown"); err == nil {
		t.Error("an unknown passage format: no error")
	}
}
