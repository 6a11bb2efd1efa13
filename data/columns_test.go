package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// wideRow is a file's rows; the narrow types below read some of its columns.
type wideRow struct {
	ID   string         `parquet:"id"`
	Blob string         `parquet:"blob"`
	N    int32          `parquet:"n"`
	Tags []string       `parquet:"tags,list"`
	Docs []RetrievedDoc `parquet:"docs,list"`
	Note *string        `parquet:"note,optional"`
}

// narrowRow has some of wideRow's columns, in another order, all alike.
type narrowRow struct {
	Docs []RetrievedDoc `parquet:"docs,list"`
	N    int32          `parquet:"n"`
	ID   string         `parquet:"id"`
	Tags []string       `parquet:"tags,list"`
}

// writeWide writes rows in three row groups and returns the file's path.
func writeWide(t *testing.T, rows []wideRow) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wide.parquet")
	w, err := CreateParquet[wideRow](path, KindCorpus)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for i := 0; i < len(rows); i += 10 {
		if err := w.Write(rows[i:min(len(rows), i+10)]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func wideRows() []wideRow {
	rows := make([]wideRow, 30)
	for i := range rows {
		note := fmt.Sprint("note ", i)
		rows[i] = wideRow{
			ID: fmt.Sprint("r", i), Blob: strings.Repeat(fmt.Sprintf("blob %d of row %d; ", i*7919%1000, i), 60), N: int32(i),
			Tags: []string{fmt.Sprint("t", i%3), "x"}[:1+i%2],
			Docs: []RetrievedDoc{{Round: int32(i % 2), Rank: 1, DocID: fmt.Sprint("d", i), Title: "T", Score: float64(i) / 2, Chars: 10}}[:i%2],
		}
		if i%4 != 0 {
			rows[i].Note = &note
		}
	}
	return rows
}

// TestReaderReadsOnlyItsColumns checks that a reader of a type with some
// of a file's columns reads only those (parquet-go's conversion leaves the
// others unread), which label relies on to read a few of a trajectories
// file's sixty columns: the other column's pages are corrupted on disk,
// and the narrow rows still come back whole, while a reader of every
// column fails or sees the damage.
func TestReaderReadsOnlyItsColumns(t *testing.T) {
	rows := wideRows()
	path := writeWide(t, rows)

	footer := openFooter(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, g := range footer.Metadata().RowGroups {
		for _, c := range g.Columns {
			if strings.Join(c.MetaData.PathInSchema, ".") != "blob" {
				continue
			}
			// The second half of the chunk: its pages' compressed data.
			start := c.MetaData.DataPageOffset + c.MetaData.TotalCompressedSize/2
			junk := []byte(strings.Repeat("\xa5", int(c.MetaData.TotalCompressedSize/2)))
			if _, err := f.WriteAt(junk, start); err != nil {
				t.Fatal(err)
			}
			damaged++
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if damaged != 3 {
		t.Fatalf("damaged %d blob chunks, want 3", damaged)
	}

	got, err := ReadParquet[narrowRow](path)
	if err != nil {
		t.Fatalf("narrow read: %v", err)
	}
	want := make([]narrowRow, len(rows))
	for i, r := range rows {
		want[i] = narrowRow{ID: r.ID, N: r.N, Tags: r.Tags, Docs: r.Docs}
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("narrow rows (-want +got):\n%s", diff)
	}

	all, err := ReadParquet[wideRow](path)
	if err == nil && cmp.Equal(rows, all, cmpopts.EquateEmpty()) {
		t.Error("reading every column did not meet the damaged pages: the test shows nothing")
	}
}

// TestReaderConverts reads a file into types whose columns differ from
// the file's: a column the file lacks (zero), another integer width,
// required from optional, list elements with fewer and other fields.
func TestReaderConverts(t *testing.T) {
	rows := wideRows()
	path := writeWide(t, rows)

	t.Run("wider type", func(t *testing.T) {
		type row struct {
			ID    string `parquet:"id"`
			Extra string `parquet:"extra"`
			N     int32  `parquet:"n"`
		}
		got, err := ReadParquet[row](path)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			if r.ID != rows[i].ID || r.N != rows[i].N || r.Extra != "" {
				t.Fatalf("row %d: got %+v", i, r)
			}
		}
	})
	t.Run("other type", func(t *testing.T) {
		type row struct {
			ID string `parquet:"id"`
			N  int64  `parquet:"n"`
		}
		got, err := ReadParquet[row](path)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			if r.ID != rows[i].ID || r.N != int64(rows[i].N) {
				t.Fatalf("row %d: got %+v", i, r)
			}
		}
	})
	t.Run("required from optional", func(t *testing.T) {
		type row struct {
			ID   string `parquet:"id"`
			Note string `parquet:"note"`
		}
		got, err := ReadParquet[row](path)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			want := ""
			if rows[i].Note != nil {
				want = *rows[i].Note
			}
			if r.ID != rows[i].ID || r.Note != want {
				t.Fatalf("row %d: got %+v, want note %q", i, r, want)
			}
		}
	})
	t.Run("list of other elements", func(t *testing.T) {
		type doc struct {
			DocID string `parquet:"doc_id"`
			Rank  int64  `parquet:"rank"`
		}
		type row struct {
			ID   string `parquet:"id"`
			Docs []doc  `parquet:"docs,list"`
		}
		got, err := ReadParquet[row](path)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range got {
			if r.ID != rows[i].ID || len(r.Docs) != len(rows[i].Docs) {
				t.Fatalf("row %d: got %+v", i, r)
			}
			for j, d := range r.Docs {
				if d.DocID != rows[i].Docs[j].DocID || d.Rank != int64(rows[i].Docs[j].Rank) {
					t.Fatalf("row %d doc %d: got %+v", i, j, d)
				}
			}
		}
	})
}
