package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// rawRecord is one record of a JSON input file, not yet decoded.
type rawRecord struct {
	// Index is the 0-based index of the record in the file.
	Index int
	// Line is the 1-based line where the record starts.
	Line int
	// Key is the record's key when the file is a JSON object of records.
	Key string
	// Data is one syntactically valid JSON value. It is only valid until
	// the next call of next.
	Data []byte
}

type streamLayout int

const (
	layoutJSONL  streamLayout = iota // one value per line
	layoutList                       // [v, v, ...]
	layoutObject                     // {"key": v, ...}
)

// recordStream yields the records of a JSON list, a JSON object or a JSONL
// file, gzip-compressed when the path ends in ".gz", reading it in one
// forward pass with bounded look-ahead: only one record is held in memory.
//
// JSON lists and objects are scanned by hand rather than with
// json.Decoder so that each record's start line is known. A bad JSONL line is
// a *RecordError and the stream goes on with the next line; a syntax error
// in a list or object is fatal, as the stream cannot resynchronise.
type recordStream struct {
	path   string
	file   *os.File
	r      *bufio.Reader
	layout streamLayout
	line   int   // 1-based line of the next unread byte
	index  int   // index of the next record
	inside bool  // a list element or object member was read: a comma is due
	err    error // sticky: io.EOF or a fatal error
	buf    []byte
	closed bool
	// outer, when set, lists the other members allowed in the object whose
	// member holds the list being streamed (openMemberList); the list's end
	// is not the file's.
	outer []string
}

// openStream opens path for streaming. With object true the file must hold
// one JSON object whose members are the records; otherwise it must hold a
// JSON list or JSONL, told apart by the first byte that is not white space.
func openStream(path string, object bool) (*recordStream, error) {
	f, r, err := openInput(path)
	if err != nil {
		return nil, err
	}
	s := &recordStream{path: path, file: f, r: r, line: 1}
	if err := s.start(object); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openMemberList opens path for streaming the elements of the JSON list
// that the member key of the file's top-level object holds, as TriviaQA's
// {"Data": [...], "Version": ...} files do. Members before and after it are
// skipped; their names must be among others.
func openMemberList(path, key string, others []string) (*recordStream, error) {
	s, err := openStream(path, true)
	if err != nil {
		return nil, err
	}
	s.outer = others
	for {
		name, err := s.nextKey()
		if err == io.EOF {
			err = fmt.Errorf("%s: the top-level object has no %q member", path, key)
		}
		if err != nil {
			s.close()
			return nil, err
		}
		if name == key {
			break
		}
		s.buf = s.buf[:0]
		if err := s.scanValue(); err != nil {
			s.close()
			return nil, s.syntaxError(err)
		}
	}
	if c, err := s.skipSpace(); err != nil || c != '[' {
		s.close()
		if err == nil {
			err = fmt.Errorf("got %q, want a list", c)
		}
		return nil, s.syntaxError(fmt.Errorf("member %q: %w", key, err))
	}
	s.readByte()
	s.layout, s.inside = layoutList, false
	return s, nil
}

// nextKey reads the next member name of the top-level object of a stream
// opened by openMemberList (io.EOF at its end), checking it is allowed.
func (s *recordStream) nextKey() (string, error) {
	c, err := s.skipSpace()
	if err != nil {
		return "", s.syntaxError(err)
	}
	switch {
	case c == '}':
		s.readByte()
		return "", io.EOF
	case s.inside && c != ',':
		return "", s.syntaxError(fmt.Errorf("got %q, want ',' or '}'", c))
	case s.inside:
		s.readByte()
		if _, err := s.skipSpace(); err != nil {
			return "", s.syntaxError(err)
		}
	}
	s.inside = true
	key, err := s.readKey()
	if err != nil {
		return "", s.syntaxError(err)
	}
	if !slices.Contains(s.outer, key) {
		return "", fmt.Errorf("%s: line %d: unknown top-level member %q: %w", s.path, s.line, key, ErrUnknownField)
	}
	return key, nil
}

// finishOuter reads the members after the list of a stream opened by
// openMemberList, then the end of the file.
func (s *recordStream) finishOuter() error {
	for {
		_, err := s.nextKey()
		if err == io.EOF {
			return s.finish()
		}
		if err != nil {
			return err
		}
		s.buf = s.buf[:0]
		if err := s.scanValue(); err != nil {
			return s.syntaxError(err)
		}
	}
}

// openInput opens an input file for buffered reading, decompressing it
// when its name ends in ".gz". Closing the file ends both.
func openInput(path string) (*os.File, *bufio.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err // *fs.PathError names the file
	}
	var src io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		src = gz
	}
	return f, bufio.NewReaderSize(src, 1<<16), nil
}

// start skips a byte-order mark and leading white space and chooses the layout.
func (s *recordStream) start(object bool) error {
	if bom, err := s.r.Peek(3); err == nil && string(bom) == "\xef\xbb\xbf" {
		s.r.Discard(3)
	}
	c, err := s.skipSpace()
	switch {
	case err == io.EOF:
		if object {
			return fmt.Errorf("%s: empty file, want a JSON object", s.path)
		}
		s.err = io.EOF
		return nil
	case err != nil:
		return s.ioError(err)
	}
	switch {
	case object && c != '{':
		return fmt.Errorf("%s: line %d: got %q, want a JSON object", s.path, s.line, c)
	case object:
		s.layout = layoutObject
		s.readByte()
	case c == '[':
		s.layout = layoutList
		s.readByte()
	default:
		s.layout = layoutJSONL
	}
	return nil
}

// next returns the next record, io.EOF after the last one, a *RecordError
// for a bad JSONL line, or a fatal error.
func (s *recordStream) next() (rawRecord, error) {
	if s.closed {
		return rawRecord{}, fmt.Errorf("%s: %w", s.path, os.ErrClosed)
	}
	if s.err != nil {
		return rawRecord{}, s.err
	}
	var (
		rec rawRecord
		err error
	)
	if s.layout == layoutJSONL {
		rec, err = s.nextLine()
	} else {
		rec, err = s.nextMember()
	}
	var recErr *RecordError
	if err != nil && !errors.As(err, &recErr) {
		s.err = err
	}
	return rec, err
}

func (s *recordStream) nextLine() (rawRecord, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return rawRecord{}, err
		}
		n := s.line
		s.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		rec := rawRecord{Index: s.index, Line: n, Data: line}
		s.index++
		if !json.Valid(line) {
			var v any
			reason := json.Unmarshal(line, &v)
			return rec, &RecordError{File: s.path, Line: n, Index: rec.Index, Err: fmt.Errorf("invalid JSON: %w", reason)}
		}
		return rec, nil
	}
}

// readLine returns the next line without its newline, or io.EOF when there
// is none. Lines may be of any length.
func (s *recordStream) readLine() ([]byte, error) {
	s.buf = s.buf[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.buf = append(s.buf, chunk...)
		switch {
		case err == nil:
			return s.buf[:len(s.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(s.buf) > 0:
			return s.buf, nil
		case err == io.EOF:
			return nil, io.EOF
		default:
			return nil, s.ioError(err)
		}
	}
}

// nextMember reads the next element of a JSON list or member of a JSON object.
func (s *recordStream) nextMember() (rawRecord, error) {
	c, err := s.skipSpace()
	if err != nil {
		return rawRecord{}, s.syntaxError(err)
	}
	closer := byte(']')
	if s.layout == layoutObject {
		closer = '}'
	}
	switch {
	case c == closer && s.outer != nil:
		s.readByte()
		s.layout, s.inside = layoutObject, true
		return rawRecord{}, s.finishOuter()
	case c == closer:
		s.readByte()
		return rawRecord{}, s.finish()
	case s.inside && c != ',':
		return rawRecord{}, s.syntaxError(fmt.Errorf("got %q, want ',' or %q", c, closer))
	case s.inside:
		s.readByte()
		if _, err := s.skipSpace(); err != nil {
			return rawRecord{}, s.syntaxError(err)
		}
	}
	s.inside = true
	rec := rawRecord{Index: s.index, Line: s.line}
	s.index++
	if s.layout == layoutObject {
		key, err := s.readKey()
		if err != nil {
			return rawRecord{}, s.syntaxErrorAt(rec, err)
		}
		rec.Key = key
	}
	s.buf = s.buf[:0]
	if err := s.scanValue(); err != nil {
		return rawRecord{}, s.syntaxErrorAt(rec, err)
	}
	if !json.Valid(s.buf) {
		var v any
		reason := json.Unmarshal(s.buf, &v)
		return rawRecord{}, s.syntaxErrorAt(rec, fmt.Errorf("invalid JSON: %w", reason))
	}
	rec.Data = s.buf
	return rec, nil
}

// readKey reads `"key" :` and the white space after it.
func (s *recordStream) readKey() (string, error) {
	s.buf = s.buf[:0]
	c, err := s.readByte()
	if err != nil {
		return "", err
	}
	if c != '"' {
		return "", fmt.Errorf("got %q, want a string key", c)
	}
	s.buf = append(s.buf, c)
	if err := s.scanString(); err != nil {
		return "", err
	}
	var key string
	if err := json.Unmarshal(s.buf, &key); err != nil {
		return "", fmt.Errorf("bad key: %w", err)
	}
	c, err = s.skipSpace()
	if err != nil {
		return "", err
	}
	if c != ':' {
		return "", fmt.Errorf("got %q after key %q, want ':'", c, key)
	}
	s.readByte()
	if _, err := s.skipSpace(); err != nil {
		return "", err
	}
	return key, nil
}

// finish checks that nothing but white space follows the closing bracket.
func (s *recordStream) finish() error {
	c, err := s.skipSpace()
	switch {
	case err == io.EOF:
		return io.EOF
	case err != nil:
		return s.ioError(err)
	}
	return fmt.Errorf("%s: line %d: got %q after the end of the JSON value", s.path, s.line, c)
}

// scanValue appends the bytes of one JSON value to s.buf. It only finds the
// value's end; json.Valid checks its syntax.
func (s *recordStream) scanValue() error {
	c, err := s.takeByte()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		return s.scanString()
	case '{', '[':
		depth := 1
		for depth > 0 {
			c, err := s.takeByte()
			if err != nil {
				return err
			}
			switch c {
			case '"':
				if err := s.scanString(); err != nil {
					return err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return nil
	case ',', ']', '}', ':':
		return fmt.Errorf("got %q, want a value", c)
	}
	// A number, true, false or null: it ends before a delimiter.
	for {
		c, err := s.readByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if isJSONSpace(c) || c == ',' || c == ']' || c == '}' {
			s.unreadByte(c)
			return nil
		}
		s.buf = append(s.buf, c)
	}
}

// scanString appends the rest of a string whose opening quote was read.
func (s *recordStream) scanString() error {
	escaped := false
	for {
		c, err := s.takeByte()
		if err != nil {
			return err
		}
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			return nil
		}
	}
}

// skipSpace consumes white space and returns the next byte without
// consuming it.
func (s *recordStream) skipSpace() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		if !isJSONSpace(c) {
			s.unreadByte(c)
			return c, nil
		}
	}
}

// takeByte reads a byte and appends it to s.buf.
func (s *recordStream) takeByte() (byte, error) {
	c, err := s.readByte()
	if err == nil {
		s.buf = append(s.buf, c)
	}
	return c, err
}

func (s *recordStream) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err == nil && c == '\n' {
		s.line++
	}
	return c, err
}

func (s *recordStream) unreadByte(c byte) {
	s.r.UnreadByte()
	if c == '\n' {
		s.line--
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ioError wraps an error of the underlying reader.
func (s *recordStream) ioError(err error) error {
	return fmt.Errorf("read %s: %w", s.path, err)
}

// syntaxError is the fatal error for bad input between records.
func (s *recordStream) syntaxError(err error) error {
	return s.syntaxErrorAt(rawRecord{Index: s.index, Line: s.line}, err)
}

// syntaxErrorAt is the fatal error for bad input within a record of a JSON
// list or object; the stream cannot go on after it.
func (s *recordStream) syntaxErrorAt(rec rawRecord, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: record %d (line %d): %w", s.path, rec.Index+1, rec.Line, err)
}

// close releases the file; it is safe to call more than once.
func (s *recordStream) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	// The gzip reader holds no resources beyond memory, and its Close
	// repeats a read error that next has already reported.
	if err := s.file.Close(); err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// decodeStrict decodes one record into v, rejecting fields v does not list.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
