package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Kind names what the rows of a parquet file distill writes are. It is kept
// in the file's key/value metadata so that tools can tell files apart.
type Kind string

// The kinds of parquet files distill writes.
const (
	KindQuestions Kind = "questions"
	KindCorpus    Kind = "corpus"
)

// Parquet key/value metadata keys, and the version of the layout written.
const (
	metaKind          = "distill.kind"
	metaFormatVersion = "distill.format_version"
	formatVersion     = "1"
)

// rowsPerRowGroup and rowGroupBytes bound a row group: at most this many
// rows, and about this many bytes of pages (compressed) and of values not
// yet in a page, so that a writer's memory does not follow the size of its
// rows (a state with a long evidence context is kilobytes). A writer that
// keeps its pages on disk (SpillPages) holds only each column's current
// page whatever its row group's size, and cuts them at spillGroupBytes:
// the metadata of every row group written stays in the writer's memory
// until it closes the file, and in every reader's while it reads it
// (tens of KiB a row group of a state's 60 columns: its page index), so that
// fewer, larger row groups keep both smaller for a large file. A reader's
// own memory does not follow the size of the row group it reads (see
// ParquetReader.Read).
const (
	rowsPerRowGroup = 50_000
	rowGroupBytes   = 4 << 20
	// pageBytes bounds a page before encoding (parquet-go's default is 256
	// KiB). A reader holds the current page of every column, and a state
	// has dozens of columns: smaller pages keep a reader's memory small
	// whatever the file's size.
	pageBytes = 64 << 10
	// readBatch is the most rows a reader asks parquet-go for at once
	// (see ParquetReader.Read).
	readBatch = 16
)

// spillGroupBytes bounds the row groups of a writer that keeps its pages
// on disk (a variable so that tests can cut them sooner).
var spillGroupBytes int64 = 32 << 20

// ParquetWriter writes rows of type T to a parquet file. Rows go to a
// temporary file in the destination's directory, which Close renames into
// place, so the destination never holds a partial file. It is not safe for
// concurrent use.
type ParquetWriter[T any] struct {
	path string
	tmp  *os.File
	w    *parquet.GenericWriter[T]
	rows int64
	// flushed is w.Size() after the last row group written out.
	flushed int64
	// pages holds the pages of the row group being written, when they are
	// kept on disk (SpillPages).
	pages *pageFiles
	// groupBytes is rowGroupBytes, or spillGroupBytes for SpillPages.
	groupBytes int64
	// done is set by the first Close or Abort; aborted tells which.
	done    bool
	aborted bool
}

// A WriteOption changes how CreateParquet writes a file.
type WriteOption func(*writeConfig)

type writeConfig struct {
	spill bool
}

// SpillPages has the writer keep the pages of the row group it is
// writing on disk, in unlinked temporary files beside the output, instead
// of memory, until it writes the row group out (at about 32 MiB of pages
// or 50,000 rows, rather than 4 MiB). For long files written once: what
// stays in memory is each column's current page, and the metadata of the
// row groups written (tens of KiB each for a state's 60 columns), which
// the writer keeps until it closes the file.
func SpillPages() WriteOption {
	return func(c *writeConfig) { c.spill = true }
}

// CreateParquet starts writing a parquet file of the given kind at path,
// zstd-compressed. Call Close to commit it or Abort to drop it; deferring
// Abort after a successful CreateParquet is safe.
func CreateParquet[T any](path string, kind Kind, opts ...WriteOption) (*ParquetWriter[T], error) {
	if kind == "" {
		return nil, fmt.Errorf("create %s: empty parquet kind", path)
	}
	var cfg writeConfig
	for _, o := range opts {
		o(&cfg)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	options := []parquet.WriterOption{
		parquet.Compression(zstdCodec{}),
		parquet.MaxRowsPerRowGroup(rowsPerRowGroup),
		parquet.PageBufferSize(pageBytes),
		parquet.KeyValueMetadata(metaKind, string(kind)),
		parquet.KeyValueMetadata(metaFormatVersion, formatVersion),
	}
	for _, col := range unboundedColumns(parquet.SchemaOf(new(T))) {
		options = append(options, parquet.SkipPageBounds(col...))
	}
	w := &ParquetWriter[T]{path: path, tmp: tmp, groupBytes: rowGroupBytes}
	if cfg.spill {
		w.groupBytes = spillGroupBytes
		w.pages = &pageFiles{dir: dir, open: map[*os.File]bool{}}
		options = append(options, parquet.ColumnPageBuffers(w.pages))
	}
	w.w = parquet.NewGenericWriter[T](tmp, options...)
	return w, nil
}

// unboundedColumns returns the columns of schema written without their
// minimum and maximum values (in the page index and the row group's
// statistics): the strings, except ids (a column whose name ends in "id").
// The bounds of a column of text are a reader's no use (no one selects
// evidence by its range), and parquet-go keeps each page's bounds whole
// until it writes its row group out: for a text column whose values are
// kilobytes, megabytes a row group, as much as its pages themselves.
func unboundedColumns(schema *parquet.Schema) [][]string {
	var out [][]string
	for _, path := range schema.Columns() {
		leaf, ok := schema.Lookup(path...)
		if !ok || leaf.Node.Type().Kind() != parquet.ByteArray {
			continue
		}
		if name := path[len(path)-1]; name == "id" || strings.HasSuffix(name, "_id") {
			continue
		}
		out = append(out, path)
	}
	return out
}

// Write appends rows.
func (w *ParquetWriter[T]) Write(rows []T) error {
	if w.done {
		return fmt.Errorf("write %s: %w", w.path, os.ErrClosed)
	}
	n, err := w.w.Write(rows)
	w.rows += int64(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if w.w.Size()-w.flushed > w.groupBytes {
		return w.Flush()
	}
	return nil
}

// Flush writes out the rows buffered so far as a row group, so that memory
// holds no more than what was written since the last Flush. Long-running
// writers call it at their checkpoints.
func (w *ParquetWriter[T]) Flush() error {
	if w.done {
		return fmt.Errorf("flush %s: %w", w.path, os.ErrClosed)
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", w.path, err)
	}
	w.flushed = w.w.Size()
	return nil
}

// Rows returns the number of rows written so far.
func (w *ParquetWriter[T]) Rows() int64 { return w.rows }

// Path returns the path of the file the writer makes.
func (w *ParquetWriter[T]) Path() string { return w.path }

// Close finishes the file, syncs it to disk and renames it into place. A
// failed Close leaves nothing behind. Close after Close does nothing; Close
// after Abort is an error.
func (w *ParquetWriter[T]) Close() error {
	if w.done {
		if w.aborted {
			return fmt.Errorf("close %s: writer was aborted", w.path)
		}
		return nil
	}
	w.done = true
	err := w.w.Close()
	if perr := w.pages.release(); err == nil {
		err = perr
	}
	if err == nil {
		err = w.tmp.Chmod(0o644)
	}
	if err == nil {
		err = w.tmp.Sync()
	}
	if cerr := w.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp.Name(), w.path)
	}
	if err != nil {
		w.aborted = true
		os.Remove(w.tmp.Name())
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	syncDir(filepath.Dir(w.path))
	return nil
}

// Abort drops the file. It does nothing after Close or Abort.
func (w *ParquetWriter[T]) Abort() error {
	if w.done {
		return nil
	}
	w.done, w.aborted = true, true
	w.pages.release()
	w.tmp.Close()
	if err := os.Remove(w.tmp.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("abort %s: %w", w.path, err)
	}
	return nil
}

// syncDir makes a rename durable. Not every platform can sync a
// directory, and the file's own data is already synced, so failure is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// ParquetReader streams the rows of a parquet file as values of type T.
// It is not safe for concurrent use.
type ParquetReader[T any] struct {
	path string
	f    *os.File
	file *parquet.File
	// r reads row group next-1 of the file; each row group has its own
	// reader, closed before the next is opened (see Read).
	r      *parquet.GenericReader[T]
	next   int
	closed bool
	// absentLists are the fields of T, by index, that are lists the file
	// has no column for: parquet-go reads them as one zero element, and
	// Read empties them.
	absentLists []int
}

// OpenParquet opens a parquet file for reading rows of type T. Columns of
// the file that T lacks are ignored; fields of T the file lacks are left zero.
func OpenParquet[T any](path string) (*ParquetReader[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError names the file
	}
	r := &ParquetReader[T]{path: path, f: f}
	if err := r.open(); err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func (r *ParquetReader[T]) open() (err error) {
	r.file, err = openParquetFile(r.f, r.path)
	if err != nil {
		return err
	}
	// parquet-go panics instead of returning an error when the file's
	// schema cannot be converted to T's.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("open parquet %s: %v", r.path, p)
		}
	}()
	r.absentLists = absentLists[T](r.file.Schema())
	r.nextGroup()
	return nil
}

// nextGroup opens a reader of the next row group that has rows, closing
// the current one; false when there is none (r.r is then nil). A reader of
// the whole file would keep state and buffers for every row group as it
// goes, so that its memory grows with the file; a reader of one row group
// at a time keeps one's. An empty row group (pandas writes one for an
// empty table) is skipped: parquet-go fails to seek in it.
func (r *ParquetReader[T]) nextGroup() bool {
	if r.r != nil {
		r.r.Close()
		r.r = nil
	}
	groups := r.file.RowGroups()
	for r.next < len(groups) && groups[r.next].NumRows() == 0 {
		r.next++
	}
	if r.next >= len(groups) {
		return false
	}
	r.r = parquet.NewGenericRowGroupReader[T](groups[r.next])
	r.next++
	return true
}

// absentLists returns the indexes of the fields of T (a struct) that are
// lists (tag "name,list") with no column in schema.
func absentLists[T any](schema *parquet.Schema) []int {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil
	}
	has := map[string]bool{}
	for _, f := range schema.Fields() {
		has[f.Name()] = true
	}
	var idx []int
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("parquet"), ",")
		if name != "" && name != "-" && strings.Contains(","+opts+",", ",list,") && !has[name] {
			idx = append(idx, i)
		}
	}
	return idx
}

// openParquetFile reads the footer of a parquet file.
func openParquetFile(f *os.File, path string) (pf *parquet.File, err error) {
	// parquet-go panics on some malformed files instead of returning an error.
	defer func() {
		if p := recover(); p != nil {
			pf, err = nil, fmt.Errorf("open parquet %s: %v", path, p)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w", path, err)
	}
	// Rows are read in order, never looked up: the page index (a few
	// entries a page, tens of megabytes for a large file) is not read.
	pf, err = parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("open parquet %s: %w%s", path, err, jsonHint(f))
	}
	return pf, nil
}

// Kind returns the kind of the file's rows (see ParquetKind), with the
// error of a file whose columns make it no kind.
func (r *ParquetReader[T]) Kind() (Kind, error) { return fileKind(r.file, r.path) }

// NumRows returns the number of rows in the file.
func (r *ParquetReader[T]) NumRows() int64 { return r.file.NumRows() }

// Read reads up to len(rows) rows into rows, like io.Reader: it returns the
// number read and io.EOF at the end, possibly together with the last rows.
// Rows it decodes into should be zero: their slices may be reused.
func (r *ParquetReader[T]) Read(rows []T) (n int, err error) {
	if r.closed {
		return 0, fmt.Errorf("read %s: %w", r.path, os.ErrClosed)
	}
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("read parquet %s: %v", r.path, p)
		}
	}()
	// The rows are asked of parquet-go readBatch at a time, whatever
	// len(rows): its reader keeps the values of the last rows it read in a
	// buffer as long as the largest batch asked, and a stale value there
	// keeps the whole page it points into from being freed, so that a
	// reader asked 256 rows at a time held 6 MiB more by the end of each
	// row group than one asked 16 (see TestReaderMemory).
	for n < len(rows) {
		if r.r == nil {
			err = io.EOF
			break
		}
		m, rerr := r.r.Read(rows[n:min(len(rows), n+readBatch)])
		n += m
		if rerr == io.EOF {
			if r.nextGroup() {
				continue
			}
			err = io.EOF
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
		if m == 0 {
			break // no progress: the caller sees 0 rows and no error
		}
	}
	for i := range rows[:n] {
		v := reflect.ValueOf(&rows[i]).Elem()
		for _, f := range r.absentLists {
			v.Field(f).SetZero()
		}
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read parquet %s: %w", r.path, err)
	}
	return n, err
}

// Close releases the file. It is idempotent.
func (r *ParquetReader[T]) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.r != nil {
		r.r.Close()
	}
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", r.path, err)
	}
	return nil
}

// ReadParquet reads every row of a parquet file.
func ReadParquet[T any](path string) ([]T, error) {
	r, err := OpenParquet[T](path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := make([]T, 0, r.NumRows())
	buf := make([]T, 256)
	for {
		clear(buf)
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("read parquet %s: no progress", path)
		}
	}
}

// ParquetKind returns the kind of rows a parquet file holds: the kind
// distill recorded when it wrote the file, else the kind its columns make
// it, by name, whatever wrote it (pandas, DuckDB, Hugging Face datasets): a
// question file has the string columns id and question (answers,
// gold_titles and the rest of Question's columns are read when present), a
// corpus the string columns id, title and text (and sentences). Other
// columns are ignored. A file that is neither is an error that names its
// columns.
func ParquetKind(path string) (Kind, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err // *fs.PathError names the file
	}
	defer f.Close()
	pf, err := openParquetFile(f, path)
	if err != nil {
		return "", err
	}
	return fileKind(pf, path)
}

// fileKind is ParquetKind of an open file.
func fileKind(pf *parquet.File, path string) (Kind, error) {
	if k, _ := pf.Lookup(metaKind); k != "" {
		return Kind(k), nil
	}
	strs := map[string]bool{}
	var names []string
	for _, field := range pf.Schema().Fields() {
		names = append(names, field.Name())
		if field.Leaf() && !field.Repeated() && field.Type().Kind() == parquet.ByteArray {
			strs[field.Name()] = true
		}
	}
	switch {
	case strs["id"] && strs["question"]:
		return KindQuestions, nil
	case strs["id"] && strs["title"] && strs["text"]:
		return KindCorpus, nil
	}
	return "", fmt.Errorf("%s: not written by distill, and its columns (%s) are neither questions' (string columns id and question; answers, gold_titles, ...) nor a corpus's (string columns id, title and text): rename its columns, or import it with distill data import",
		path, strings.Join(names, ", "))
}

// ShowParquet writes the first n rows (all when n <= 0) of a parquet file
// distill wrote to w, one JSON object per line. The row type is chosen from
// the file's kind.
func ShowParquet(w io.Writer, path string, n int) error {
	kind, err := ParquetKind(path)
	if err != nil {
		return err
	}
	switch kind {
	case KindQuestions:
		return showRows[Question](w, path, n)
	case KindCorpus:
		return showRows[Passage](w, path, n)
	case KindTrajectories:
		return showRows[State](w, path, n)
	case KindLabels:
		return showRows[Label](w, path, n)
	}
	return fmt.Errorf("%s: unknown parquet kind %q (known: %s)", path, kind, joinNames([]Kind{KindQuestions, KindCorpus, KindTrajectories, KindLabels}))
}

func showRows[T any](w io.Writer, path string, limit int) error {
	r, err := OpenParquet[T](path)
	if err != nil {
		return err
	}
	defer r.Close()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	buf := make([]T, 64)
	shown := 0
	for limit <= 0 || shown < limit {
		clear(buf)
		n, err := r.Read(buf)
		if limit > 0 {
			n = min(n, limit-shown)
		}
		for _, row := range buf[:n] {
			if err := enc.Encode(row); err != nil {
				return fmt.Errorf("show %s: %w", path, err)
			}
		}
		shown += n
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
	return nil
}

// ParquetInfo is what ParquetStats tells of a parquet file.
type ParquetInfo struct {
	// Kind is the kind of its rows (ParquetKind); empty, with KindError
	// saying why, when distill cannot read it as any kind.
	Kind      Kind
	KindError string
	Rows      int64
	RowGroups int
	// Schema is the file's schema in parquet's own notation.
	Schema string
}

// ParquetStats reads a parquet file's footer: its kind, rows, row groups
// and schema. Nothing else is read.
func ParquetStats(path string) (ParquetInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ParquetInfo{}, err // *fs.PathError names the file
	}
	defer f.Close()
	pf, err := openParquetFile(f, path)
	if err != nil {
		return ParquetInfo{}, err
	}
	info := ParquetInfo{Rows: pf.NumRows(), RowGroups: len(pf.RowGroups()), Schema: pf.Schema().String()}
	info.Kind, err = fileKind(pf, path)
	if err != nil {
		info.KindError = err.Error()
	}
	return info, nil
}
