package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/distill-rag/distill/data"
)

// badRecord is what a test keeps of a data.RecordError.
type badRecord struct {
	Index  int
	Line   int
	Field  string
	Reason string // the RecordError's Err
}

func badRecordOf(e *data.RecordError) badRecord {
	return badRecord{Index: e.Index, Line: e.Line, Field: e.Field, Reason: e.Err.Error()}
}

// hotpotqaBadRecords are the bad records of ../testdata/hotpotqa_bad.jsonl
// as the HotpotQA reader reports them (package data's tests hold the
// reader to them).
var hotpotqaBadRecords = []badRecord{
	{Index: 1, Line: 2, Reason: "invalid JSON: unexpected end of JSON input"},
	{Index: 2, Line: 4, Field: "question", Reason: "got JSON number, want string"},
	{Index: 3, Line: 5, Field: "paragraphs", Reason: "hotpotqa format: unknown field"},
	{Index: 4, Line: 6, Field: "question", Reason: "missing or empty"},
	{Index: 5, Line: 7, Field: "supporting_facts", Reason: `fact 0: title "B" is not in the context`},
	{Index: 6, Line: 8, Field: "supporting_facts", Reason: "fact 0: want [title, sentence index]: element 1: got JSON string, want integer"},
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sharedData returns the path of rel in the shared datasets, kept beside
// the repository (../shared/data), skipping the test when it is absent.
func sharedData(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real data not available (%v); it is kept outside the repository at ../shared/data", err)
	}
	return p
}
