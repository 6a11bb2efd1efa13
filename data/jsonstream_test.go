package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// streamed is what a test keeps of one record or error of a stream.
type streamed struct {
	Index int
	Line  int
	Key   string
	Data  string
	Err   string // the error's text, with the file's path cut out
	Bad   bool   // the error was a *RecordError
}

// readStream collects everything a stream yields up to io.EOF or a fatal error.
func readStream(t *testing.T, path string, object bool) []streamed {
	t.Helper()
	s, err := openStream(path, object)
	if err != nil {
		return []streamed{{Err: strings.ReplaceAll(err.Error(), path, "FILE")}}
	}
	defer s.close()
	var out []streamed
	for range 1000 {
		rec, err := s.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			var recErr *RecordError
			bad := errors.As(err, &recErr)
			out = append(out, streamed{Index: rec.Index, Line: rec.Line, Err: strings.ReplaceAll(err.Error(), path, "FILE"), Bad: bad})
			if !bad {
				if _, again := s.next(); again == nil || again.Error() != err.Error() {
					t.Errorf("next after a fatal error: got %v, want %v again", again, err)
				}
				return out
			}
			continue
		}
		out = append(out, streamed{Index: rec.Index, Line: rec.Line, Key: rec.Key, Data: string(rec.Data)})
	}
	t.Fatalf("stream of %s did not end", path)
	return nil
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gzipBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRecordStream(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		object bool
		want   []streamed
	}{
		{
			name:  "jsonl with blank lines and CRLF",
			input: "{\"a\":1}\r\n\r\n  \n{\"a\": 2}  \n{\"a\":3}",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Index: 1, Line: 4, Data: `{"a": 2}`},
				{Index: 2, Line: 5, Data: `{"a":3}`},
			},
		},
		{
			name:  "jsonl bad line is recoverable",
			input: "{\"a\":1}\n{\"a\":\n{\"a\":1} {\"b\":2}\n{\"a\":3}\n",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Index: 1, Line: 2, Err: "FILE: record 2 (line 2): invalid JSON: unexpected end of JSON input", Bad: true},
				{Index: 2, Line: 3, Err: "FILE: record 3 (line 3): invalid JSON: invalid character '{' after top-level value", Bad: true},
				{Index: 3, Line: 4, Data: `{"a":3}`},
			},
		},
		{
			name:  "byte-order mark and leading space",
			input: "\xef\xbb\xbf\n\n{\"a\":1}\n",
			want:  []streamed{{Index: 0, Line: 3, Data: `{"a":1}`}},
		},
		{
			name:  "list with lines",
			input: "[\n  {\"a\": \"x]}\\\"[{\"},\n  {\n    \"b\": [1, {\"c\": null}]\n  }\n  ,\"s\", 12.5e3 ,true]\n\n",
			want: []streamed{
				{Index: 0, Line: 2, Data: `{"a": "x]}\"[{"}`},
				{Index: 1, Line: 3, Data: "{\n    \"b\": [1, {\"c\": null}]\n  }"},
				{Index: 2, Line: 6, Data: `"s"`},
				{Index: 3, Line: 6, Data: `12.5e3`},
				{Index: 4, Line: 6, Data: `true`},
			},
		},
		{
			name:  "empty list",
			input: " [ ] ",
		},
		{
			name: "empty file",
		},
		{
			name:  "syntax error in a list is fatal",
			input: "[{\"a\":1},\n{\"a\" 1},\n{\"a\":3}]",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Err: "FILE: record 2 (line 2): invalid JSON: invalid character '1' after object key"},
			},
		},
		{
			name:  "truncated list",
			input: "[{\"a\":1},\n{\"a\":",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Err: "FILE: record 2 (line 2): unexpected EOF"},
			},
		},
		{
			name:  "list without its closing bracket",
			input: "[{\"a\":1}\n",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Err: "FILE: record 2 (line 2): unexpected EOF"},
			},
		},
		{
			name:  "trailing comma",
			input: "[{\"a\":1},]",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Err: "FILE: record 2 (line 1): got ']', want a value"},
			},
		},
		{
			name:  "missing comma",
			input: "[{\"a\":1} {\"a\":2}]",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Err: "FILE: record 2 (line 1): got '{', want ',' or ']'"},
			},
		},
		{
			name:  "data after the list",
			input: "[{\"a\":1}]\n[]",
			want: []streamed{
				{Index: 0, Line: 1, Data: `{"a":1}`},
				{Err: "FILE: line 2: got '[' after the end of the JSON value"},
			},
		},
		{
			name:   "object members",
			input:  "{\n\"London\": [\"a.\", \" b.\"],\n \"Caf\\u00e9\" :[\"c\"] }\n",
			object: true,
			want: []streamed{
				{Index: 0, Line: 2, Key: "London", Data: `["a.", " b."]`},
				{Index: 1, Line: 3, Key: "Café", Data: `["c"]`},
			},
		},
		{
			name:   "object with a bad key",
			input:  "{\"a\": [], 7: []}",
			object: true,
			want: []streamed{
				{Index: 0, Line: 1, Key: "a", Data: `[]`},
				{Err: "FILE: record 2 (line 1): got '7', want a string key"},
			},
		},
		{
			name:   "object wanted",
			input:  "[]",
			object: true,
			want:   []streamed{{Err: "FILE: line 1: got '[', want a JSON object"}},
		},
		{
			name:   "empty object file",
			object: true,
			want:   []streamed{{Err: "FILE: empty file, want a JSON object"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "in.json", []byte(tt.input))
			got := readStream(t, path, tt.object)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records mismatch (-want +got):\n%s", diff)
			}
			gzPath := writeFile(t, "in.json.gz", gzipBytes(t, []byte(tt.input)))
			gotGz := readStream(t, gzPath, tt.object)
			if diff := cmp.Diff(tt.want, gotGz); diff != "" {
				t.Errorf("gzip records mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordStreamLongLines(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	input := "{\"t\":\"" + long + "\"}\n{\"t\":\"short\"}\n"
	tests := []struct {
		name  string
		input string
	}{
		{"jsonl", input},
		{"list", "[" + strings.ReplaceAll(strings.TrimSpace(input), "\n", ",\n") + "]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readStream(t, writeFile(t, "long.json", []byte(tt.input)), false)
			if len(got) != 2 {
				t.Fatalf("got %d records, want 2", len(got))
			}
			if got[0].Err != "" || len(got[0].Data) != len(long)+8 {
				t.Errorf("got record 0 of %d bytes (err %q), want %d bytes", len(got[0].Data), got[0].Err, len(long)+8)
			}
			if got[1].Line != 2 {
				t.Errorf("got record 1 on line %d, want 2", got[1].Line)
			}
		})
	}
}

func TestRecordStreamTruncatedGzip(t *testing.T) {
	member := `"title": ["some text to make the stream longer"]`
	tests := []struct {
		name   string
		input  string
		object bool
	}{
		{"jsonl", strings.Repeat("{"+member+"}\n", 200), false},
		{"list", "[" + strings.Repeat("{"+member+"},\n", 200) + "{}]", false},
		{"object", "{" + strings.Repeat(member+",\n", 200) + member + "}", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := gzipBytes(t, []byte(tt.input))
			path := writeFile(t, "cut.json.gz", data[:len(data)/2])
			got := readStream(t, path, tt.object)
			if len(got) == 0 {
				t.Fatal("got no records and no error, want a fatal error")
			}
			if last := got[len(got)-1]; last.Bad || !strings.Contains(last.Err, "FILE") {
				t.Errorf("got last %+v, want a fatal error naming the file", last)
			}
		})
	}
}

func TestRecordStreamMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.json")
	_, err := openStream(path, false)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want a not-exist error naming %s", err, path)
	}
}

func TestRecordStreamClosed(t *testing.T) {
	s, err := openStream(writeFile(t, "in.jsonl", []byte("{}\n")), false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.close(); err != nil {
			t.Errorf("close %d: got %v, want nil", i, err)
		}
	}
	if _, err := s.next(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("next after close: got %v, want %v", err, os.ErrClosed)
	}
}
