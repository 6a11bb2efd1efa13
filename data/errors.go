package data

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// Sentinel causes carried by a RecordError's Err, for callers that branch on
// them with errors.Is.
var (
	// ErrUnknownField means a record has a field its format does not have,
	// which usually means the file is in another format.
	ErrUnknownField = errors.New("unknown field")
	// ErrMissingField means a required field is absent or empty.
	ErrMissingField = errors.New("missing or empty")
)

// RecordError reports one bad record of an input file. It is recoverable: the
// reader that returned it can go on with the next record. Every other error a
// reader returns, apart from io.EOF, is fatal.
type RecordError struct {
	// File is the path of the input file as it was given to the reader.
	File string
	// Line is the 1-based line where the record starts, 0 if unknown.
	Line int
	// Index is the 0-based index of the record within the file (messages
	// show it counting from 1).
	Index int
	// Field names the offending field, empty when the record as a whole is
	// bad (for example not valid JSON).
	Field string
	// Err is the reason.
	Err error
}

func (e *RecordError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": record ")
	b.WriteString(strconv.Itoa(e.Index + 1)) // people count records from 1
	if e.Line > 0 {
		b.WriteString(" (line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(")")
	}
	if e.Field != "" {
		b.WriteString(": field ")
		b.WriteString(strconv.Quote(e.Field))
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("bad record")
	}
	return b.String()
}

func (e *RecordError) Unwrap() error { return e.Err }

// recordErrorFor turns an error from decoding a record into a RecordError
// that names the offending field where the decoder tells which one.
func recordErrorFor(file string, rec rawRecord, format string, err error) *RecordError {
	re := &RecordError{File: file, Line: rec.Line, Index: rec.Index, Err: err}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		re.Field = typeErr.Field
		re.Err = describeJSONError(err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this case; its message is
		// `json: unknown field "name"`.
		name, uerr := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if uerr == nil {
			re.Field = name
		}
		re.Err = fmt.Errorf("%s format: %w", format, ErrUnknownField)
	}
	return re
}

// jsonKind names the JSON type that decodes into t.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.String()
}

// missing is the RecordError for a required field that is absent or empty.
func missing(file string, rec rawRecord, field string) *RecordError {
	return &RecordError{File: file, Line: rec.Line, Index: rec.Index, Field: field, Err: ErrMissingField}
}

// badField is the RecordError for a field whose value is wrong.
func badField(file string, rec rawRecord, field string, err error) *RecordError {
	return &RecordError{File: file, Line: rec.Line, Index: rec.Index, Field: field, Err: err}
}

// jsonHint says what to do with a JSON or JSONL file given where a parquet
// file of distill's is read: "" for anything else.
func jsonHint(f *os.File) string {
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	trimmed := bytes.TrimLeft(head[:n], " \t\r\n\ufeff")
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return ""
	}
	return " (it is JSON: distill data import converts a dataset's files into questions.parquet and corpus.parquet)"
}
