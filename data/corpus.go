package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// CorpusFormat names a layout of corpus files.
type CorpusFormat string

// The corpus layouts OpenCorpus reads. The JSON ones are read from JSONL or
// from a JSON list (title-sentences: a JSON object), optionally
// gzip-compressed (a path ending in ".gz").
const (
	// CorpusJSONL is {id, title, text}, with an optional sentences list.
	CorpusJSONL CorpusFormat = "jsonl"
	// CorpusFlashRAG is FlashRAG's {id, contents}, contents being the title,
	// a newline, then the text. Some FlashRAG corpora quote the title; the
	// quotes are removed.
	CorpusFlashRAG CorpusFormat = "flashrag"
	// CorpusBEIR is BEIR's corpus.jsonl: {_id, title, text, metadata}.
	CorpusBEIR CorpusFormat = "beir"
	// CorpusJSONList is {title, text} records without ids; each gets
	// DocID(title, text).
	CorpusJSONList CorpusFormat = "json-list"
	// CorpusTitleSentences is one JSON object mapping each title to its list
	// of sentences; each passage gets DocID of the title and joined text.
	CorpusTitleSentences CorpusFormat = "title-sentences"
	// CorpusParquet is the corpus.parquet that Import writes.
	CorpusParquet CorpusFormat = "parquet"
)

// CorpusFormats lists the corpus formats in the order help texts show them.
func CorpusFormats() []CorpusFormat {
	return []CorpusFormat{CorpusJSONL, CorpusFlashRAG, CorpusBEIR, CorpusJSONList, CorpusTitleSentences, CorpusParquet}
}

// ParseCorpusFormat returns the format named s (case-insensitive).
func ParseCorpusFormat(s string) (CorpusFormat, error) {
	if f := CorpusFormat(strings.ToLower(strings.TrimSpace(s))); slices.Contains(CorpusFormats(), f) {
		return f, nil
	}
	return "", fmt.Errorf("unknown corpus format %q (valid: %s)", s, joinNames(CorpusFormats()))
}

// CorpusReader streams the passages of a corpus file. It follows the
// contract written on QuestionReader: Next returns passages, then io.EOF
// forever; a *RecordError is one bad record and reading may go on; any
// other error is fatal and names the file; Close is idempotent; a reader is
// not safe for concurrent use.
type CorpusReader struct {
	path   string
	format CorpusFormat
	stream *recordStream

	// Parquet corpora are read in batches.
	pq    *ParquetReader[Passage]
	buf   []Passage
	pos   int
	pqErr error
	index int

	stats  ReadStats
	closed bool
}

// parquetBatch is how many passages a parquet corpus reader holds at once.
const parquetBatch = 256

// OpenCorpus opens a corpus file of the given format.
func OpenCorpus(path string, format CorpusFormat) (*CorpusReader, error) {
	r := &CorpusReader{path: path, format: format}
	switch format {
	case CorpusParquet:
		pq, err := OpenParquet[Passage](path)
		if err != nil {
			return nil, err
		}
		if k, err := pq.Kind(); err != nil || k != KindCorpus {
			pq.Close()
			if err == nil {
				err = fmt.Errorf("%s: parquet file of kind %q, want %q", path, k, KindCorpus)
			}
			return nil, err
		}
		r.pq = pq
		r.buf = make([]Passage, 0, parquetBatch)
	case CorpusJSONL, CorpusFlashRAG, CorpusBEIR, CorpusJSONList, CorpusTitleSentences:
		s, err := openStream(path, format == CorpusTitleSentences)
		if err != nil {
			return nil, err
		}
		r.stream = s
	default:
		return nil, fmt.Errorf("open corpus %s: unknown corpus format %q (valid: %s)", path, format, joinNames(CorpusFormats()))
	}
	return r, nil
}

// Next returns the next passage; see CorpusReader for what its errors mean.
func (r *CorpusReader) Next() (Passage, error) {
	var (
		rec rawRecord
		err error
	)
	if r.pq != nil {
		var p Passage
		p, rec, err = r.nextParquet()
		if err == nil {
			r.stats.Records++
			return r.check(rec, p)
		}
		return Passage{}, err
	}
	rec, err = r.stream.next()
	var recErr *RecordError
	switch {
	case errors.As(err, &recErr):
		r.stats.Records++
		r.stats.BadRecords++
		return Passage{}, err
	case err != nil:
		return Passage{}, err
	}
	r.stats.Records++
	var p Passage
	switch r.format {
	case CorpusJSONL:
		p, err = r.jsonl(rec)
	case CorpusFlashRAG:
		p, err = r.flashrag(rec)
	case CorpusBEIR:
		p, err = r.beir(rec)
	case CorpusJSONList:
		p, err = r.jsonList(rec)
	case CorpusTitleSentences:
		p, err = r.titleSentences(rec)
	}
	if err != nil {
		r.stats.BadRecords++
		return Passage{}, err
	}
	return r.check(rec, p)
}

// check applies the rules every format shares.
func (r *CorpusReader) check(rec rawRecord, p Passage) (Passage, error) {
	var err error
	switch {
	case p.ID == "":
		err = missing(r.path, rec, "id")
	case p.Text == "":
		err = missing(r.path, rec, "text")
	}
	if err != nil {
		r.stats.BadRecords++
		return Passage{}, err
	}
	return p, nil
}

func (r *CorpusReader) nextParquet() (Passage, rawRecord, error) {
	if r.closed {
		return Passage{}, rawRecord{}, fmt.Errorf("%s: %w", r.path, os.ErrClosed)
	}
	for r.pos == len(r.buf) {
		if r.pqErr != nil {
			return Passage{}, rawRecord{}, r.pqErr
		}
		// parquet-go may reuse the slices of the rows it decodes into.
		r.buf = r.buf[:cap(r.buf)]
		clear(r.buf)
		n, err := r.pq.Read(r.buf)
		r.buf, r.pos = r.buf[:n], 0
		r.pqErr = err
		if err == nil && n == 0 {
			r.pqErr = fmt.Errorf("%s: parquet reader made no progress", r.path)
		}
	}
	p := r.buf[r.pos]
	r.pos++
	rec := rawRecord{Index: r.index}
	r.index++
	return p, rec, nil
}

// Rows returns the number of records in the file when the format tells it
// up front (parquet), or -1.
func (r *CorpusReader) Rows() int64 {
	if r.pq != nil {
		return r.pq.NumRows()
	}
	return -1
}

// Stats returns the counts so far.
func (r *CorpusReader) Stats() ReadStats { return r.stats }

// Close releases the file. It is idempotent.
func (r *CorpusReader) Close() error {
	if r.pq != nil {
		if r.closed {
			return nil
		}
		r.closed = true
		return r.pq.Close()
	}
	return r.stream.close()
}

type jsonlPassage struct {
	ID        json.RawMessage `json:"id"`
	Title     string          `json:"title"`
	Text      string          `json:"text"`
	Sentences []string        `json:"sentences"`
}

type flashragPassage struct {
	ID       json.RawMessage `json:"id"`
	Contents string          `json:"contents"`
}

type beirPassage struct {
	ID    json.RawMessage `json:"_id"`
	Title string          `json:"title"`
	Text  string          `json:"text"`
	// Metadata is free-form (url, pubmed id, ...); unused.
	Metadata json.RawMessage `json:"metadata"`
}

type listPassage struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

func (r *CorpusReader) jsonl(rec rawRecord) (Passage, error) {
	v, id, err := decodeWithID(r.path, rec, string(r.format), "id", func(v *jsonlPassage) json.RawMessage { return v.ID })
	if err != nil {
		return Passage{}, err
	}
	p := Passage{ID: id, Title: v.Title, Text: strings.TrimSpace(v.Text)}
	for _, s := range v.Sentences {
		p.Sentences = append(p.Sentences, strings.TrimSpace(s))
	}
	return p, nil
}

func (r *CorpusReader) flashrag(rec rawRecord) (Passage, error) {
	v, id, err := decodeWithID(r.path, rec, string(r.format), "id", func(v *flashragPassage) json.RawMessage { return v.ID })
	if err != nil {
		return Passage{}, err
	}
	title, text, ok := strings.Cut(v.Contents, "\n")
	if !ok {
		title, text = "", v.Contents
	}
	title = strings.TrimSpace(title)
	if len(title) >= 2 && title[0] == '"' && title[len(title)-1] == '"' {
		title = title[1 : len(title)-1]
	}
	if strings.TrimSpace(text) == "" {
		return Passage{}, missing(r.path, rec, "contents")
	}
	return Passage{ID: id, Title: title, Text: strings.TrimSpace(text)}, nil
}

func (r *CorpusReader) beir(rec rawRecord) (Passage, error) {
	v, id, err := decodeWithID(r.path, rec, string(r.format), "_id", func(v *beirPassage) json.RawMessage { return v.ID })
	if err != nil {
		return Passage{}, err
	}
	if id == "" {
		return Passage{}, missing(r.path, rec, "_id")
	}
	return Passage{ID: id, Title: v.Title, Text: strings.TrimSpace(v.Text)}, nil
}

func (r *CorpusReader) jsonList(rec rawRecord) (Passage, error) {
	var v listPassage
	if err := decodeStrict(rec.Data, &v); err != nil {
		return Passage{}, recordErrorFor(r.path, rec, string(r.format), err)
	}
	if strings.TrimSpace(v.Text) == "" {
		return Passage{}, missing(r.path, rec, "text")
	}
	return textPassage(v.Title, v.Text), nil
}

func (r *CorpusReader) titleSentences(rec rawRecord) (Passage, error) {
	var sentences []string
	if err := json.Unmarshal(rec.Data, &sentences); err != nil {
		return Passage{}, &RecordError{File: r.path, Line: rec.Line, Index: rec.Index,
			Err: fmt.Errorf("title %q: want a list of sentences", rec.Key)}
	}
	p := sentencesPassage(rec.Key, sentences)
	if p.Text == "" {
		return Passage{}, &RecordError{File: r.path, Line: rec.Line, Index: rec.Index, Field: "text",
			Err: fmt.Errorf("title %q: %w", rec.Key, ErrMissingField)}
	}
	return p, nil
}
