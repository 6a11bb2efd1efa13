package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testCorpusReaderConformance checks the CorpusReader contract (see
// QuestionReader) on a valid fixture holding want passages, and on a
// truncated copy of it.
func testCorpusReaderConformance(t *testing.T, format CorpusFormat, fixture string, want int) {
	t.Helper()
	open := func(path string) (recordReader[Passage], error) { return OpenCorpus(path, format) }
	testReaderConformance(t, "OpenCorpus", open, fixture, want, 100_000, func(t *testing.T, p Passage) string {
		switch {
		case p.ID == "":
			t.Errorf("passage %q: got an empty id", p.Title)
		case p.Text == "":
			t.Errorf("passage %s: got empty text", p.ID)
		}
		return p.ID
	})
}

// writeCorpusParquet writes passages as a corpus parquet file named name in
// a temporary directory.
func writeCorpusParquet(t testing.TB, dir string, passages []Passage) string {
	t.Helper()
	path := filepath.Join(dir, "corpus.parquet")
	w, err := CreateParquet[Passage](path, KindCorpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(passages); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

var corpusFixture = []Passage{
	{ID: "d1", Title: "London", Text: "London is the capital of England. It stands on the River Thames."},
	{ID: "d2", Title: "Paris", Text: "Paris is the capital of France.", Sentences: []string{"Paris is the capital of France."}},
	{ID: "3", Title: "", Text: "A passage without a title."},
}

func TestCorpusReaderConformance(t *testing.T) {
	pq := writeCorpusParquet(t, t.TempDir(), corpusFixture)
	gz := writeFile(t, "corpus.jsonl.gz", gzipBytes(t, mustRead(t, "testdata/corpus.jsonl")))
	tests := []struct {
		format  CorpusFormat
		fixture string
		want    int
	}{
		{CorpusJSONL, "testdata/corpus.jsonl", 3},
		{CorpusJSONL, gz, 3},
		{CorpusFlashRAG, "testdata/corpus_flashrag.jsonl", 3},
		{CorpusBEIR, "testdata/corpus_beir.jsonl", 3},
		{CorpusJSONList, "testdata/corpus_list.json", 3},
		{CorpusTitleSentences, "testdata/corpus_title_sentences.json", 3},
		{CorpusParquet, pq, 3},
	}
	for _, tt := range tests {
		t.Run(string(tt.format)+"/"+filepath.Base(tt.fixture), func(t *testing.T) {
			testCorpusReaderConformance(t, tt.format, tt.fixture, tt.want)
		})
	}
}

func readPassages(t *testing.T, path string, format CorpusFormat) []Passage {
	t.Helper()
	r, err := OpenCorpus(path, format)
	if err != nil {
		t.Fatalf("OpenCorpus: %v", err)
	}
	defer r.Close()
	return readAll(t, r)
}

func TestOpenCorpus(t *testing.T) {
	london := "London is the capital of England."
	tests := []struct {
		format  CorpusFormat
		fixture string
		want    []Passage
	}{
		{CorpusJSONL, "testdata/corpus.jsonl", corpusFixture},
		{CorpusFlashRAG, "testdata/corpus_flashrag.jsonl", []Passage{
			{ID: "0", Title: "London", Text: london},
			{ID: "1", Title: "Paris", Text: "Paris is the capital of France.\nIt is on the Seine."},
			{ID: "2", Title: "", Text: "A passage without a title line."},
		}},
		{CorpusBEIR, "testdata/corpus_beir.jsonl", []Passage{
			{ID: "doc0", Title: "London", Text: london},
			{ID: "doc1", Title: "Paris", Text: "Paris is the capital of France."},
			{ID: "doc2", Title: "", Text: "A passage without a title."},
		}},
		{CorpusJSONList, "testdata/corpus_list.json", []Passage{
			para("London", london),
			para("Paris", "Paris is the capital of France."),
			para("Berlin", "Berlin is the capital of Germany."),
		}},
		{CorpusTitleSentences, "testdata/corpus_title_sentences.json", []Passage{
			para("London", london+" It stands on the River Thames.", london, "It stands on the River Thames."),
			para("Paris", "Paris is the capital of France. It is on the Seine.", "Paris is the capital of France.", "It is on the Seine."),
			para(`Café "Z"`, `A café in [brackets] {braces}, with a \ backslash.`, `A café in [brackets] {braces}, with a \ backslash.`),
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			got := readPassages(t, tt.fixture, tt.format)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("passages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCorpusReaderBadRecords(t *testing.T) {
	tests := []struct {
		name      string
		format    CorpusFormat
		fixture   string
		want      []outcome
		wantStats ReadStats
	}{
		{
			name:    "jsonl",
			format:  CorpusJSONL,
			fixture: "testdata/corpus_bad.jsonl",
			want: []outcome{
				{ID: "ok1"},
				{Index: 1, Line: 2, Reason: "invalid JSON: unexpected end of JSON input"},
				{Index: 2, Line: 3, Field: "text", Reason: "missing or empty"},
				{Index: 3, Line: 4, Field: "id", Reason: "missing or empty"},
				{Index: 4, Line: 5, Field: "contents", Reason: "jsonl format: unknown field"},
				{Index: 5, Line: 6, Field: "id", Reason: "want a string or a number"},
				{ID: "ok2"},
			},
			wantStats: ReadStats{Records: 7, BadRecords: 5},
		},
		{
			name:    "title-sentences",
			format:  CorpusTitleSentences,
			fixture: "testdata/corpus_title_sentences_bad.json",
			want: []outcome{
				{ID: DocID("A", "a.")},
				{Index: 1, Line: 1, Reason: `title "B": want a list of sentences`},
				{Index: 2, Line: 2, Field: "text", Reason: `title "C": missing or empty`},
				{ID: DocID("D", "d.")},
			},
			wantStats: ReadStats{Records: 4, BadRecords: 2},
		},
		{
			name:    "jsonl read as beir",
			format:  CorpusBEIR,
			fixture: "testdata/corpus.jsonl",
			want: []outcome{
				{Index: 0, Line: 1, Field: "id", Reason: "beir format: unknown field"},
				{Index: 1, Line: 2, Field: "id", Reason: "beir format: unknown field"},
				{Index: 2, Line: 3, Field: "id", Reason: "beir format: unknown field"},
			},
			wantStats: ReadStats{Records: 3, BadRecords: 3},
		},
		{
			name:    "jsonl read as flashrag",
			format:  CorpusFlashRAG,
			fixture: "testdata/corpus.jsonl",
			want: []outcome{
				{Index: 0, Line: 1, Field: "title", Reason: "flashrag format: unknown field"},
				{Index: 1, Line: 2, Field: "title", Reason: "flashrag format: unknown field"},
				{Index: 2, Line: 3, Field: "title", Reason: "flashrag format: unknown field"},
			},
			wantStats: ReadStats{Records: 3, BadRecords: 3},
		},
		{
			name:    "beir read as json-list",
			format:  CorpusJSONList,
			fixture: "testdata/corpus_beir.jsonl",
			want: []outcome{
				{Index: 0, Line: 1, Field: "_id", Reason: "json-list format: unknown field"},
				{Index: 1, Line: 2, Field: "_id", Reason: "json-list format: unknown field"},
				{Index: 2, Line: 3, Field: "_id", Reason: "json-list format: unknown field"},
			},
			wantStats: ReadStats{Records: 3, BadRecords: 3},
		},
		{
			name:    "list read as title-sentences",
			format:  CorpusTitleSentences,
			fixture: "testdata/corpus_list.json",
			want:    []outcome{{Fatal: "FILE: line 1: got '[', want a JSON object"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := func(path string) (recordReader[Passage], error) { return OpenCorpus(path, tt.format) }
			testBadRecords(t, open, tt.fixture, func(p Passage) string { return p.ID }, tt.want, tt.wantStats)
		})
	}
}

func TestOpenCorpusErrors(t *testing.T) {
	dir := t.TempDir()
	questions := filepath.Join(dir, "questions.parquet")
	w, err := CreateParquet[Question](questions, KindQuestions)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	notParquet := writeFile(t, "corpus.parquet", []byte("PAR1 but not really"))
	testOpenErrors(t, OpenCorpus, []openErrorCase[CorpusFormat]{
		{"unknown format", "testdata/corpus.jsonl", "csv", `unknown corpus format "csv" (valid: jsonl, flashrag, beir, json-list, title-sentences, parquet)`},
		{"missing file", "testdata/absent.jsonl", CorpusJSONL, "testdata/absent.jsonl: no such file or directory"},
		{"parquet of another kind", questions, CorpusParquet, questions + `: parquet file of kind "questions", want "corpus"`},
		{"not parquet", notParquet, CorpusParquet, "open parquet " + notParquet},
	})
}

func TestParseCorpusFormat(t *testing.T) {
	testParseFormat(t, ParseCorpusFormat, []parseCase[CorpusFormat]{
		{"jsonl", CorpusJSONL, ""},
		{"BEIR", CorpusBEIR, ""},
		{"json-list", CorpusJSONList, ""},
		{"title-sentences", CorpusTitleSentences, ""},
		{"parquet", CorpusParquet, ""},
		{"flashrag", CorpusFlashRAG, ""},
		{"tsv", "", `unknown corpus format "tsv" (valid: jsonl, flashrag, beir, json-list, title-sentences, parquet)`},
	})
}

func TestRealCorpora(t *testing.T) {
	tests := []struct {
		name   string
		rel    string
		format CorpusFormat
		want   int
	}{
		{"2wiki", "2wikimultihopqa/2wiki_corpus.jsonl", CorpusJSONL, 6119},
		{"musique", "musique/musique_train_corpus.json", CorpusJSONList, 1890},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testCorpusReaderConformance(t, tt.format, sharedData(t, tt.rel), tt.want)
		})
	}
}

// TestReal2WikiCorpusIDs checks the doc id convention against the reference
// code's 2Wiki corpus, whose ids are sha1(title + "\n" + text).
func TestReal2WikiCorpusIDs(t *testing.T) {
	r, err := OpenCorpus(sharedData(t, "2wikimultihopqa/2wiki_corpus.jsonl"), CorpusJSONL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 300 {
		p, err := r.Next()
		if err != nil {
			t.Fatalf("passage %d: %v", i, err)
		}
		if got := DocID(p.Title, p.Text); got != p.ID {
			t.Errorf("passage %d (%q): got DocID %s, want the corpus id %s", i, p.Title, got, p.ID)
		}
	}
}

// fuzzCorpus fuzzes the corpus reader of a format (fuzzReader); a parquet
// reader need not end within as many calls as the input has bytes.
func fuzzCorpus(f *testing.F, format CorpusFormat, name string, seeds ...[]byte) {
	open := func(path string) (recordReader[Passage], error) { return OpenCorpus(path, format) }
	fuzzReader(f, name, open, format != CorpusParquet, seeds...)
}

func FuzzCorpusJSONL(f *testing.F) {
	fuzzCorpus(f, CorpusJSONL, "in.jsonl", fixtures(f, "corpus.jsonl", "corpus_bad.jsonl")...)
}

func FuzzCorpusFlashRAG(f *testing.F) {
	fuzzCorpus(f, CorpusFlashRAG, "in.jsonl", fixtures(f, "corpus_flashrag.jsonl")...)
}

func FuzzCorpusBEIR(f *testing.F) {
	fuzzCorpus(f, CorpusBEIR, "in.jsonl", fixtures(f, "corpus_beir.jsonl")...)
}

func FuzzCorpusJSONList(f *testing.F) {
	fuzzCorpus(f, CorpusJSONList, "in.json", fixtures(f, "corpus_list.json")...)
}

func FuzzCorpusTitleSentences(f *testing.F) {
	fuzzCorpus(f, CorpusTitleSentences, "in.json", fixtures(f, "corpus_title_sentences.json", "corpus_title_sentences_bad.json")...)
}

func FuzzCorpusParquet(f *testing.F) {
	data, err := os.ReadFile(writeCorpusParquet(f, f.TempDir(), corpusFixture))
	if err != nil {
		f.Fatal(err)
	}
	fuzzCorpus(f, CorpusParquet, "in.parquet", data)
}
