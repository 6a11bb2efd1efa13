package dense

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/mmap"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

var (
	// ErrClosed is returned by searches on a closed Index.
	ErrClosed = errors.New("dense: index is closed")
	// ErrNoEmbedder is returned by Search when the index was opened without
	// an embedder (SearchVector needs none).
	ErrNoEmbedder = errors.New("dense: index opened without an embedder: cannot embed a text query")
	// ErrDim is returned for a query vector whose length is not the
	// index's dimension (an embedder serving another model).
	ErrDim = errors.New("dense: query vector dimension differs from the index's")
)

// OpenOptions configure Open.
type OpenOptions struct {
	// Embedder embeds text queries for Search and SearchBatch; it should
	// serve the model the index was built with (Meta().Model).
	Embedder llm.Embedder
	// NProbe > 0 searches the IVF partitions (ivf.bin, from BuildIVF)
	// instead of every row: the NProbe partitions nearest each query.
	NProbe int
	// Workers is the number of goroutines a search splits its rows among;
	// 0 means GOMAXPROCS at the time of the search.
	Workers int
}

// Index is a dense index opened from disk. It meets the retrieve contract:
// scores are inner products of the stored vectors with the query vector
// (cosines when the index is normalised, as by default), and hits with
// equal scores come in corpus order. A text query that is empty or blank,
// or whose embedding is all zeros, matches nothing.
//
// An Index is safe for concurrent use. Close releases the mappings;
// searches after Close fail with ErrClosed.
type Index struct {
	files *mmap.Set

	meta    Meta
	vh      vectorsHeader
	rows    rows
	docs    docStore
	ivf     *ivfIndex
	nprobe  int
	emb     llm.Embedder
	workers int
}

// Open opens the index that Build wrote in dir. The vector and passage
// files are mapped into memory, not read: opening is fast and pages become
// resident as searches touch them. Files are checked so that a damaged
// index gives an error, never a crash.
func Open(dir string, opts OpenOptions) (*Index, error) {
	meta, err := readMeta(dir)
	if err != nil {
		return nil, fmt.Errorf("open dense index: %w", err)
	}
	files := &mmap.Set{}
	fail := func(err error) (*Index, error) {
		files.Close()
		return nil, fmt.Errorf("open dense index %s: %w", dir, err)
	}
	vecs, err := files.Map(filepath.Join(dir, vectorsFile), false)
	if err != nil {
		return fail(err)
	}
	docs, err := files.Map(filepath.Join(dir, docsFile), true)
	if err != nil {
		return fail(err)
	}
	var ivf []byte
	if opts.NProbe > 0 {
		if ivf, err = files.Map(filepath.Join(dir, ivfFile), false); err != nil {
			return fail(fmt.Errorf("NProbe %d needs the IVF partitions (BuildIVF): %w", opts.NProbe, err))
		}
	}
	x, err := newIndex(meta, vecs, docs, ivf, opts)
	if err != nil {
		return fail(err)
	}
	x.files = files
	return x, nil
}

// rowsOf views the rows of a checked vectors.bin.
func rowsOf(b []byte, h vectorsHeader) *rows {
	var scales []byte
	if h.Precision == Int8 {
		scales = b[h.ScalesOff : h.ScalesOff+h.ScalesLen]
	}
	return viewRows(b[h.RowsOff:h.RowsOff+h.RowsLen], scales, int(h.N), int(h.Dim), h.Precision)
}

// viewRows views n stored rows of dimension dim, and their scales for
// int8, in place.
func viewRows(rb, scales []byte, n, dim int, prec Precision) *rows {
	s := &rows{n: n, dim: dim, prec: prec}
	switch prec {
	case Float32:
		s.f32 = raw.Load[float32](rb)
	case Float16:
		s.f16 = raw.Load[uint16](rb)
	case Int8:
		s.i8 = raw.Load[int8](rb)
		s.scales = raw.Load[float32](scales)
	}
	return s
}

// newIndex uses the contents of the files; ivf is nil without NProbe.
func newIndex(meta Meta, vecs, docs, ivf []byte, opts OpenOptions) (*Index, error) {
	vh, err := decodeVectorsHeader(vecs)
	if err != nil {
		return nil, err
	}
	if meta.Dim != int(vh.Dim) || meta.Passages != int64(vh.N) || meta.Precision != vh.Precision ||
		meta.Normalized != vh.Normalized || meta.BuildID != fmt.Sprintf("%016x", vh.BuildID) {
		return nil, fmt.Errorf("%s does not describe %s: %w", metaFile, vectorsFile, errCorrupt)
	}
	ds, err := openDocs(docs)
	if err != nil {
		return nil, err
	}
	if ds.n != int(vh.N) {
		return nil, fmt.Errorf("%s has %d passages, %s %d: %w", docsFile, ds.n, vectorsFile, vh.N, errCorrupt)
	}
	x := &Index{files: &mmap.Set{}, meta: meta, vh: vh, rows: *rowsOf(vecs, vh), docs: ds, emb: opts.Embedder, workers: opts.Workers}
	if opts.NProbe > 0 {
		if x.ivf, err = openIVF(ivf, vh); err != nil {
			return nil, err
		}
		x.nprobe = opts.NProbe
	}
	return x, nil
}

// Close releases the index. It waits for searches in flight and is
// idempotent.
func (x *Index) Close() error { return x.files.Close() }

// Len returns the number of passages.
func (x *Index) Len() int { return x.rows.n }

// Dim returns the dimension of the vectors.
func (x *Index) Dim() int { return x.rows.dim }

// Meta returns the description stored with the index.
func (x *Index) Meta() Meta { return x.meta }

// NList returns the number of IVF partitions in use, 0 for exact search.
func (x *Index) NList() int {
	if x.ivf == nil {
		return 0
	}
	return x.ivf.nlist
}

func (x *Index) nworkers() int {
	if x.workers > 0 {
		return x.workers
	}
	return runtime.GOMAXPROCS(0)
}

// Search implements retrieve.Retriever: it embeds QueryPrefix + q.Text
// with the Embedder given to Open and searches with the vector.
func (x *Index) Search(ctx context.Context, q retrieve.Query) ([]retrieve.Hit, error) {
	out, err := x.SearchBatch(ctx, []retrieve.Query{q})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// queryBatch is the number of queries per embedding request and per
// batched scan.
const queryBatch = 64

// SearchBatch answers many queries: it embeds them in requests of 64 and
// scans the rows once for each 64 (see SearchBatchVectors). The i-th
// result answers qs[i] exactly as Search would.
func (x *Index) SearchBatch(ctx context.Context, qs []retrieve.Query) ([][]retrieve.Hit, error) {
	for _, q := range qs {
		if q.K < 1 {
			return nil, retrieve.ErrBadK
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	vecs := make([][]float32, len(qs))
	var idx []int
	var texts []string
	for i, q := range qs {
		if strings.TrimSpace(q.Text) != "" && x.rows.n > 0 {
			idx = append(idx, i)
			texts = append(texts, x.meta.QueryPrefix+q.Text)
		}
	}
	if len(texts) > 0 && x.emb == nil {
		return nil, ErrNoEmbedder
	}
	for lo := 0; lo < len(texts); lo += queryBatch {
		hi := min(lo+queryBatch, len(texts))
		got, _, err := x.emb.Embed(ctx, texts[lo:hi])
		if err != nil {
			return nil, fmt.Errorf("embed queries: %w", err)
		}
		if len(got) != hi-lo {
			return nil, fmt.Errorf("embed queries: got %d vectors for %d queries", len(got), hi-lo)
		}
		for j, v := range got {
			vecs[idx[lo+j]] = v
		}
	}
	ks := make([]int, len(qs))
	excl := make([][]string, len(qs))
	titles := make([]bool, len(qs))
	for i, q := range qs {
		ks[i], excl[i], titles[i] = q.K, q.Exclude, q.TitlesOnly
	}
	return x.searchMany(ctx, vecs, ks, excl, titles)
}

// SearchVector returns the k rows of highest inner product with vec (scaled
// to unit length first when the index is normalised), excluding the
// passages whose ids are in exclude, best first, ties in corpus order. A
// zero vector matches nothing.
func (x *Index) SearchVector(ctx context.Context, vec []float32, k int, exclude []string) ([]retrieve.Hit, error) {
	out, err := x.SearchBatchVectors(ctx, [][]float32{vec}, k, [][]string{exclude})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// SearchBatchVectors is SearchVector for many vectors at once; exclude is
// nil or holds one list per vector. Without IVF it reads each block of rows
// from memory once for up to 64 queries, scoring the block against each
// while it is in cache, so a batch costs far less memory traffic than as
// many single searches; with IVF the queries run in parallel.
func (x *Index) SearchBatchVectors(ctx context.Context, vecs [][]float32, k int, exclude [][]string) ([][]retrieve.Hit, error) {
	if k < 1 {
		return nil, retrieve.ErrBadK
	}
	if exclude != nil && len(exclude) != len(vecs) {
		return nil, fmt.Errorf("dense: %d exclusion lists for %d vectors", len(exclude), len(vecs))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ks := make([]int, len(vecs))
	for i := range ks {
		ks[i] = k
	}
	if exclude == nil {
		exclude = make([][]string, len(vecs))
	}
	return x.searchMany(ctx, vecs, ks, exclude, make([]bool, len(vecs)))
}

func (x *Index) searchMany(ctx context.Context, vecs [][]float32, ks []int, exclude [][]string, titles []bool) ([][]retrieve.Hit, error) {
	if !x.files.Use() {
		return nil, ErrClosed
	}
	defer x.files.Done()
	qs := make([][]float32, len(vecs))
	excl := make([][]int32, len(vecs))
	for i, v := range vecs {
		if v == nil || x.rows.n == 0 {
			continue
		}
		q, err := x.prepare(v)
		if err != nil {
			return nil, err
		}
		qs[i] = q
		excl[i] = x.excludeRows(exclude[i])
	}
	cands := make([][]cand, len(vecs))
	workers := x.nworkers()
	if x.ivf != nil {
		var mu sync.Mutex
		var first error
		next := 0
		var wg sync.WaitGroup
		// One query per goroutine: a search over a few partitions is too
		// small to split.
		inner := 1
		if len(qs) == 1 {
			inner = workers
		}
		for range min(workers, len(qs)) {
			wg.Go(func() {
				for {
					mu.Lock()
					i := next
					next++
					stop := first != nil
					mu.Unlock()
					if i >= len(qs) || stop {
						return
					}
					if qs[i] == nil {
						continue
					}
					cs, err := x.ivf.search(ctx, qs[i], ks[i], x.nprobe, excl[i], inner)
					mu.Lock()
					if err != nil && first == nil {
						first = err
					}
					cands[i] = cs
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			return nil, first
		}
	} else {
		for lo := 0; lo < len(qs); lo += queryBatch {
			hi := min(lo+queryBatch, len(qs))
			var got [][]cand
			var err error
			if hi-lo == 1 {
				if qs[lo] != nil {
					var c []cand
					c, err = x.rows.exact(ctx, qs[lo], ks[lo], excl[lo], workers)
					got = [][]cand{c}
				} else {
					got = [][]cand{nil}
				}
			} else {
				got, err = x.rows.exactBatch(ctx, qs[lo:hi], ks[lo:hi], excl[lo:hi], workers)
			}
			if err != nil {
				return nil, err
			}
			copy(cands[lo:hi], got)
		}
	}
	out := make([][]retrieve.Hit, len(vecs))
	for i, cs := range cands {
		if len(cs) == 0 {
			continue
		}
		hits := make([]retrieve.Hit, len(cs))
		for j, c := range cs {
			p, err := x.docs.passage(int(c.row), titles[i])
			if err != nil {
				return nil, err
			}
			hits[j] = retrieve.Hit{Passage: p, Score: float64(c.score)}
		}
		out[i] = hits
	}
	return out, nil
}

// prepare checks a query vector and returns the vector to score with: a
// copy, scaled to unit length for a normalised index, or nil for a zero
// vector (which matches nothing).
func (x *Index) prepare(v []float32) ([]float32, error) {
	if len(v) != x.rows.dim {
		return nil, fmt.Errorf("%w: %d components, the index has %d", ErrDim, len(v), x.rows.dim)
	}
	q := make([]float32, len(v))
	var sum float64
	for _, c := range v {
		sum += float64(c) * float64(c)
	}
	if math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil, errors.New("dense: query vector has components that are not finite")
	}
	if sum == 0 {
		return nil, nil
	}
	scale := 1.0
	if x.vh.Normalized {
		scale = 1 / math.Sqrt(sum)
	}
	for i, c := range v {
		q[i] = float32(float64(c) * scale)
	}
	return q, nil
}

// excludeRows returns the rows of the given ids, sorted; unknown ids are
// ignored.
func (x *Index) excludeRows(ids []string) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if r := x.docs.lookup(id); r >= 0 {
			out = append(out, int32(r))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
