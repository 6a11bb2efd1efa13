package bm25

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/outdir"
	"github.com/distill-rag/distill/retrieve/internal/idtable"
	"github.com/distill-rag/distill/retrieve/internal/metafile"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// Default BM25 parameters: the method's settings (those of its reference
// Pyserini runs), not Lucene's own 1.2 / 0.75.
const (
	DefaultK1 = 0.9
	DefaultB  = 0.4
)

// Source yields the passages to index; Next returns io.EOF after the last.
// A *data.CorpusReader is a Source.
type Source interface {
	Next() (data.Passage, error)
}

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
	// LuceneNorms scores with document lengths rounded as Lucene stores
	// them (one byte: exact below 24 terms, then 4 significant bits,
	// rounded down), so that scores follow Lucene's, OpenSearch's and
	// Pyserini's more closely. The default, exact lengths, is textbook
	// BM25. Each changes a few near-tied ranks; see README.
	LuceneNorms bool
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
}

const analyzerName = "english: unicode words, possessives, lower case, Lucene English stop words, Snowball English stemmer"

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
func Build(ctx context.Context, dir string, src Source, opts BuildOptions) (BuildStats, error) {
	if opts.K1 == 0 {
		opts.K1 = DefaultK1
	}
	if opts.B == 0 {
		opts.B = DefaultB
	}
	if opts.K1 < 0 || opts.B < 0 || opts.B > 1 || math.IsNaN(opts.K1) || math.IsNaN(opts.B) {
		return BuildStats{}, fmt.Errorf("bm25 parameters k1=%g b=%g: want k1 >= 0 and 0 <= b <= 1", opts.K1, opts.B)
	}
	mode := outdir.New
	if opts.Overwrite {
		mode = outdir.Resume // the old index is replaced at the end
	}
	var st BuildStats
	err := outdir.Write(ctx, dir, mode, func(od *outdir.Dir) error {
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
func build(ctx context.Context, od *outdir.Dir, src Source, opts BuildOptions) (BuildStats, error) {
	start := time.Now()
	dir := od.Path()
	tmp, err := os.MkdirTemp(dir, ".build"+data.TmpMarker)
	if err != nil {
		return BuildStats{}, err
	}
	defer os.RemoveAll(tmp) // empty once moved into place

	b, err := newBuilder(tmp)
	if err != nil {
		return BuildStats{}, err
	}
	defer b.docFile.Close()
	// Reading (decoding JSON, say) runs in its own goroutine, ahead of the
	// analysis, so that the two share the machine's cores.
	rctx, stopReading := context.WithCancel(ctx)
	batches, readerDone := prefetch(rctx, src)
	// The reader must be done with src before Build returns and the caller
	// closes it.
	defer func() { stopReading(); <-readerDone }()
	n := int64(0)
	for batch := range batches {
		if batch.err != nil {
			return BuildStats{}, fmt.Errorf("build index: read passage %d: %w", n+int64(len(batch.ps))+1, batch.err)
		}
		for _, p := range batch.ps {
			n++
			if err := b.add(p); err != nil {
				return BuildStats{}, fmt.Errorf("build index: passage %d: %w", n, err)
			}
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
		opts.Progress(int64(len(b.docLen)))
	}
	normKind := ""
	if opts.LuceneNorms {
		// The total stays exact: Lucene's average length is too.
		for d, l := range b.docLen {
			b.docLen[d] = luceneLength(l)
		}
		normKind = "lucene"
	}
	h, size, err := b.write(ctx, tmp, opts.K1, opts.B)
	if err != nil {
		return BuildStats{}, err
	}
	st := BuildStats{
		Passages: int64(h.Docs), Terms: int64(h.Terms), Postings: int64(h.Postings),
		AvgDocLen: avgLen(h), IndexBytes: size,
	}
	meta := Meta{
		Format: Format, Version: formatVersion, Analyzer: analyzerName,
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

// batch is a run of passages read ahead, or the error that ended reading.
type batch struct {
	ps  []data.Passage
	err error
}

// prefetch reads src in a goroutine of its own and sends its passages in
// batches. The channel is closed after the last batch, after a batch with
// an error, or once ctx is done; done is closed when the goroutine has
// returned.
func prefetch(ctx context.Context, src Source) (batches <-chan batch, done <-chan struct{}) {
	const size = 512
	out := make(chan batch, 8)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(out)
		for {
			b := batch{ps: make([]data.Passage, 0, size)}
			for len(b.ps) < size {
				p, err := src.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.err = err
					break
				}
				b.ps = append(b.ps, p)
			}
			if len(b.ps) == 0 && b.err == nil {
				return
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil || len(b.ps) < size {
				return
			}
		}
	}()
	return out, finished
}

func avgLen(h header) float64 {
	if h.Docs == 0 {
		return 0
	}
	return float64(h.TotalLen) / float64(h.Docs)
}

// builder accumulates postings in memory in document order and streams the
// stored documents to docs.bin.
type builder struct {
	an Analyzer
	// tokTerm maps an analysed token (before stop words and stemming) to its
	// term number, or -1 for a stop word, so each distinct token form is
	// stemmed once.
	tokTerm *tokenTable
	termNum map[string]int32
	terms   []string
	// Per-document scratch, indexed by term number.
	lastDoc  []int32
	freq     []uint32
	docTerms []int32
	// All postings, in document order.
	postings blocks[posting]

	docLen    []uint32
	totalLen  uint64
	idOff     []uint64
	idData    []byte
	titleOff  []uint64
	titleData []byte
	docOff    []uint64
	docFile   *os.File
	docW      *bufio.Writer
	docBytes  uint64
	scratch   []byte
}

func newBuilder(dir string) (*builder, error) {
	f, err := os.Create(filepath.Join(dir, docsFile))
	if err != nil {
		return nil, fmt.Errorf("build index: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(docsMagic)
	return &builder{
		tokTerm:  newTokenTable(),
		termNum:  make(map[string]int32, 1<<16),
		docFile:  f,
		docW:     w,
		idOff:    []uint64{0},
		titleOff: []uint64{0},
		docOff:   []uint64{0},
	}, nil
}

func (b *builder) add(p data.Passage) error {
	if p.ID == "" {
		return errors.New("empty doc id")
	}
	if len(b.docLen) >= math.MaxUint32-1 {
		return errors.New("too many passages for one index")
	}
	d := int32(len(b.docLen))
	b.docTerms = b.docTerms[:0]
	var length uint32
	visit := func(tok []byte) {
		t, ok := b.tokTerm.get(tok)
		if !ok {
			t = b.termFor(tok)
		}
		if t < 0 {
			return
		}
		length++
		if b.lastDoc[t] != d {
			b.lastDoc[t] = d
			b.freq[t] = 0
			b.docTerms = append(b.docTerms, t)
		}
		b.freq[t]++
	}
	b.an.Each(p.Title, visit)
	b.an.Each(p.Text, visit)
	for _, t := range b.docTerms {
		b.postings.add(posting{term: uint32(t), doc: uint32(d), tf: uint16(min(b.freq[t], math.MaxUint16))})
	}
	b.docLen = append(b.docLen, length)
	b.totalLen += uint64(length)
	b.idData = append(b.idData, p.ID...)
	b.idOff = append(b.idOff, uint64(len(b.idData)))
	b.titleData = append(b.titleData, p.Title...)
	b.titleOff = append(b.titleOff, uint64(len(b.titleData)))

	b.scratch = encodeDoc(b.scratch[:0], p.Text, p.Sentences)
	if _, err := b.docW.Write(b.scratch); err != nil {
		return fmt.Errorf("store passage: %w", err)
	}
	b.docBytes += uint64(len(b.scratch))
	b.docOff = append(b.docOff, b.docBytes)
	return nil
}

type posting struct {
	term, doc uint32
	tf        uint16
}

// blocks is an append-only sequence kept in fixed-size blocks, so that
// growing it never copies what it already holds (the postings of a large
// corpus run to hundreds of millions).
type blocks[T any] struct {
	full [][]T
	cur  []T
	n    int
}

const blockLen = 1 << 16

func (b *blocks[T]) add(v T) {
	if len(b.cur) == cap(b.cur) {
		if b.cur != nil {
			b.full = append(b.full, b.cur)
		}
		b.cur = make([]T, 0, blockLen)
	}
	b.cur = append(b.cur, v)
	b.n++
}

// all returns the blocks in order.
func (b *blocks[T]) all() [][]T {
	if len(b.cur) == 0 {
		return b.full
	}
	return append(b.full[:len(b.full):len(b.full)], b.cur)
}

// termFor analyses a token seen for the first time and caches the result.
func (b *builder) termFor(tok []byte) int32 {
	stem := Normalize(tok)
	t := int32(-1)
	if stem != "" {
		var ok bool
		t, ok = b.termNum[stem]
		if !ok {
			t = int32(len(b.terms))
			b.termNum[stem] = t
			b.terms = append(b.terms, stem)
			b.lastDoc = append(b.lastDoc, -1)
			b.freq = append(b.freq, 0)
		}
	}
	b.tokTerm.put(tok, t)
	return t
}

func (b *builder) id(d uint32) string {
	return string(b.idData[b.idOff[d]:b.idOff[d+1]])
}

// write finishes docs.bin and lays the rest of the index out in index.bin.
func (b *builder) write(ctx context.Context, dir string, k1, bParam float64) (header, int64, error) {
	if err := b.docW.Flush(); err != nil {
		return header{}, 0, fmt.Errorf("build index: store passages: %w", err)
	}
	if err := b.docFile.Sync(); err != nil {
		return header{}, 0, fmt.Errorf("build index: store passages: %w", err)
	}
	if err := b.docFile.Close(); err != nil {
		return header{}, 0, fmt.Errorf("build index: store passages: %w", err)
	}
	n, v, p := len(b.docLen), len(b.terms), b.postings.n

	// The id table finds a document by id; building it also finds repeats.
	idHash, err := idtable.Build(n, func(d int) []byte { return b.idData[b.idOff[d]:b.idOff[d+1]] })
	if err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return header{}, 0, err
	}

	// Terms in byte order; rank maps a term number to its place.
	order := make([]int32, v)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return cmp.Compare(b.terms[x], b.terms[y]) })
	rank := make([]uint32, v)
	termOff := make([]uint64, v+1)
	var termData []byte
	for i, t := range order {
		rank[t] = uint32(i)
		termData = append(termData, b.terms[t]...)
		termOff[i+1] = uint64(len(termData))
	}

	// Counting sort of the postings by term keeps documents ascending.
	postOff := make([]uint64, v+1)
	for _, blk := range b.postings.all() {
		for _, ps := range blk {
			postOff[rank[ps.term]+1]++
		}
	}
	for i := 1; i <= v; i++ {
		postOff[i] += postOff[i-1]
	}
	next := slices.Clone(postOff[:v])
	postDoc := make([]uint32, p)
	postTF := make([]uint16, p)
	termMax := make([]float32, v)
	norm := norms(b.docLen, k1, bParam, float64(b.totalLen)/float64(max(n, 1)))
	for _, blk := range b.postings.all() {
		for _, ps := range blk {
			r := rank[ps.term]
			j := next[r]
			next[r]++
			postDoc[j] = ps.doc
			postTF[j] = ps.tf
			termMax[r] = max(termMax[r], impact(ps.tf, norm[ps.doc]))
		}
	}
	if err := ctx.Err(); err != nil {
		return header{}, 0, err
	}

	h := header{
		Version: formatVersion, Docs: uint64(n), Terms: uint64(v), Postings: uint64(p),
		TotalLen: b.totalLen, K1: k1, B: bParam,
	}
	path := filepath.Join(dir, indexFile)
	f, err := os.Create(path)
	if err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	defer f.Close()
	w := &sectionWriter{w: bufio.NewWriterSize(f, 1<<20), off: headerSize}
	if _, err := w.w.Write(make([]byte, headerSize)); err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	h.Sections[secDocLen] = w.put(raw.Bytes(b.docLen))
	h.Sections[secTermOff] = w.put(raw.Bytes(termOff))
	h.Sections[secTermData] = w.put(termData)
	h.Sections[secPostOff] = w.put(raw.Bytes(postOff))
	h.Sections[secPostDoc] = w.put(raw.Bytes(postDoc))
	h.Sections[secPostTF] = w.put(raw.Bytes(postTF))
	h.Sections[secTermMax] = w.put(raw.Bytes(termMax))
	h.Sections[secIDOff] = w.put(raw.Bytes(b.idOff))
	h.Sections[secIDData] = w.put(b.idData)
	h.Sections[secIDHash] = w.put(raw.Bytes(idHash))
	h.Sections[secTitleOff] = w.put(raw.Bytes(b.titleOff))
	h.Sections[secTitleData] = w.put(b.titleData)
	h.Sections[secDocOff] = w.put(raw.Bytes(b.docOff))
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err == nil {
		_, w.err = f.WriteAt(h.encode(), 0)
	}
	if w.err == nil {
		w.err = f.Sync()
	}
	if w.err != nil {
		return header{}, 0, fmt.Errorf("build index: write %s: %w", path, w.err)
	}
	if err := f.Close(); err != nil {
		return header{}, 0, fmt.Errorf("build index: %w", err)
	}
	return h, int64(w.off) + int64(len(docsMagic)) + int64(b.docBytes), nil
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

// sectionWriter appends 8-byte aligned sections and remembers the first error.
type sectionWriter struct {
	w   *bufio.Writer
	off uint64
	err error
}

func (s *sectionWriter) pad() {
	if r := s.off % 8; r != 0 && s.err == nil {
		_, s.err = s.w.Write(make([]byte, 8-r))
		s.off += 8 - r
	}
}

func (s *sectionWriter) put(b []byte) section {
	s.pad()
	sec := section{Off: s.off, Len: uint64(len(b))}
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
	s.off += uint64(len(b))
	return sec
}
