package retrieve_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/retrieve/dense"
	"github.com/distill-rag/distill/retrieve/elastic"
	"github.com/distill-rag/distill/retrieve/retrievetest"
)

// opened is an index of the test kinds: a fixed ranking that remembers
// what it was opened from and whether it was closed.
type opened struct {
	fixed
	spec   string
	closed *[]string
}

func (o *opened) Close() error {
	*o.closed = append(*o.closed, o.spec)
	return nil
}

// testKinds is a registry of two kinds: "list:a,b" ranks a and b (an
// address-like spec whose value may hold commas), "dir-*" ranks the
// directory's name; "dir-bad" fails to open, "list:" is malformed.
func testKinds(closed *[]string) *retrieve.Registry {
	return retrieve.NewRegistry(
		retrieve.Kind{
			Name: "list", Spec: "list:ID,...",
			Match: func(s string) bool { return strings.HasPrefix(s, "list:") },
			Open: func(_ context.Context, s string) (retrieve.Index, error) {
				ids := strings.TrimPrefix(s, "list:")
				if ids == "" {
					return nil, &retrieve.SpecError{Err: errors.New("empty list")}
				}
				return &opened{fixed: strings.Split(ids, ","), spec: s, closed: closed}, nil
			},
		},
		retrieve.Kind{
			Name: "dir", Spec: "dir-NAME",
			Match: func(s string) bool { return strings.HasPrefix(s, "dir-") && !strings.Contains(s, ",") },
			Open: func(_ context.Context, s string) (retrieve.Index, error) {
				if s == "dir-bad" {
					return nil, errors.New("damaged")
				}
				return &opened{fixed: fixed{s}, spec: s, closed: closed}, nil
			},
		},
	)
}

func TestRegistryOpen(t *testing.T) {
	tests := []struct {
		spec    string
		want    []string // the ids ranked, in order
		indexes int      // opened
	}{
		{"dir-x", []string{"dir-x"}, 1},
		{"list:a", []string{"a"}, 1},
		{"list:a,b,c", []string{"a", "b", "c"}, 1},
		// Hybrids: a list's commas stay with it while the pieces after
		// them are no spec of their own.
		{"dir-x,list:a", []string{"dir-x", "a"}, 2},
		{"list:a,b, dir-x", []string{"a", "dir-x", "b"}, 2},
		{"dir-x,dir-y", []string{"dir-x", "dir-y"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			var closed []string
			x, err := testKinds(&closed).Open(context.Background(), tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := retrievetest.HitIDs(retrievetest.Search(context.Background(), t, x, retrieve.Query{Text: "q", K: 5}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ranking (-want +got):\n%s", diff)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			if len(closed) != tt.indexes {
				t.Errorf("closed %v, want the %d indexes opened", closed, tt.indexes)
			}
		})
	}
}

func TestRegistryErrors(t *testing.T) {
	var closed []string
	r := testKinds(&closed)
	_, err := r.Open(context.Background(), "nowhere")
	if err == nil || !strings.Contains(err.Error(), "nowhere is not an index directory") || !strings.Contains(err.Error(), "list:ID,...; dir-NAME") {
		t.Errorf("unknown spec: got %v, want one naming it and the kinds", err)
	}
	var se *retrieve.SpecError
	if _, err := r.Open(context.Background(), "list:"); !errors.As(err, &se) {
		t.Errorf("malformed spec: got %v, want a *SpecError", err)
	}
	// A hybrid that fails part way closes what it opened.
	if _, err := r.Open(context.Background(), "dir-x,list:a,dir-bad"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("hybrid with a damaged index: got %v", err)
	}
	if !slices.Equal(closed, []string{"dir-x", "list:a"}) {
		t.Errorf("closed %v, want the two opened before the failure", closed)
	}
	if got := r.Kinds(); !slices.Equal(got, []string{"list", "dir"}) {
		t.Errorf("kinds %v", got)
	}
}

// TestKindsTellDirectoriesApart opens a BM25 directory through the
// registry of the real kinds: the BM25 kind takes it, neither the dense
// nor the cluster kind does.
func TestKindsTellDirectoriesApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bm25")
	corpus := []data.Passage{{ID: "d1", Title: "Paris", Text: "Paris is the capital of France."}}
	if _, err := bm25.Build(context.Background(), dir, data.NewPassageSlice(corpus), bm25.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bm25.IsIndex(dir) || dense.IsIndex(dir) || elastic.IsURL(dir) {
		t.Errorf("bm25.IsIndex %v, dense.IsIndex %v, elastic.IsURL %v: want only the first", bm25.IsIndex(dir), dense.IsIndex(dir), elastic.IsURL(dir))
	}
	r := retrieve.NewRegistry(elastic.Kind(elastic.OpenOptions{}), dense.Kind(nil, dense.OpenOptions{}), bm25.Kind())
	k, ok := r.Lookup(dir)
	if !ok || k.Name != bm25.Name {
		t.Fatalf("lookup: got %q, %v; want the bm25 kind", k.Name, ok)
	}
	x, err := r.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	hits, err := x.Search(context.Background(), retrieve.Query{Text: "capital of France", K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != "d1" {
		t.Errorf("search: got %v, %v", hits, err)
	}
	if _, ok := r.Lookup(t.TempDir()); ok {
		t.Error("an empty directory matches a kind")
	}
	var se *retrieve.SpecError
	if _, err := r.Open(context.Background(), "es://"); !errors.As(err, &se) {
		t.Errorf("bad address: got %v, want a *SpecError", err)
	}
}
