package data

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/parquet-go/parquet-go"
)

// writeParquet writes rows with CreateParquet and returns the file's path.
func writeParquet[T any](t *testing.T, dir string, kind Kind, rows []T) string {
	t.Helper()
	path := filepath.Join(dir, string(kind)+".parquet")
	w, err := CreateParquet[T](path, kind)
	if err != nil {
		t.Fatalf("CreateParquet: %v", err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if got := w.Rows(); got != int64(len(rows)) {
		t.Errorf("got Rows() %d, want %d", got, len(rows))
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return path
}

// dirNames lists a directory's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

var sampleQuestions = []Question{
	{
		ID: "q1", Text: "Which river flows through London?", Answers: []string{"River Thames", "Thames"},
		Type: "bridge", GoldTitles: []string{"London"}, GoldDocIDs: []string{DocID("London", "x")},
		SupportingFacts: []SupportingFact{{Title: "London", Sentence: 1}}, Dataset: "hotpotqa",
	},
	{ID: "q2", Text: "Qui a écrit « Les Misérables » ? 日本語 🙂", Answers: []string{"Victor Hugo"}, Dataset: "sample"},
	{ID: "q3", Text: "Empty lists", Answers: []string{}, GoldTitles: []string{}, GoldDocIDs: nil, Dataset: "sample"},
}

func TestParquetRoundTrip(t *testing.T) {
	many := make([]Passage, 60_000)
	for i := range many {
		many[i] = Passage{ID: fmt.Sprint(i), Title: fmt.Sprint("t", i%100), Text: strings.Repeat("w ", i%7+1)}
		if i%3 == 0 {
			many[i].Sentences = []string{"a", "b"}
		}
	}
	t.Run("questions", func(t *testing.T) {
		testRoundTrip(t, KindQuestions, sampleQuestions)
	})
	t.Run("passages", func(t *testing.T) {
		testRoundTrip(t, KindCorpus, corpusFixture)
	})
	t.Run("no rows", func(t *testing.T) {
		testRoundTrip(t, KindCorpus, []Passage{})
	})
	t.Run("many rows", func(t *testing.T) {
		// More rows than a row group holds; compared by hand as cmp is
		// slow on this many.
		path := writeParquet(t, t.TempDir(), KindCorpus, many)
		got, err := ReadParquet[Passage](path)
		if err != nil {
			t.Fatalf("ReadParquet: %v", err)
		}
		if len(got) != len(many) {
			t.Fatalf("got %d rows, want %d", len(got), len(many))
		}
		if groups := len(openFooter(t, path).RowGroups()); groups != 2 {
			t.Errorf("got %d row groups, want 2", groups)
		}
		for i, p := range got {
			w := many[i]
			if p.ID != w.ID || p.Title != w.Title || p.Text != w.Text || !slices.Equal(p.Sentences, w.Sentences) {
				t.Fatalf("row %d: got %+v, want %+v", i, p, w)
			}
		}
	})
}

func testRoundTrip[T any](t *testing.T, kind Kind, rows []T) {
	dir := t.TempDir()
	path := writeParquet(t, dir, kind, rows)
	if diff := cmp.Diff([]string{filepath.Base(path)}, dirNames(t, dir)); diff != "" {
		t.Errorf("directory mismatch (-want +got):\n%s", diff)
	}
	got, err := ReadParquet[T](path)
	if err != nil {
		t.Fatalf("ReadParquet: %v", err)
	}
	if diff := cmp.Diff(rows, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rows mismatch (-want +got):\n%s", diff)
	}
	gotKind, err := ParquetKind(path)
	if err != nil || gotKind != kind {
		t.Errorf("ParquetKind: got (%q, %v), want (%q, nil)", gotKind, err, kind)
	}
	if v, _ := openFooter(t, path).Lookup("distill.format_version"); v != "1" {
		t.Errorf("got distill.format_version %q, want %q", v, "1")
	}
}

func TestParquetReaderStreams(t *testing.T) {
	path := writeParquet(t, t.TempDir(), KindQuestions, sampleQuestions)
	r, err := OpenParquet[Question](path)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := r.Kind(); r.NumRows() != int64(len(sampleQuestions)) || k != KindQuestions || err != nil {
		t.Errorf("got %d rows of kind %q (%v), want %d of %q", r.NumRows(), k, err, len(sampleQuestions), KindQuestions)
	}
	var got []Question
	for range 10 {
		buf := make([]Question, 2)
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
	}
	if diff := cmp.Diff(sampleQuestions, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rows mismatch (-want +got):\n%s", diff)
	}
	for i := range 2 {
		if err := r.Close(); err != nil {
			t.Errorf("Close %d: got %v, want nil", i, err)
		}
	}
	if _, err := r.Read(make([]Question, 1)); err == nil {
		t.Error("Read after Close: got nil, want an error")
	}
}

// A file of many row groups is read one row group at a time: every row
// comes once, in order, whatever the size of the reads, and io.EOF comes
// with or after the last.
func TestParquetReaderRowGroups(t *testing.T) {
	rows := make([]Question, 50)
	for i := range rows {
		rows[i] = Question{ID: fmt.Sprint("q", i), Text: strings.Repeat("x", i), Answers: []string{fmt.Sprint(i)}}
	}
	path := filepath.Join(t.TempDir(), "questions.parquet")
	w, err := CreateParquet[Question](path, KindQuestions)
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range [][2]int{{0, 5}, {5, 6}, {6, 20}, {20, 21}, {21, 50}} {
		if err := w.Write(rows[group[0]:group[1]]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if groups := len(openFooter(t, path).RowGroups()); groups != 5 {
		t.Fatalf("got %d row groups, want 5", groups)
	}
	for _, size := range []int{1, 3, 5, 7, 50, 64} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			r, err := OpenParquet[Question](path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []Question
			for range 200 {
				buf := make([]Question, size)
				n, err := r.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				if n == 0 {
					t.Fatal("Read: no rows and no error")
				}
			}
			if diff := cmp.Diff(rows, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rows mismatch (-want +got):\n%s", diff)
			}
			if n, err := r.Read(make([]Question, 1)); n != 0 || err != io.EOF {
				t.Errorf("Read after the end: got %d, %v, want 0, io.EOF", n, err)
			}
		})
	}
}

// An empty table written by pandas (testdata/empty_pandas.parquet:
// pandas 3.1 with pyarrow 26) has one row group of no rows, in which
// parquet-go cannot seek: it reads as no rows, like a file without row
// groups.
func TestParquetEmptyRowGroup(t *testing.T) {
	path := filepath.Join("testdata", "empty_pandas.parquet")
	if groups := openFooter(t, path).RowGroups(); len(groups) != 1 || groups[0].NumRows() != 0 {
		t.Fatalf("the fixture should hold one empty row group, has %d", len(groups))
	}
	rows, err := ReadParquet[Question](path)
	if err != nil || len(rows) != 0 {
		t.Fatalf("ReadParquet: got %d rows, %v; want none and no error", len(rows), err)
	}
	var shown strings.Builder
	if err := ShowParquet(&shown, path, 10); err != nil || shown.Len() != 0 {
		t.Errorf("ShowParquet: got %q, %v; want nothing", shown.String(), err)
	}
}

func TestParquetWriterAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "corpus.parquet")
	w, err := CreateParquet[Passage](path, KindCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(corpusFixture); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); len(got) != 1 || !strings.HasPrefix(got[0], ".corpus.parquet.tmp-") {
		t.Errorf("while writing: got directory %q, want one temporary file", got)
	}
	for i := range 2 {
		if err := w.Abort(); err != nil {
			t.Errorf("Abort %d: got %v, want nil", i, err)
		}
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("after Abort: got directory %q, want it empty", got)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after Abort: got nil, want an error")
	}
	if err := w.Write(corpusFixture); err == nil {
		t.Error("Write after Abort: got nil, want an error")
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("after Close: got directory %q, want it empty", got)
	}
}

func TestParquetWriterCloseThenAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "corpus.parquet")
	w, err := CreateParquet[Passage](path, KindCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Close: got %v, want nil", err)
	}
	if diff := cmp.Diff([]string{"corpus.parquet"}, dirNames(t, dir)); diff != "" {
		t.Errorf("directory mismatch (-want +got):\n%s", diff)
	}
}

func TestCreateParquetErrors(t *testing.T) {
	tests := []struct {
		name string
		path string
		kind Kind
		want string
	}{
		{"empty kind", filepath.Join(t.TempDir(), "x.parquet"), "", "empty parquet kind"},
		{"missing directory", filepath.Join(t.TempDir(), "no", "x.parquet"), KindCorpus, "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := CreateParquet[Passage](tt.path, tt.kind)
			if err == nil {
				w.Abort()
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("got %q, want it to contain %q and the path", err, tt.want)
			}
		})
	}
}

func TestShowParquet(t *testing.T) {
	dir := t.TempDir()
	questions := writeParquet(t, dir, KindQuestions, sampleQuestions)
	corpus := writeParquet(t, dir, KindCorpus, corpusFixture)
	unknown := writeParquet(t, dir, "mystery", corpusFixture)
	// Files written by other tools: no kind recorded, columns by name,
	// nullable, in another order, with columns distill has no use for.
	foreign := writeForeign(t, filepath.Join(dir, "foreign.parquet"), corpusFixture)
	type otherQuestion struct {
		Score    float64  `parquet:"score"`
		Question *string  `parquet:"question,optional"`
		Answers  []string `parquet:"answers,list"`
		ID       *string  `parquet:"id,optional"`
	}
	var others []otherQuestion
	for _, q := range sampleQuestions[:2] {
		others = append(others, otherQuestion{Score: 1, Question: &q.Text, Answers: q.Answers, ID: &q.ID})
	}
	foreignQuestions := writeForeign(t, filepath.Join(dir, "foreign-questions.parquet"), others)
	type intID struct {
		ID   int64  `parquet:"id"`
		Text string `parquet:"text"`
	}
	neither := writeForeign(t, filepath.Join(dir, "neither.parquet"), []intID{{1, "x"}})
	wantQuestions := []Question{{ID: sampleQuestions[0].ID, Text: sampleQuestions[0].Text, Answers: sampleQuestions[0].Answers},
		{ID: sampleQuestions[1].ID, Text: sampleQuestions[1].Text, Answers: sampleQuestions[1].Answers}}

	tests := []struct {
		name    string
		path    string
		n       int
		want    any // the rows shown, decoded
		wantErr string
	}{
		{"first two questions", questions, 2, sampleQuestions[:2], ""},
		{"all passages", corpus, 0, corpusFixture, ""},
		{"more than there are", corpus, 10, corpusFixture, ""},
		{"unknown kind", unknown, 0, nil, `unknown parquet kind "mystery" (known: questions, corpus, trajectories, labels)`},
		{"another tool's corpus", foreign, 0, corpusFixture, ""},
		{"another tool's questions", foreignQuestions, 0, wantQuestions, ""},
		{"neither", neither, 0, nil, `not written by distill, and its columns (id, text) are neither questions'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			err := ShowParquet(&b, tt.path, tt.n)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.path) {
					t.Errorf("got error %v, want one naming the file and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ShowParquet: %v", err)
			}
			var got any
			switch tt.want.(type) {
			case []Question:
				got = decodeLines[Question](t, b.String())
			case []Passage:
				got = decodeLines[Passage](t, b.String())
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rows shown mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// decodeLines decodes JSON lines, failing on anything else.
func decodeLines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	for line := range strings.Lines(s) {
		var v T
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// openFooter opens a parquet file's metadata with parquet-go directly.
func openFooter(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

func TestParquetFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.parquet")
	w, err := CreateParquet[Question](path, KindQuestions)
	if err != nil {
		t.Fatal(err)
	}
	var want []Question
	for i := range 3 {
		q := Question{ID: fmt.Sprint("q", i), Text: "why?", Answers: []string{"because"}, Dataset: "x"}
		want = append(want, q)
		if err := w.Write([]Question{q}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Flush after Close: got %v, want os.ErrClosed", err)
	}
	got, err := ReadParquet[Question](path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// writeForeign writes rows to path as a tool other than distill would:
// without distill's metadata.
func writeForeign[T any](t *testing.T, path string, rows []T) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pw := parquet.NewGenericWriter[T](f)
	if _, err := pw.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParquetStats(t *testing.T) {
	dir := t.TempDir()
	questions := writeParquet(t, dir, KindQuestions, sampleQuestions)
	type intID struct {
		ID int64 `parquet:"id"`
	}
	other := writeForeign(t, filepath.Join(dir, "other.parquet"), []intID{{1}, {2}, {3}})
	tests := []struct {
		path       string
		wantRows   int64
		wantKind   Kind
		wantSchema string
		wantErr    bool
	}{
		{questions, int64(len(sampleQuestions)), KindQuestions, "binary question (STRING)", false},
		{other, 3, "", "int64 id", true},
	}
	for _, tt := range tests {
		info, err := ParquetStats(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Rows != tt.wantRows || info.Kind != tt.wantKind || info.RowGroups != 1 || !strings.Contains(info.Schema, tt.wantSchema) || (info.KindError != "") != tt.wantErr {
			t.Errorf("%s: got %+v, want %d rows of kind %q, schema with %q", tt.path, info, tt.wantRows, tt.wantKind, tt.wantSchema)
		}
	}
	if _, err := ParquetStats(filepath.Join(dir, "nope.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// TestParquetBounds: a written file keeps the bounds (the page index's and
// the row group's) of its ids and numbers, not of its text.
func TestParquetBounds(t *testing.T) {
	long := strings.Repeat("evidence text ", 500)
	rows := []State{
		{QuestionID: "q1", Round: 0, Question: "Who?", Context: "a" + long},
		{QuestionID: "q2", Round: 3, Question: "What?", Context: "b" + long},
	}
	pf := openFooter(t, writeParquet(t, t.TempDir(), KindTrajectories, rows))
	chunks := pf.Metadata().RowGroups[0].Columns
	for i, path := range pf.Schema().Columns() {
		name := strings.Join(path, ".")
		stats := chunks[i].MetaData.Statistics
		index := pf.ColumnIndexes()[i]
		bounded := len(stats.MinValue) > 0 || slices.ContainsFunc(index.MinValues, func(v []byte) bool { return len(v) > 0 })
		switch name {
		case "question_id", "round":
			if !bounded {
				t.Errorf("%s: no bounds, want them", name)
			}
		case "question", "context":
			if bounded {
				t.Errorf("%s: bounds %q..., want none", name, stats.MinValue[:min(len(stats.MinValue), 20)])
			}
		}
	}
}

// openFDs counts the open file descriptors of the process (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(entries)
}

// TestSpillPages: a writer whose pages wait on disk writes the same rows,
// cut in row groups by size as without it, leaves no file but the output
// and no descriptor open, whether it is closed or aborted; a page buffer
// it cannot make fails the write that needed it.
func TestSpillPages(t *testing.T) {
	rows := make([]Question, 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range rows {
		// Text that compresses little, so that the row groups fill by size.
		text := make([]byte, 8<<10)
		for k := range text {
			text[k] = byte('a' + rng.IntN(26))
		}
		rows[i] = Question{ID: fmt.Sprint("q", i), Text: string(text), Answers: []string{fmt.Sprint(i)}}
	}
	defer func(b int64) { spillGroupBytes = b }(spillGroupBytes)
	spillGroupBytes = 4 << 20
	for _, end := range []string{"close", "abort"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "q.parquet")
			fds := openFDs(t)
			w, err := CreateParquet[Question](path, KindQuestions, SpillPages())
			if err != nil {
				t.Fatal(err)
			}
			n := len(rows)
			if end == "abort" {
				n = 300 // pages written, their row group not yet
			}
			for i := 0; i < n; i += 100 {
				if err := w.Write(rows[i : i+100]); err != nil {
					t.Fatal(err)
				}
			}
			if got := dirNames(t, dir); len(got) != 1 {
				t.Errorf("while writing: %q, want the temporary output alone (page files unlinked)", got)
			}
			if end == "abort" {
				if err := w.Abort(); err != nil {
					t.Fatal(err)
				}
				if got := dirNames(t, dir); len(got) != 0 {
					t.Errorf("after Abort: %q", got)
				}
				if n := openFDs(t); n > fds {
					t.Errorf("%d descriptors open after Abort, %d before", n, fds)
				}
			} else {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if n := openFDs(t); n > fds {
					t.Errorf("%d descriptors open after Close, %d before", n, fds)
				}
				got, err := ReadParquet[Question](path)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(rows, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("rows (-want +got):\n%s", diff)
				}
				if groups := len(openFooter(t, path).RowGroups()); groups < 2 {
					t.Errorf("%d row groups for %d bytes of text, want them cut by size", groups, len(rows)*len(rows[0].Text))
				}
				if got := dirNames(t, dir); !slices.Equal(got, []string{"q.parquet"}) {
					t.Errorf("after Close: %q", got)
				}
			}
		})
	}
	t.Run("no page buffer", func(t *testing.T) {
		dir := t.TempDir()
		w, err := CreateParquet[Question](filepath.Join(dir, "q.parquet"), KindQuestions, SpillPages())
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		// The directory is gone: no page buffer can be made in it.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		err = w.Write(rows)
		if err == nil {
			err = w.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "page buffer") {
			t.Errorf("got %v, want the page buffer's error", err)
		}
	})
}

// A reader's memory does not grow as it reads a row group: parquet-go
// keeps the values of the rows it last read in a buffer as long as the
// largest read, whose stale values pin the pages they point into, so Read
// asks it for few rows at a time whatever the caller asks. The file is one
// row group of rows of uneven lists, read 256 rows at a time; the live
// heap, sampled as it goes, must stay within a few pages' worth of where
// it started (asked 256 rows at a time, parquet-go held about 14 MiB more
// by the end of this file).
func TestReaderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 16 MiB")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	text := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	path := filepath.Join(t.TempDir(), "questions.parquet")
	w, err := CreateParquet[Question](path, KindQuestions, SpillPages())
	if err != nil {
		t.Fatal(err)
	}
	const rows = 20000
	for i := range rows {
		q := Question{ID: fmt.Sprint("q", i), Text: text(500)}
		// Mostly short lists, now and then a long one: the long ones leave
		// stale values behind in parquet-go's row buffer.
		answers := 1 + rng.IntN(3)
		if rng.IntN(20) == 0 {
			answers = 20 + rng.IntN(40)
		}
		for range answers {
			q.Answers = append(q.Answers, text(200))
		}
		if err := w.Write([]Question{q}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if groups := len(openFooter(t, path).RowGroups()); groups != 1 {
		t.Fatalf("got %d row groups, want 1", groups)
	}
	live := func() int64 {
		runtime.GC()
		runtime.GC() // the second empties the pools the first left
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	var first, most int64
	n := 0
	err = EachRow(context.Background(), path, KindQuestions, func(qs []Question) error {
		n += len(qs)
		if n%1024 < len(qs) {
			h := live()
			if first == 0 {
				first = h
			}
			most = max(most, h)
		}
		return nil
	})
	if err != nil || n != rows {
		t.Fatalf("read %d rows (%v), want %d", n, err, rows)
	}
	if grew := most - first; grew > 4<<20 {
		t.Errorf("the live heap grew by %.1f MiB while reading one row group, want at most 4", float64(grew)/(1<<20))
	}
}

// TestOpenParquetJSONHint: a JSON file where parquet is read says to
// import it.
func TestOpenParquetJSONHint(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"q.jsonl": "{\"id\": \"x\"}\n", "q.json": " [{\"id\": \"x\"}]", "q.txt": "id,question\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenParquet[Question](path)
		hint := err != nil && strings.Contains(err.Error(), "distill data import")
		if want := name != "q.txt"; err == nil || hint != want {
			t.Errorf("%s: %v; want an error, with the import hint %v", name, err, want)
		}
	}
}
