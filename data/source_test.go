package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetectCorpusFormat(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          CorpusFormat
		wantErr       bool
	}{
		{"c.jsonl", `{"id": "1", "title": "T", "text": "x"}` + "\n", CorpusJSONL, false},
		{"c2.jsonl", "\ufeff  \n" + `{"title": "T", "id": "1", "text": "x"}`, CorpusJSONL, false},
		{"beir.jsonl", `{"_id": "1", "title": "T", "text": "x", "metadata": {}}`, CorpusBEIR, false},
		{"flash.jsonl", `{"id": "1", "contents": "T\nx"}`, CorpusFlashRAG, false},
		{"list.json", `[{"title": "T", "text": "x"}, {"title": "U", "text": "y"}]`, CorpusJSONList, false},
		{"listid.json", `[{"id": "a", "title": "T", "text": "x"}]`, CorpusJSONL, false},
		{"ts.json", `{"Title one": ["s1", "s2"], "Title two": ["s3"]}`, CorpusTitleSentences, false},
		{"c.parquet", ``, CorpusParquet, false},
		{"empty.jsonl", ``, "", true},
		{"num.json", `[1, 2]`, "", true},
		{"odd.jsonl", `{"question": "q"}`, "", true},
		{"broken.jsonl", `{"id": `, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if tc.want != CorpusParquet {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := DetectCorpusFormat(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("DetectCorpusFormat: got error %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSkipBad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	content := `{"id": "1", "title": "A", "text": "x"}
not json
{"id": "2", "title": "B", "text": ""}
{"id": "3", "title": "C", "text": "z"}
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenCorpus(path, CorpusJSONL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lines []int
	s := &SkipBad{Source: r, OnBad: func(e *RecordError) { lines = append(lines, e.Line) }}
	var ids []string
	for _, p := range readAll(t, s) {
		ids = append(ids, p.ID)
	}
	if diff := cmp.Diff([]string{"1", "3"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2, 3}, lines); diff != "" {
		t.Errorf("bad lines (-want +got):\n%s", diff)
	}
	if s.Skipped != 2 {
		t.Errorf("got Skipped=%d, want 2", s.Skipped)
	}
}

func TestReadWithContext(t *testing.T) {
	qs, ps, err := ReadWithContext(filepath.Join("testdata", "hotpotqa.json"), QuestionsHotpotQA)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenQuestions(filepath.Join("testdata", "hotpotqa.json"), QuestionsHotpotQA)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wantQ []Question
	wantP := map[string]bool{}
	for _, ex := range readAll(t, r) {
		wantQ = append(wantQ, ex.Question)
		for _, p := range ex.Context {
			wantP[p.ID] = true
		}
	}
	if diff := cmp.Diff(wantQ, qs); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}
	gotP := map[string]bool{}
	for _, p := range ps {
		if gotP[p.ID] {
			t.Errorf("passage %s twice", p.ID)
		}
		gotP[p.ID] = true
	}
	if diff := cmp.Diff(wantP, gotP); diff != "" {
		t.Errorf("passage ids (-want +got):\n%s", diff)
	}
	if _, _, err := ReadWithContext(filepath.Join("testdata", "hotpotqa_broken.json"), QuestionsHotpotQA); err == nil {
		t.Error("broken file: got nil error")
	}
}
