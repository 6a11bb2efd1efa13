package retrieve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
)

// BatchQuery is one query of a batch run, with the id it is reported under.
type BatchQuery struct {
	ID   string `json:"id"`
	Text string `json:"query"`
}

// ReadQueries reads a query file in any of the layouts evaluation tools use,
// chosen line by line:
//
//	{"id": "q1", "query": "..."}   JSONL (unknown fields are an error)
//	q1<TAB>text                   TREC/Pyserini topics (id, tab, query)
//	text                          a bare query; its id is its line number
//
// Blank lines are skipped. name is used in error messages.
func ReadQueries(r io.Reader, name string) ([]BatchQuery, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var out []BatchQuery
	seen := map[string]int{}
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		text := bytes.TrimSpace(raw)
		if len(text) > 0 {
			q, perr := parseQueryLine(text, line)
			if perr != nil {
				return nil, fmt.Errorf("%s: line %d: %w", name, line, perr)
			}
			if prev, dup := seen[q.ID]; dup {
				return nil, fmt.Errorf("%s: line %d: query id %q already used on line %d", name, line, q.ID, prev)
			}
			seen[q.ID] = line
			out = append(out, q)
		}
		if err == io.EOF {
			return out, nil
		}
	}
}

func parseQueryLine(text []byte, line int) (BatchQuery, error) {
	if text[0] == '{' {
		var q BatchQuery
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			return q, fmt.Errorf("not a JSON query object {\"id\", \"query\"}: %w", err)
		}
		if dec.More() {
			return q, fmt.Errorf("more than one JSON value on the line")
		}
		if q.ID == "" {
			return q, fmt.Errorf(`field "id": missing or empty`)
		}
		if strings.TrimSpace(q.Text) == "" {
			return q, fmt.Errorf(`field "query": missing or empty`)
		}
		return q, nil
	}
	if id, rest, ok := bytes.Cut(text, []byte{'\t'}); ok {
		id, rest = bytes.TrimSpace(id), bytes.TrimSpace(rest)
		if len(id) == 0 || len(rest) == 0 {
			return BatchQuery{}, fmt.Errorf("want \"id<TAB>query\" with both parts non-empty")
		}
		return BatchQuery{ID: string(id), Text: string(rest)}, nil
	}
	return BatchQuery{ID: strconv.Itoa(line), Text: string(text)}, nil
}

// BatchOptions configure SearchBatch.
type BatchOptions struct {
	// K is the number of hits per query.
	K int
	// Workers is the number of concurrent searches; zero means one per CPU.
	Workers int
	// TitlesOnly asks for hits without text (see Query.TitlesOnly).
	TitlesOnly bool
}

// BatchResult is the answer to the i-th query of a batch.
type BatchResult struct {
	Index int
	Query BatchQuery
	Hits  []Hit
}

// SearchBatch runs queries on r concurrently and calls emit with each
// result, in the order of queries, from a single goroutine: emit may write
// to an output without locking. The first error (a search failing, emit
// failing, ctx cancelled) stops the batch and is returned.
func SearchBatch(ctx context.Context, r Retriever, queries []BatchQuery, opts BatchOptions, emit func(BatchResult) error) error {
	if opts.K < 1 {
		return ErrBadK
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Queries are handed out in chunks; each chunk's results travel on its
	// own channel, and the emitter drains the channels in order, so output
	// stays ordered while workers run ahead by at most a window of chunks.
	const chunk = 64
	type result struct {
		res []BatchResult
		err error
	}
	g, ctx := errgroup.WithContext(ctx)
	window := make(chan chan result, 2*workers)
	g.Go(func() error {
		defer close(window)
		sem := make(chan struct{}, workers)
		for start := 0; start < len(queries); start += chunk {
			end := min(start+chunk, len(queries))
			ch := make(chan result, 1)
			select {
			case window <- ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			g.Go(func() error {
				defer func() { <-sem }()
				res := make([]BatchResult, 0, end-start)
				for i := start; i < end; i++ {
					hits, err := r.Search(ctx, Query{Text: queries[i].Text, K: opts.K, TitlesOnly: opts.TitlesOnly})
					if err != nil {
						ch <- result{err: fmt.Errorf("query %q: %w", queries[i].ID, err)}
						return nil
					}
					res = append(res, BatchResult{Index: i, Query: queries[i], Hits: hits})
				}
				ch <- result{res: res}
				return nil
			})
		}
		return nil
	})
	g.Go(func() error {
		for ch := range window {
			var got result
			select {
			case got = <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			if got.err != nil {
				return got.err
			}
			for _, res := range got.res {
				if err := emit(res); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return g.Wait()
}
