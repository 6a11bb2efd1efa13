package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elastic/go-elasticsearch/v8/esapi"
	"golang.org/x/sync/errgroup"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/llm/httperr"
	"github.com/distill-rag/distill/retrieve"
)

// The bulk loading of one Load: a reader goroutine cuts the source into
// jobs, workers embed and send them with the _bulk API, and the documents
// the cluster rejected for a while are sent again.

// maxIDBytes is the cluster's limit on a document id.
const maxIDBytes = 512

// loader bulk-loads the batches of one Load.
type loader struct {
	c     *client
	cfg   Config
	index string
	opts  LoadOptions
	dims  int
}

// job is one batch of passages.
type job struct {
	first int64 // the 1-based source position of ps[0]
	ps    []data.Passage
	vecs  [][]float32 // nil: not embedded yet
}

// outcome is what loading a job came to.
type outcome struct {
	passages                  int
	loaded, retried, requests int64
	failed                    []ItemError
}

// readJob reads up to n passages; eof tells that the source is done.
func readJob(src retrieve.Source, n int, first int64) (job, bool, error) {
	j := job{first: first, ps: make([]data.Passage, 0, n)}
	for len(j.ps) < n {
		p, err := src.Next()
		if err == io.EOF {
			return j, true, nil
		}
		if err != nil {
			return j, false, fmt.Errorf("read passage %d: %w", first+int64(len(j.ps)), err)
		}
		j.ps = append(j.ps, p)
	}
	return j, false, nil
}

// run reads the source in one goroutine and loads its batches in
// opts.Workers others; done sees each batch's outcome, in the calling
// goroutine. It returns when every goroutine has, with the first error.
func (l *loader) run(ctx context.Context, src retrieve.Source, first job, eof bool, done func(outcome)) error {
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan job, l.opts.Workers)
	outcomes := make(chan outcome, l.opts.Workers)
	g.Go(func() error {
		defer close(jobs)
		j := first
		for {
			if len(j.ps) > 0 {
				select {
				case jobs <- j:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			if eof {
				return nil
			}
			var err error
			if j, eof, err = readJob(src, l.opts.BatchSize, j.first+int64(len(j.ps))); err != nil {
				return err
			}
		}
	})
	var workers sync.WaitGroup
	for range l.opts.Workers {
		workers.Add(1)
		g.Go(func() error {
			defer workers.Done()
			for j := range jobs {
				o, err := l.load(gctx, j)
				if err != nil {
					return err
				}
				select {
				case outcomes <- o:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	go func() {
		workers.Wait()
		close(outcomes)
	}()
	for o := range outcomes {
		done(o)
	}
	return g.Wait()
}

// embed returns the batch's vectors, scaled to unit length.
func (l *loader) embed(ctx context.Context, ps []data.Passage) ([][]float32, error) {
	vecs, err := l.opts.Vectors.Embed(ctx, ps)
	if err != nil {
		return nil, fmt.Errorf("embed passages %q...: %w", ps[0].ID, err)
	}
	if len(vecs) != len(ps) {
		return nil, fmt.Errorf("embed passages %q...: got %d vectors for %d passages", ps[0].ID, len(vecs), len(ps))
	}
	return vecs, nil
}

// item is one document ready to send: its action and source lines.
type item struct {
	pos   int64
	id    string
	lines []byte
}

// encode turns a job into bulk items; passages that cannot be sent are
// failures at once.
func (l *loader) encode(j job) ([]item, []ItemError, error) {
	items := make([]item, 0, len(j.ps))
	var failed []ItemError
	for i, p := range j.ps {
		pos := j.first + int64(i)
		fail := func(reason string) {
			failed = append(failed, ItemError{ID: p.ID, Passage: pos, Type: "invalid_passage", Reason: reason})
		}
		if p.ID == "" {
			fail("empty doc id")
			continue
		}
		if !utf8.ValidString(p.ID) {
			fail("doc id is not valid UTF-8")
			continue
		}
		if len(p.ID) > maxIDBytes {
			fail(fmt.Sprintf("doc id of %d bytes, at most %d allowed", len(p.ID), maxIDBytes))
			continue
		}
		d := doc{ID: p.ID, Title: p.Title, Text: p.Text, Sentences: p.Sentences}
		if l.dims > 0 {
			v := j.vecs[i]
			switch {
			case len(v) == 0:
				fail("no vector")
				continue
			case len(v) != l.dims:
				fail(fmt.Sprintf("vector of %d dimensions, the index has %d", len(v), l.dims))
				continue
			}
			u, ok := unit(v)
			if !ok {
				fail("vector is zero or not finite")
				continue
			}
			d.Vector = u
		}
		id, err := json.Marshal(p.ID)
		if err != nil {
			return nil, nil, err
		}
		source, err := json.Marshal(d)
		if err != nil {
			return nil, nil, fmt.Errorf("passage %d (%q): %w", pos, p.ID, err)
		}
		lines := make([]byte, 0, len(id)+len(source)+24)
		lines = append(lines, `{"index":{"_id":`...)
		lines = append(lines, id...)
		lines = append(lines, "}}\n"...)
		lines = append(lines, source...)
		lines = append(lines, '\n')
		items = append(items, item{pos: pos, id: p.ID, lines: lines})
	}
	return items, failed, nil
}

// load sends one job, and again the documents the cluster rejected for a
// while (429, 5xx), until they are in or out of retries.
func (l *loader) load(ctx context.Context, j job) (outcome, error) {
	o := outcome{passages: len(j.ps)}
	if l.dims > 0 && j.vecs == nil {
		var err error
		if j.vecs, err = l.embed(ctx, j.ps); err != nil {
			return o, err
		}
	}
	pending, failed, err := l.encode(j)
	if err != nil {
		return o, err
	}
	o.failed = failed
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(l.cfg.backoff(attempt))
			select {
			case <-ctx.Done():
				t.Stop()
				return o, ctx.Err()
			case <-t.C:
			}
		}
		o.requests++
		results, err := l.bulk(ctx, pending)
		if err != nil {
			return o, err
		}
		var again []item
		for i, r := range results {
			it := pending[i]
			switch {
			case r.Status >= 200 && r.Status < 300:
				o.loaded++
			case (r.Status == http.StatusTooManyRequests || r.Status >= 500) && attempt < l.opts.Retries:
				again = append(again, it)
			default:
				ie := ItemError{ID: it.id, Passage: it.pos, Status: r.Status}
				if r.Error != nil {
					ie.Type, ie.Reason = r.Error.Type, r.Error.Text()
				}
				if r.Status == http.StatusTooManyRequests || r.Status >= 500 {
					ie.Reason += fmt.Sprintf(" (still failing after %d tries)", attempt+1)
				}
				o.failed = append(o.failed, ie)
			}
		}
		o.retried += int64(len(again))
		pending = again
	}
	return o, nil
}

// bulkItem is one entry of a bulk answer.
type bulkItem struct {
	ID     string          `json:"_id"`
	Status int             `json:"status"`
	Error  *httperr.Object `json:"error"`
}

// bulkFilter trims the bulk answer to what load reads.
var bulkFilter = []string{"errors", "items.*._id", "items.*.status", "items.*.error"}

// bulk sends items in one _bulk request and returns the result of each,
// in order. A request refused as a whole, or an answer that does not
// account for every item, is an error.
func (l *loader) bulk(ctx context.Context, items []item) ([]bulkItem, error) {
	n := 0
	for _, it := range items {
		n += len(it.lines)
	}
	body := make([]byte, 0, n)
	for _, it := range items {
		body = append(body, it.lines...)
	}
	req := esapi.BulkRequest{
		Index:      l.index,
		Body:       bytes.NewReader(body),
		Header:     http.Header{"Content-Type": {"application/x-ndjson"}},
		FilterPath: bulkFilter,
	}
	const op = "bulk"
	_, answer, err := l.c.call(ctx, op, req)
	if err != nil {
		return nil, err
	}
	var res struct {
		Items []map[string]bulkItem `json:"items"`
	}
	if err := decode(op, answer, &res); err != nil {
		return nil, err
	}
	if len(res.Items) != len(items) {
		return nil, httperr.Malformed(op, fmt.Errorf("%d results for %d documents", len(res.Items), len(items)), nil)
	}
	out := make([]bulkItem, len(items))
	for i, m := range res.Items {
		r, ok := m["index"]
		if !ok || len(m) != 1 {
			return nil, httperr.Malformed(op, fmt.Errorf("result %d is not an index result: %v", i+1, m), nil)
		}
		if r.ID != "" && r.ID != items[i].id {
			return nil, httperr.Malformed(op, fmt.Errorf("result %d is for doc %q, sent %q", i+1, r.ID, items[i].id), nil)
		}
		if r.Status == 0 {
			return nil, httperr.Malformed(op, fmt.Errorf("result %d has no status", i+1), nil)
		}
		out[i] = r
	}
	return out, nil
}
