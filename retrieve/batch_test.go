package retrieve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
)

func TestReadQueries(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []BatchQuery
		wantErr string
	}{
		{"plain", "who is ann\n\nwhere is bob\n", []BatchQuery{{"1", "who is ann"}, {"3", "where is bob"}}, ""},
		{"tsv", "q1\twho is ann\nq2\t where is bob \n", []BatchQuery{{"q1", "who is ann"}, {"q2", "where is bob"}}, ""},
		{"jsonl", `{"id": "a", "query": "x y"}` + "\n" + `{"query": "z", "id": "b"}`, []BatchQuery{{"a", "x y"}, {"b", "z"}}, ""},
		{"mixed", "q1\tone\n{\"id\":\"q2\",\"query\":\"two\"}\nthree", []BatchQuery{{"q1", "one"}, {"q2", "two"}, {"3", "three"}}, ""},
		{"no final newline", "a", []BatchQuery{{"1", "a"}}, ""},
		{"empty", "", nil, ""},
		{"unknown field", `{"id": "a", "query": "x", "qid": 1}`, nil, `q.txt: line 1: not a JSON query object {"id", "query"}: json: unknown field "qid"`},
		{"missing query", `{"id": "a"}`, nil, `q.txt: line 1: field "query": missing or empty`},
		{"missing id", `{"query": "x"}`, nil, `q.txt: line 1: field "id": missing or empty`},
		{"bad json", `{"id": "a", "query": `, nil, `q.txt: line 1: not a JSON query object`},
		{"duplicate", "q1\ta\nq1\tb\n", nil, `q.txt: line 2: query id "q1" already used on line 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadQueries(strings.NewReader(tc.in), "q.txt")
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one starting %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzReadQueries(f *testing.F) {
	f.Add("who\nq1\tx\n{\"id\":\"a\",\"query\":\"b\"}\n")
	f.Add("{\"id\":1}")
	f.Add("\t\t\n{")
	f.Fuzz(func(t *testing.T, in string) {
		qs, err := ReadQueries(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, q := range qs {
			if q.ID == "" || strings.TrimSpace(q.Text) == "" || seen[q.ID] {
				t.Fatalf("bad query %+v", q)
			}
			seen[q.ID] = true
		}
	})
}

// fakeRetriever returns one hit per query, named after the query.
type fakeRetriever struct{ failOn string }

func (f fakeRetriever) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Text == f.failOn {
		return nil, errors.New("boom")
	}
	return []Hit{{Passage: data.Passage{ID: "d-" + q.Text, Title: "T " + q.Text}, Score: 1.5}}, nil
}

func TestSearchBatch(t *testing.T) {
	var qs []BatchQuery
	for i := range 1000 {
		qs = append(qs, BatchQuery{ID: fmt.Sprint(i), Text: fmt.Sprint("q", i)})
	}
	for _, workers := range []int{1, 3, 16} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			var got []int
			err := SearchBatch(context.Background(), fakeRetriever{}, qs, BatchOptions{K: 3, Workers: workers}, func(r BatchResult) error {
				if r.Hits[0].ID != "d-"+r.Query.Text {
					t.Errorf("result %d carries hits of another query", r.Index)
				}
				got = append(got, r.Index)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, idx := range got {
				if idx != i {
					t.Fatalf("result %d emitted at position %d: output not in query order", idx, i)
				}
			}
			if len(got) != len(qs) {
				t.Errorf("got %d results, want %d", len(got), len(qs))
			}
		})
	}
	t.Run("search error", func(t *testing.T) {
		err := SearchBatch(context.Background(), fakeRetriever{failOn: "q500"}, qs, BatchOptions{K: 3}, func(BatchResult) error { return nil })
		if err == nil || !strings.Contains(err.Error(), `query "500": boom`) {
			t.Errorf("got %v, want the failing query named", err)
		}
	})
	t.Run("emit error", func(t *testing.T) {
		stop := errors.New("disk full")
		err := SearchBatch(context.Background(), fakeRetriever{}, qs, BatchOptions{K: 3}, func(r BatchResult) error {
			if r.Index == 10 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) {
			t.Errorf("got %v, want %v", err, stop)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := SearchBatch(ctx, fakeRetriever{}, qs, BatchOptions{K: 3}, func(BatchResult) error { return nil })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
	t.Run("bad k", func(t *testing.T) {
		if err := SearchBatch(context.Background(), fakeRetriever{}, qs, BatchOptions{}, nil); !errors.Is(err, ErrBadK) {
			t.Errorf("got %v, want ErrBadK", err)
		}
	})
}

func TestRunWriter(t *testing.T) {
	res := BatchResult{Query: BatchQuery{ID: "q\"1", Text: "x"}, Hits: []Hit{
		{Passage: data.Passage{ID: "d1", Title: "Tab\there \u2028 \x01 é"}, Score: 3.25},
		{Passage: data.Passage{ID: "d2", Title: "bad \xff byte"}, Score: 1},
	}}
	var buf bytes.Buffer
	rw, err := NewRunWriter(&buf, RunJSONL, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Write(res); err != nil {
		t.Fatal(err)
	}
	rw.Flush()
	type line struct {
		QueryID string  `json:"query_id"`
		Rank    int     `json:"rank"`
		DocID   string  `json:"doc_id"`
		Title   string  `json:"title"`
		Score   float64 `json:"score"`
	}
	var got []line
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	for dec.More() {
		var l line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []line{
		{"q\"1", 1, "d1", "Tab\there \u2028 \x01 é", 3.25},
		{"q\"1", 2, "d2", "bad \ufffd byte", 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jsonl (-want +got):\n%s", diff)
	}

	buf.Reset()
	rw, _ = NewRunWriter(&buf, RunTREC, "bm25")
	rw.Write(BatchResult{Query: BatchQuery{ID: "7"}, Hits: res.Hits})
	rw.Flush()
	if want := "7 Q0 d1 1 3.250000 bm25\n7 Q0 d2 2 1.000000 bm25\n"; buf.String() != want {
		t.Errorf("trec: got %q, want %q", buf.String(), want)
	}
	if _, err := NewRunWriter(&buf, "csv", ""); err == nil {
		t.Error("NewRunWriter(csv): got nil error")
	}
}
