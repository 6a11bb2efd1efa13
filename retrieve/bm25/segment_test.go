package bm25

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

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

// TestReadsOldVersions rewrites an index in the layouts of format versions
// 1 (posting lists in the terms' byte order, no term-to-list table, no
// blocks) and 2 (no blocks) and checks that each answers as the current
// index does.
func TestReadsOldVersions(t *testing.T) {
	g := newGenerator(17, 3000)
	ps := g.corpus(2000)
	dir := filepath.Join(t.TempDir(), "idx")
	cur := buildIn(t, dir, ps, BuildOptions{})
	if cur.blockOff == nil || len(cur.blockLast) == 0 {
		t.Fatal("the current index has no blocks: the test no longer compares with them")
	}
	index, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(dir, docsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []uint32{1, 2} {
		old, err := newIndex(downgrade(t, index, version), docs)
		if err != nil {
			t.Fatalf("version %d index: %v", version, err)
		}
		if (old.termList != nil) != (version >= 2) || old.blockOff != nil {
			t.Fatalf("version %d index: term-to-list table %v, blocks %v", version, old.termList != nil, old.blockOff != nil)
		}
		for range 200 {
			sameHits(t, cur, old, retrieve.Query{Text: g.query(), K: 10}, fmt.Sprintf("version %d against the current", version))
		}
	}
}

// downgrade lays a current index.bin out as the given older version.
func downgrade(t *testing.T, b []byte, version uint32) []byte {
	t.Helper()
	h, err := decodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	sec := func(i int) []byte { s := h.Sections[i]; return b[s.Off : s.Off+s.Len] }
	replaced := map[int][]byte{secBlockOff: nil, secBlockLast: nil, secBlockMax: nil}
	if version == 1 {
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
		replaced[secPostOff], replaced[secPostDoc], replaced[secPostTF] = raw.Bytes(off), raw.Bytes(docs), raw.Bytes(tfs)
		replaced[secTermMax], replaced[secTermList] = raw.Bytes(maxes), nil
	}
	h.Version, h.BlockSize = version, 0
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
	for i := range parts {
		if len(parts[i]) == 0 {
			h.Sections[i] = section{} // as the older builds wrote it
		}
	}
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
