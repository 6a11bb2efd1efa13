package data

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The checks that the corpus and question readers share, beside
// testReaderConformance: bad records, files that do not open, format
// names, fuzzing.

// readAll reads r to io.EOF and returns the records, failing the test on
// any other error.
func readAll[T any](t *testing.T, r interface{ Next() (T, error) }) []T {
	t.Helper()
	var out []T
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, rec)
	}
}

// testBadRecords reads path with open and checks the outcome of every
// call of Next until io.EOF or a fatal error (id names a record read), and
// the reader's stats then. A file that does not open has one outcome, its
// error, and no stats.
func testBadRecords[T any](t *testing.T, open func(path string) (recordReader[T], error), path string, id func(T) string, want []outcome, wantStats ReadStats) {
	t.Helper()
	var got []outcome
	r, err := open(path)
	if err != nil {
		got = append(got, outcomeOf(path, "", err))
	} else {
		defer r.Close()
		for range 100 {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			got = append(got, outcomeOf(path, id(rec), err))
			if !checkReaderError(t, err, path) {
				break
			}
		}
		if diff := cmp.Diff(wantStats, r.Stats()); diff != "" {
			t.Errorf("stats mismatch (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes mismatch (-want +got):\n%s", diff)
	}
}

// openErrorCase is a file that a reader of the format must refuse to
// open, and a part of the error it must give.
type openErrorCase[F any] struct {
	name   string
	path   string
	format F
	want   string
}

func testOpenErrors[F any, R io.Closer](t *testing.T, open func(path string, format F) (R, error), tests []openErrorCase[F]) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := open(tt.path, tt.format)
			if err == nil {
				r.Close()
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// parseCase is a format name and what parsing it gives.
type parseCase[F any] struct {
	in      string
	want    F
	wantErr string
}

func testParseFormat[F ~string](t *testing.T, parse func(string) (F, error), tests []parseCase[F]) {
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parse(tt.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tt.want || gotErr != tt.wantErr {
				t.Errorf("got (%q, %q), want (%q, %q)", got, gotErr, tt.want, tt.wantErr)
			}
		})
	}
}

// fuzzReader checks that a reader neither panics nor breaks its error
// contract on arbitrary input, written to a file named name, and, when
// mustEnd, that it reaches io.EOF within as many calls of Next as the
// input has bytes.
func fuzzReader[T any](f *testing.F, name string, open func(path string) (recordReader[T], error), mustEnd bool, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	// One file per fuzzing process: the fuzz function runs sequentially in it.
	path := filepath.Join(f.TempDir(), name)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := open(path)
		if err != nil {
			checkReaderError(t, err, path)
			return
		}
		defer r.Close()
		for range len(data) + 2 {
			_, err := r.Next()
			if !checkReaderError(t, err, path) {
				return
			}
		}
		if mustEnd {
			t.Fatalf("no io.EOF after %d calls of Next on %d bytes", len(data)+2, len(data))
		}
	})
}

// fixtures returns the contents of files of testdata.
func fixtures(f *testing.F, names ...string) [][]byte {
	var out [][]byte
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}
