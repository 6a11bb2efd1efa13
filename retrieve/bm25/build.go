package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/outdir"
	"github.com/distill-rag/distill/internal/analysis"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/metafile"
)

// Default BM25 parameters: the method's settings (those of its reference
// Pyserini runs), not Lucene's own 1.2 / 0.75.
const (
	DefaultK1 = 0.9
	DefaultB  = 0.4
)

// BuildOptions configure Build. The zero value builds with the defaults.
type BuildOptions struct {
	// K1 and B are stored in the index and used by every search; zero means
	// DefaultK1 and DefaultB.
	K1, B float64
	// Overwrite replaces an existing index at the target directory.
	Overwrite bool
	// Progress, when set, is called now and then with the number of
	// passages indexed so far, from the goroutine that called Build.
	Progress func(passages int64)
	// SourceName is recorded in meta.json (the corpus file, for example).
	SourceName string
	// Workers is the number of goroutines that analyse passages; 0 means
	// GOMAXPROCS. The index is the same whatever the number.
	Workers int
	// LuceneNorms scores with document lengths rounded as Lucene stores
	// them (one byte: exact below 24 terms, then 4 significant bits,
	// rounded down), so that scores follow Lucene's, OpenSearch's and
	// Pyserini's more closely. The default, exact lengths, is textbook
	// BM25. Each changes a few near-tied ranks; see docs/commands.md (Retrieval).
	LuceneNorms bool
	// Stemmer stems the terms ("": analysis.Porter2, distill's default;
	// analysis.Porter is Lucene's, and Pyserini's). Searches stem their
	// queries with the index's stemmer, which meta.json records.
	Stemmer analysis.Stemmer

	// segmentPostings bounds the postings held in memory (tests make it
	// small); 0 means defaultSegmentPostings.
	segmentPostings int
}

// BuildStats describes a finished build.
type BuildStats struct {
	Passages   int64         `json:"passages"`
	Terms      int64         `json:"terms"`
	Postings   int64         `json:"postings"`
	AvgDocLen  float64       `json:"avg_doc_len"`
	IndexBytes int64         `json:"index_bytes"`
	Elapsed    time.Duration `json:"-"`
}

// Meta is the human-readable description stored beside the index as meta.json.
type Meta struct {
	Format       string  `json:"format"`
	Version      int     `json:"version"`
	Analyzer     string  `json:"analyzer"`
	K1           float64 `json:"k1"`
	B            float64 `json:"b"`
	Passages     int64   `json:"passages"`
	Terms        int64   `json:"terms"`
	Postings     int64   `json:"postings"`
	AvgDocLen    float64 `json:"avg_doc_len"`
	Source       string  `json:"source,omitempty"`
	BuiltAt      string  `json:"built_at"`
	BuildSeconds float64 `json:"build_seconds"`
	// Norms is "lucene" for an index built with LuceneNorms, empty for
	// exact document lengths.
	Norms string `json:"norms,omitempty"`
	// Stemmer is "porter" for an index stemmed with Porter's original
	// algorithm, empty for Porter2.
	Stemmer analysis.Stemmer `json:"stemmer,omitempty"`
}

// analyzerName describes the analysis of an index in meta.json.
func analyzerName(s analysis.Stemmer) string {
	stemmer := "Snowball English stemmer"
	if s == analysis.Porter {
		stemmer = "Porter stemmer (Lucene's)"
	}
	return "english: unicode words, possessives, lower case, Lucene English stop words, " + stemmer
}

// ErrExists is returned when the target directory holds something and
// BuildOptions.Overwrite is false.
var ErrExists = errors.New("index directory already exists")

// Build indexes every passage of src (title and text as one field) and
// writes the index to dir. The index appears at dir only when it is complete:
// it is built in a temporary directory inside dir, and its files are moved
// into place at the end, meta.json last. dir must be empty or absent unless
// opts.Overwrite is set, in which case an index there stays usable until
// the new one replaces it; another writer in dir is an error
// (outdir.ErrBusy), and a failed build of a new index leaves nothing.
// Doc ids must be unique and non-empty.
func Build(ctx context.Context, dir string, src retrieve.Source, opts BuildOptions) (BuildStats, error) {
	if opts.K1 == 0 {
		opts.K1 = DefaultK1
	}
	if opts.B == 0 {
		opts.B = DefaultB
	}
	if opts.K1 < 0 || opts.B < 0 || opts.B > 1 || math.IsNaN(opts.K1) || math.IsNaN(opts.B) {
		return BuildStats{}, fmt.Errorf("bm25 parameters k1=%g b=%g: want k1 >= 0 and 0 <= b <= 1", opts.K1, opts.B)
	}
	stemmer, err := analysis.ParseStemmer(string(opts.Stemmer))
	if err != nil {
		return BuildStats{}, fmt.Errorf("build index: %w", err)
	}
	opts.Stemmer = stemmer
	mode := outdir.New
	if opts.Overwrite {
		mode = outdir.Resume // the old index is replaced at the end
	}
	var st BuildStats
	err = outdir.Write(ctx, dir, mode, func(od *outdir.Dir) error {
		var err error
		st, err = build(ctx, od, src, opts)
		return err
	})
	if errors.Is(err, outdir.ErrNotEmpty) {
		return BuildStats{}, fmt.Errorf("build index %s: %w (use overwrite to replace it)", dir, ErrExists)
	}
	if err != nil {
		return BuildStats{}, fmt.Errorf("build index: %w", err)
	}
	return st, nil
}

// build builds the index in the directory that Build holds.
func build(ctx context.Context, od *outdir.Dir, src retrieve.Source, opts BuildOptions) (BuildStats, error) {
	start := time.Now()
	dir := od.Path()
	tmp, err := os.MkdirTemp(dir, ".build"+data.TmpMarker)
	if err != nil {
		return BuildStats{}, err
	}
	defer os.RemoveAll(tmp) // empty once moved into place

	dict := newDictionary()
	x, err := newIndexer(tmp, dict, opts.segmentPostings)
	if err != nil {
		return BuildStats{}, err
	}
	defer x.close()
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// The reader must be done with src before Build returns and the caller
	// closes it.
	rctx, stopReading := context.WithCancel(ctx)
	jobs, wait := pipeline(rctx, src, dict, opts.Stemmer, workers)
	defer func() { stopReading(); wait() }()
	n := int64(0)
	for j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return BuildStats{}, ctx.Err()
		}
		if err := x.add(j, n); err != nil {
			return BuildStats{}, fmt.Errorf("build index: %w", err)
		}
		n += int64(len(j.ps))
		if j.err != nil {
			return BuildStats{}, fmt.Errorf("build index: read passage %d: %w", n+1, j.err)
		}
		if err := ctx.Err(); err != nil {
			return BuildStats{}, err
		}
		if opts.Progress != nil {
			opts.Progress(n)
		}
	}
	if err := ctx.Err(); err != nil {
		return BuildStats{}, err
	}
	if opts.Progress != nil {
		opts.Progress(n)
	}
	normKind := ""
	if opts.LuceneNorms {
		// The total stays exact: Lucene's average length is too.
		for d, l := range x.docLen {
			x.docLen[d] = luceneLength(l)
		}
		normKind = "lucene"
	}
	h, size, err := x.finish(ctx, tmp, opts.K1, opts.B)
	if err != nil {
		return BuildStats{}, err
	}
	st := BuildStats{
		Passages: int64(h.Docs), Terms: int64(h.Terms), Postings: int64(h.Postings),
		AvgDocLen: avgLen(h), IndexBytes: size,
	}
	stemmer := opts.Stemmer
	if stemmer == analysis.Porter2 {
		stemmer = "" // the default, as indexes before the option recorded it
	}
	meta := Meta{
		Format: Format, Version: formatVersion, Analyzer: analyzerName(opts.Stemmer), Stemmer: stemmer,
		K1: opts.K1, B: opts.B, Passages: st.Passages, Terms: st.Terms, Postings: st.Postings,
		AvgDocLen: st.AvgDocLen, Source: opts.SourceName, Norms: normKind,
		BuiltAt: time.Now().UTC().Format(time.RFC3339), BuildSeconds: time.Since(start).Seconds(),
	}
	if err := metafile.Write(tmp, meta); err != nil {
		return BuildStats{}, fmt.Errorf("build index: %w", err)
	}
	if err := moveInto(od, tmp); err != nil {
		return BuildStats{}, fmt.Errorf("build index: %w", err)
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// moveInto replaces what the held directory holds with the files of tmp,
// a directory inside it: the old files are removed, then the new ones
// moved in, meta.json last, so that the directory is an index again only
// once all of them are there.
func moveInto(od *outdir.Dir, tmp string) error {
	dir := od.Path()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if name := e.Name(); name != outdir.LockFile && name != filepath.Base(tmp) {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("replace %s: %w", dir, err)
			}
		}
	}
	files, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, last := range []bool{false, true} {
		for _, f := range files {
			if (f.Name() == metafile.Name) != last {
				continue
			}
			if err := os.Rename(filepath.Join(tmp, f.Name()), filepath.Join(dir, f.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func avgLen(h header) float64 {
	if h.Docs == 0 {
		return 0
	}
	return float64(h.TotalLen) / float64(h.Docs)
}

// norms returns k1 * (1 - b + b*dl/avgdl) for every document, in the
// float32 precision that searches use.
func norms(docLen []uint32, k1, b, avgLen float64) []float32 {
	out := make([]float32, len(docLen))
	for d, l := range docLen {
		out[d] = float32(k1 * (1 - b + b*float64(l)/avgLen))
	}
	return out
}

// luceneLength is the document length Lucene scores with: the length as
// stored in one byte and read back. Lengths below 24 are kept; a larger
// one keeps 24 plus the four most significant bits of the rest.
func luceneLength(l uint32) uint32 {
	const exact = 24
	if l < exact {
		return l
	}
	rest := l - exact
	if n := 32 - bits.LeadingZeros32(rest); n > 4 {
		shift := n - 4
		rest = rest >> shift << shift
	}
	return exact + rest
}

// impact is the part of a posting's score that does not depend on the query.
func impact(tf uint16, norm float32) float32 {
	f := float32(tf)
	return f / (f + norm)
}

// BuildTemp builds an index of src in a new temporary directory and opens
// it, for a run over passages that have no index of their own (the
// bundled sample); remove closes the index and deletes the directory.
func BuildTemp(ctx context.Context, src retrieve.Source, opts BuildOptions) (x *Index, remove func(), err error) {
	dir, err := os.MkdirTemp("", "distill-index-")
	if err != nil {
		return nil, nil, err
	}
	idx := filepath.Join(dir, "index")
	if _, err := Build(ctx, idx, src, opts); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if x, err = Open(idx); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return x, func() { x.Close(); os.RemoveAll(dir) }, nil
}
