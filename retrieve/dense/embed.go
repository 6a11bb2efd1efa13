package dense

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/distill-rag/distill/llm"
	"github.com/distill-rag/distill/retrieve"
)

// embedRun embeds the chunks that have no checkpoint yet.
type embedRun struct {
	dir       string
	docs      *docStore
	hashes    []uint64
	emb       llm.Embedder
	opts      BuildOptions
	prefix    string
	format    retrieve.PassageFormat
	normalize bool
	total     int64

	dim         atomic.Int64
	resumed     int64
	resumedZero int64
	embedded    atomic.Int64
	requests    atomic.Int64
	tokens      atomic.Int64
	zero        atomic.Int64
	failed      atomic.Int64
	resumedFail int64
	progressMu  sync.Mutex
	failMu      sync.Mutex
	failReason  string
}

// chunkJob is one chunk being embedded; its batches fill vecs.
type chunkJob struct {
	n, first, count int
	mu              sync.Mutex
	vecs            []float32
	zero, failed    int64
	pending         atomic.Int32
}

type batchJob struct {
	c      *chunkJob
	lo, hi int // passages of the chunk
}

func (e *embedRun) chunkRange(c int) (first, count int) {
	first = c * e.opts.ChunkSize
	return first, min(e.opts.ChunkSize, int(e.total)-first)
}

func (e *embedRun) run(ctx context.Context) error {
	todo, err := e.checkpoints(ctx)
	if err != nil {
		return err
	}
	e.progress(0)
	if len(todo) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan batchJob)
	finished := make(chan *chunkJob, len(todo))
	// Two chunks in flight (more if one is smaller than a round of
	// requests): the workers start on the next while the last batches of
	// one are still out.
	slots := make(chan struct{}, 2+e.opts.Workers*e.opts.BatchSize/e.opts.ChunkSize)
	g.Go(func() error {
		defer close(batches)
		for _, c := range todo {
			select {
			case slots <- struct{}{}:
			case <-gctx.Done():
				return gctx.Err()
			}
			first, count := e.chunkRange(c)
			job := &chunkJob{n: c, first: first, count: count}
			job.pending.Store(int32((count + e.opts.BatchSize - 1) / e.opts.BatchSize))
			for lo := 0; lo < count; lo += e.opts.BatchSize {
				select {
				case batches <- batchJob{c: job, lo: lo, hi: min(lo+e.opts.BatchSize, count)}:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
		}
		return nil
	})
	for range e.opts.Workers {
		g.Go(func() error {
			for b := range batches {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := e.embed(gctx, b); err != nil {
					return err
				}
				if b.c.pending.Add(-1) == 0 {
					finished <- b.c // buffered for every chunk: never blocks
				}
			}
			return nil
		})
	}
	// One goroutine writes the checkpoints.
	g.Go(func() error {
		write := func(job *chunkJob) error {
			return writeChunk(e.dir, job, int(e.dim.Load()), e.hashes[job.n])
		}
		for range todo {
			select {
			case job := <-finished:
				if err := write(job); err != nil {
					return err
				}
				<-slots
			case <-gctx.Done():
				// Keep the chunks that were complete when the run stopped.
				for {
					select {
					case job := <-finished:
						if err := write(job); err != nil {
							return err
						}
					default:
						return gctx.Err()
					}
				}
			}
		}
		return nil
	})
	return g.Wait()
}

// checkpoints checks the chunks an earlier run left and returns the
// numbers of those still to embed.
func (e *embedRun) checkpoints(ctx context.Context) ([]int, error) {
	nchunks := len(e.hashes)
	dir := filepath.Join(e.dir, chunksDir)
	have, err := listChunks(dir)
	if err != nil {
		return nil, err
	}
	// With Overwrite, checkpoints that do not fit are dropped; otherwise
	// they are an error.
	stale := func(err error) error {
		if !e.opts.Overwrite {
			return err
		}
		return nil
	}
	var todo []int
	for c := range nchunks {
		path, ok := have[c]
		delete(have, c)
		if !ok {
			todo = append(todo, c)
			continue
		}
		h, err := readChunkHeader(path)
		first, count := e.chunkRange(c)
		if err == nil && (h.first != uint64(first) || h.count != uint64(count) || h.hash != e.hashes[c]) {
			err = stale(fmt.Errorf("corpus: passages %d to %d %w (another corpus, or the same one changed)", first+1, first+count, ErrMismatch))
			if err != nil {
				return nil, err
			}
			err = ErrMismatch
		}
		if err == nil {
			err = e.setDim(int(h.dim))
			if err != nil && !e.opts.Overwrite {
				return nil, err
			}
		}
		if err == nil {
			// The vectors too: a damaged checkpoint is embedded again.
			_, err = readChunk(path, first, count, int(h.dim), h.hash)
		}
		if err != nil {
			os.Remove(path)
			todo = append(todo, c)
			continue
		}
		e.resumed += int64(count)
		e.resumedZero += int64(h.zero)
		e.resumedFail += int64(h.failed)
	}
	for _, path := range have {
		if err := stale(fmt.Errorf("corpus: %d chunks long, shorter than the one the checkpoints in %s came from: it %w", nchunks, chunksDir, ErrMismatch)); err != nil {
			return nil, err
		}
		os.Remove(path)
	}
	if e.resumed == 0 || len(todo) == 0 || !e.opts.Overwrite {
		return todo, nil
	}
	// With Overwrite, the server may now give vectors of another dimension
	// than the checkpoints (without it, the first batch finds out): one
	// request tells, and if so every checkpoint goes.
	vecs, usage, err := e.emb.Embed(ctx, []string{e.input(todo[0] * e.opts.ChunkSize)})
	if err != nil {
		return nil, fmt.Errorf("embed passage %d: %w", todo[0]*e.opts.ChunkSize+1, err)
	}
	e.requests.Add(1)
	e.tokens.Add(int64(usage.PromptTokens))
	if len(vecs) == 1 && int64(len(vecs[0])) == e.dim.Load() {
		return todo, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.dim.Store(0)
	e.resumed, e.resumedZero, e.resumedFail = 0, 0, 0
	todo = todo[:0]
	for c := range nchunks {
		todo = append(todo, c)
	}
	return todo, nil
}

// input returns the text embedded for passage i, or "" when it cannot be
// read (the batch that holds it reports the error).
func (e *embedRun) input(i int) string {
	p, err := e.docs.passage(i, false)
	if err != nil {
		return ""
	}
	return passageInput(e.prefix, e.format, p)
}

func (e *embedRun) setDim(d int) error {
	if d <= 0 {
		return errors.New("embedding with no components")
	}
	if e.dim.CompareAndSwap(0, int64(d)) {
		return nil
	}
	if old := e.dim.Load(); old != int64(d) {
		return fmt.Errorf("embedding dimension %d %w (dimension %d)", d, ErrMismatch, old)
	}
	return nil
}

// progress counts add more passages embedded and reports.
func (e *embedRun) progress(add int64) {
	e.embedded.Add(add)
	if e.opts.Progress == nil {
		return
	}
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	// Read under the lock, so that reports never go backwards.
	e.opts.Progress(e.resumed+e.embedded.Load(), e.total)
}

// embed embeds one batch and stores its vectors in the chunk.
func (e *embedRun) embed(ctx context.Context, b batchJob) error {
	inputs := make([]string, 0, b.hi-b.lo)
	for i := b.lo; i < b.hi; i++ {
		p, err := e.docs.passage(b.c.first+i, false)
		if err != nil {
			return err
		}
		inputs = append(inputs, passageInput(e.prefix, e.format, p))
	}
	first, last := b.c.first+b.lo+1, b.c.first+b.hi
	vecs, reasons, err := e.embedSplit(ctx, inputs)
	if err != nil {
		return fmt.Errorf("embed passages %d to %d: %w", first, last, err)
	}
	if len(reasons) == len(inputs) {
		// Nothing of the batch went through: the server, not the
		// passages, is at fault.
		return fmt.Errorf("embed passages %d to %d: %w", first, last, reasons[0])
	}
	for _, v := range vecs {
		if v == nil {
			continue
		}
		if err := e.setDim(len(v)); err != nil {
			return fmt.Errorf("embed passages %d to %d: %w", first, last, err)
		}
	}
	dim := int(e.dim.Load())
	c := b.c
	c.mu.Lock()
	if c.vecs == nil {
		c.vecs = make([]float32, c.count*dim)
	}
	for i, v := range vecs {
		dst := c.vecs[(b.lo+i)*dim : (b.lo+i+1)*dim]
		if !prepareVector(dst, v, e.normalize) {
			c.zero++
			e.zero.Add(1)
		}
		if v == nil {
			c.failed++
			e.failed.Add(1)
		}
	}
	c.mu.Unlock()
	for i, v := range vecs {
		if v == nil {
			e.fail(b.c.first+b.lo+i, reasons[0])
			break
		}
	}
	e.progress(int64(len(vecs)))
	return nil
}

// embedSplit embeds inputs. When the server refuses a request for its
// input (400, 413, 422: a passage too long for the model, say), it splits
// the request in two and tries again, down to single passages: those the
// server still refuses get a nil vector, and their reasons are returned.
func (e *embedRun) embedSplit(ctx context.Context, inputs []string) ([][]float32, []error, error) {
	vecs, usage, err := e.emb.Embed(ctx, inputs)
	e.requests.Add(1)
	if err == nil {
		e.tokens.Add(int64(usage.PromptTokens))
		if len(vecs) != len(inputs) {
			return nil, nil, fmt.Errorf("got %d vectors for %d inputs", len(vecs), len(inputs))
		}
		for i, v := range vecs {
			if v == nil {
				return nil, nil, fmt.Errorf("no vector for input %d", i)
			}
		}
		return vecs, nil, nil
	}
	var se *llm.StatusError
	if !errors.As(err, &se) || (se.StatusCode != 400 && se.StatusCode != 413 && se.StatusCode != 422) {
		return nil, nil, err
	}
	if len(inputs) == 1 {
		return [][]float32{nil}, []error{err}, nil
	}
	mid := len(inputs) / 2
	a, ra, err := e.embedSplit(ctx, inputs[:mid])
	if err != nil {
		return nil, nil, err
	}
	b, rb, err := e.embedSplit(ctx, inputs[mid:])
	if err != nil {
		return nil, nil, err
	}
	return append(a, b...), append(ra, rb...), nil
}

// fail records the first passage the server refused.
func (e *embedRun) fail(row int, reason error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	if e.failReason == "" {
		id := string(e.docs.id(row))
		e.failReason = fmt.Sprintf("passage %d (id %q): %v", row+1, id, reason)
	}
}

// prepareVector copies v into dst, scaled to unit length when normalize is
// set. A vector without direction (zero, or with non-finite components)
// becomes zeros, and prepareVector reports false.
func prepareVector(dst, v []float32, normalize bool) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		clear(dst)
		return false
	}
	scale := 1.0
	if normalize {
		scale = 1 / math.Sqrt(sum)
	}
	for i, x := range v {
		dst[i] = float32(float64(x) * scale)
	}
	return true
}
