package bm25

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve"
	"github.com/distill-rag/distill/retrieve/internal/raw"
)

// TestSegmentsChangeNothing builds the same corpus on one worker in one
// segment and on several workers in many small segments (written to files
// and merged): the index files must be the same bytes.
func TestSegmentsChangeNothing(t *testing.T) {
	g := newGenerator(13, 8000)
	ps := g.corpus(6000)
	var files [][2][]byte
	for _, opts := range []BuildOptions{
		{Workers: 1},
		{Workers: 3, segmentPostings: 7000},
		{Workers: 2, segmentPostings: 40000},
	} {
		dir := filepath.Join(t.TempDir(), "idx")
		st, err := Build(context.Background(), dir, data.NewPassageSlice(ps), opts)
		if err != nil {
			t.Fatal(err)
		}
		if opts.segmentPostings > 0 && st.Postings/int64(opts.segmentPostings) < 3 {
			t.Fatalf("%d postings in segments of %d: the test wants three segments or more", st.Postings, opts.segmentPostings)
		}
		var f [2][]byte
		for i, name := range []string{indexFile, docsFile} {
			if f[i], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		left, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 3 {
			t.Errorf("workers %d, segments of %d: the index directory holds %d files, want 3 (segments left behind?)", opts.Workers, opts.segmentPostings, len(left))
		}
		files = append(files, f)
	}
	for i := 1; i < len(files); i++ {
		for j, name := range []string{indexFile, docsFile} {
			if !bytes.Equal(files[0][j], files[i][j]) {
				t.Errorf("build %d: %s differs from the one-worker, one-segment build", i, name)
			}
		}
	}
}

// TestReadsVersion1 rewrites an index in the layout of format version 1
// (posting lists in the terms' byte order, no term-to-list table) and
// checks that it answers as the version 2 index does.
func TestReadsVersion1(t *testing.T) {
	g := newGenerator(17, 3000)
	ps := g.corpus(2000)
	dir := filepath.Join(t.TempDir(), "idx")
	v2 := buildIn(t, dir, ps, BuildOptions{})
	index, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(dir, docsFile))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := newIndex(toVersion1(t, index), docs)
	if err != nil {
		t.Fatalf("version 1 index: %v", err)
	}
	if v1.termList != nil {
		t.Fatal("a version 1 index has a term-to-list table")
	}
	ctx := context.Background()
	for range 200 {
		q := retrieve.Query{Text: g.query(), K: 10}
		want, err := v2.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v1.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("query %q: version 1 differs (-v2 +v1):\n%s", q.Text, diff)
		}
	}
}

// toVersion1 lays a version 2 index.bin out as version 1.
func toVersion1(t *testing.T, b []byte) []byte {
	t.Helper()
	h, err := decodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	sec := func(i int) []byte { s := h.Sections[i]; return b[s.Off : s.Off+s.Len] }
	list := raw.Load[uint32](sec(secTermList))
	postOff := raw.Load[uint64](sec(secPostOff))
	postDoc := raw.Load[uint32](sec(secPostDoc))
	postTF := raw.Load[uint16](sec(secPostTF))
	termMax := raw.Load[float32](sec(secTermMax))
	off := []uint64{0}
	var docs []uint32
	var tfs []uint16
	var maxes []float32
	for _, l := range list {
		docs = append(docs, postDoc[postOff[l]:postOff[l+1]]...)
		tfs = append(tfs, postTF[postOff[l]:postOff[l+1]]...)
		maxes = append(maxes, termMax[l])
		off = append(off, uint64(len(docs)))
	}
	h.Version = 1
	replaced := map[int][]byte{
		secPostOff: raw.Bytes(off), secPostDoc: raw.Bytes(docs), secPostTF: raw.Bytes(tfs),
		secTermMax: raw.Bytes(maxes), secTermList: nil,
	}
	parts := make([][]byte, numSections)
	size := map[int]uint64{}
	for i := range numSections {
		parts[i] = sec(i)
		if r, ok := replaced[i]; ok {
			parts[i] = r
		}
		size[i] = uint64(len(parts[i]))
	}
	total := newLayout(&h, size)
	h.Sections[secTermList] = section{}
	out := make([]byte, total)
	copy(out, h.encode())
	for i, p := range parts {
		copy(out[h.Sections[i].Off:], p)
	}
	// Fresh memory keeps the sections aligned.
	aligned := raw.Bytes(make([]uint64, (len(out)+7)/8))[:len(out)]
	copy(aligned, out)
	return aligned
}
