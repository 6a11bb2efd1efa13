package retrieve

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// Run file formats written by RunWriter.
const (
	// RunJSONL writes one JSON object per hit:
	// {"query_id", "rank", "doc_id", "title", "score"}.
	RunJSONL = "jsonl"
	// RunTREC writes TREC run lines: "qid Q0 docid rank score tag", as
	// trec_eval and Pyserini read them.
	RunTREC = "trec"
)

// RunWriter writes batch results as a run file. It buffers: call Flush at
// the end. It is not safe for concurrent use (SearchBatch's emit is called
// from one goroutine).
type RunWriter struct {
	w      *bufio.Writer
	format string
	tag    string
	buf    []byte
}

// NewRunWriter returns a writer of the given format (RunJSONL or RunTREC);
// tag names the run in TREC lines.
func NewRunWriter(w io.Writer, format, tag string) (*RunWriter, error) {
	if format != RunJSONL && format != RunTREC {
		return nil, fmt.Errorf("unknown run format %q (valid: %s, %s)", format, RunJSONL, RunTREC)
	}
	if tag == "" {
		tag = "distill"
	}
	return &RunWriter{w: bufio.NewWriterSize(w, 1<<16), format: format, tag: tag}, nil
}

// Write writes the hits of one query, ranks counting from 1.
func (rw *RunWriter) Write(res BatchResult) error {
	b := rw.buf[:0]
	for i, h := range res.Hits {
		switch rw.format {
		case RunJSONL:
			b = append(b, `{"query_id":`...)
			b = appendJSONString(b, res.Query.ID)
			b = append(b, `,"rank":`...)
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, `,"doc_id":`...)
			b = appendJSONString(b, h.ID)
			b = append(b, `,"title":`...)
			b = appendJSONString(b, h.Title)
			b = append(b, `,"score":`...)
			b = strconv.AppendFloat(b, h.Score, 'g', 8, 64)
			b = append(b, "}\n"...)
		case RunTREC:
			b = append(b, res.Query.ID...)
			b = append(b, " Q0 "...)
			b = append(b, h.ID...)
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, ' ')
			b = strconv.AppendFloat(b, h.Score, 'f', 6, 64)
			b = append(b, ' ')
			b = append(b, rw.tag...)
			b = append(b, '\n')
		}
	}
	rw.buf = b
	_, err := rw.w.Write(b)
	return err
}

// Flush writes out what is buffered.
func (rw *RunWriter) Flush() error { return rw.w.Flush() }

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
