package data

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sharedData returns the path of a file of the project's real test data,
// kept outside the repository at ../shared/data from the module root. The
// test is skipped when the file is absent.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("real data %s: module root not found above the working directory", rel)
		}
		dir = parent
	}
	path := filepath.Join(dir, "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real data not available (%v); it is kept outside the repository at ../shared/data", err)
	}
	return path
}

// truncatedCopy writes the first half of a file, cut inside a JSON token
// sequence rather than at a line end, to a file of the same name in a
// temporary directory.
func truncatedCopy(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(data) / 2
	for cut < len(data)-1 && (isJSONSpace(data[cut]) || isJSONSpace(data[cut-1])) {
		cut++
	}
	return writeFile(t, filepath.Base(path), data[:cut])
}

// checkReaderError checks an error from Next against the readers' contract
// and reports whether reading may go on.
func checkReaderError(t *testing.T, err error, path string) (more bool) {
	t.Helper()
	var recErr *RecordError
	switch {
	case err == nil:
		return true
	case err == io.EOF:
		return false
	case errors.As(err, &recErr):
		if recErr.File != path {
			t.Errorf("got RecordError for file %q, want %q", recErr.File, path)
		}
		if recErr.Index < 0 || recErr.Line < 0 {
			t.Errorf("got RecordError at index %d line %d, want both >= 0", recErr.Index, recErr.Line)
		}
		return true
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("got fatal error %q, want it to name the file %s", err, path)
	}
	return false
}

// recordReader is what the corpus and question readers share: the
// contract the conformance tests check.
type recordReader[T any] interface {
	Next() (T, error)
	Stats() ReadStats
	Close() error
}

// testReaderConformance checks the reader contract (see QuestionReader) on
// a valid fixture holding want records with unique ids, and on a truncated
// copy of it, where the reader must end within most calls of Next. check
// vets one record and returns its id. name names open in messages.
func testReaderConformance[T any](t *testing.T, name string, open func(path string) (recordReader[T], error), fixture string, want, most int, check func(*testing.T, T) string) {
	t.Helper()
	t.Run("reads every record", func(t *testing.T) {
		r, err := open(fixture)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ids := make(map[string]bool)
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Next: got %v, want no error on a valid fixture", err)
			}
			id := check(t, rec)
			if ids[id] && id != "" {
				t.Errorf("got id %q twice, want unique ids", id)
			}
			ids[id] = true
		}
		if len(ids) != want {
			t.Errorf("got %d records, want %d", len(ids), want)
		}
		if got := r.Stats(); got.Records != want || got.BadRecords != 0 {
			t.Errorf("got stats %+v, want %d records and none bad", got, want)
		}
		for i := range 2 {
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("Next %d after the end: got %v, want io.EOF", i, err)
			}
		}
		for i := range 2 {
			if err := r.Close(); err != nil {
				t.Errorf("Close %d: got %v, want nil", i, err)
			}
		}
		if _, err := r.Next(); err == nil || err == io.EOF {
			t.Errorf("Next after Close: got %v, want an error", err)
		}
	})
	t.Run("truncated input", func(t *testing.T) {
		path := truncatedCopy(t, fixture)
		r, err := open(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("%s: got %q, want an error naming %s", name, err, path)
			}
			return
		}
		defer r.Close()
		errs := 0
		for range most {
			_, err := r.Next()
			if err != nil && err != io.EOF {
				errs++
			}
			if !checkReaderError(t, err, path) {
				if errs == 0 {
					t.Errorf("got no error reading a truncated %s, want one", path)
				}
				return
			}
		}
		t.Fatalf("reader of %s did not end", path)
	})
}

// testQuestionReaderConformance checks the QuestionReader contract on a
// valid fixture holding want questions, and on a truncated copy of it.
func testQuestionReaderConformance(t *testing.T, format QuestionFormat, fixture string, want int) {
	t.Helper()
	open := func(path string) (recordReader[Example], error) { return OpenQuestions(path, format) }
	testReaderConformance(t, "OpenQuestions", open, fixture, want, 1000, func(t *testing.T, ex Example) string {
		q := ex.Question
		switch {
		case q.ID == "":
			t.Errorf("question %q: got an empty id", q.Text)
		case q.Text == "":
			t.Errorf("question %s: got empty text", q.ID)
		case len(q.Answers) == 0:
			t.Errorf("question %s: got no answers", q.ID)
		case q.Dataset == "":
			t.Errorf("question %s: got no dataset", q.ID)
		}
		for _, p := range ex.Context {
			if p.ID != DocID(p.Title, p.Text) {
				t.Errorf("question %s: paragraph %q: got id %s, want DocID(title, text)", q.ID, p.Title, p.ID)
			}
		}
		return q.ID
	})
}

func TestQuestionReaderConformance(t *testing.T) {
	gz := writeFile(t, "hotpotqa.json.gz", gzipBytes(t, mustRead(t, "testdata/hotpotqa.json")))
	tests := []struct {
		format  QuestionFormat
		fixture string
		want    int
	}{
		{QuestionsHotpotQA, "testdata/hotpotqa.json", 3},
		{QuestionsHotpotQA, gz, 3},
		{Questions2Wiki, "testdata/2wiki.json", 2},
		{QuestionsMuSiQue, "testdata/musique.jsonl", 2},
		{QuestionsFlashRAG, "testdata/flashrag.jsonl", 3},
		{QuestionsTriviaQA, "testdata/triviaqa.json", 2},
		{QuestionsTriviaQA, writeFile(t, "triviaqa.json.gz", gzipBytes(t, mustRead(t, "testdata/triviaqa.json"))), 2},
		{QuestionsTriviaQA, "testdata/triviaqa_flashrag.jsonl", 2},
	}
	for _, tt := range tests {
		t.Run(string(tt.format)+"/"+filepath.Base(tt.fixture), func(t *testing.T) {
			testQuestionReaderConformance(t, tt.format, tt.fixture, tt.want)
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// para is a context paragraph as the readers build it.
func para(title, text string, sentences ...string) Passage {
	return Passage{ID: DocID(title, text), Title: title, Text: text, Sentences: sentences}
}

func readExamples(t *testing.T, path string, format QuestionFormat, opts ...QuestionOption) ([]Example, ReadStats) {
	t.Helper()
	r, err := OpenQuestions(path, format, opts...)
	if err != nil {
		t.Fatalf("OpenQuestions: %v", err)
	}
	defer r.Close()
	out := readAll(t, r)
	return out, r.Stats()
}

// The context paragraphs of testdata/hotpotqa_fullwiki.json's first record.
var (
	fullwikiBabbage = para("Charles Babbage", "Charles Babbage was an English mathematician. He designed the Analytical Engine.",
		"Charles Babbage was an English mathematician.", "He designed the Analytical Engine.")
	fullwikiAda = para("Ada Lovelace", "Ada Lovelace was an English mathematician. She wrote the first program for the Analytical Engine.",
		"Ada Lovelace was an English mathematician.", "She wrote the first program for the Analytical Engine.")
)

func TestOpenQuestions(t *testing.T) {
	ada := para("Ada Lovelace", "Ada Lovelace was an English mathematician. She was born in London.",
		"Ada Lovelace was an English mathematician.", "She was born in London.")
	london := para("London", "London is the capital of England. It stands on the River Thames.",
		"London is the capital of England.", "It stands on the River Thames.")
	paris := para("Paris", "Paris is the capital of France.", "Paris is the capital of France.")
	berlin := para("Berlin", "Berlin is the capital of Germany.", "Berlin is the capital of Germany.")
	rome := para("Rome", "Rome is in Italy. It has seven hills. Its river is the Tiber.",
		"Rome is in Italy.", "It has seven hills.", "", "Its river is the Tiber.")
	mosaic := para("Polish Mosaic", "Polish Mosaic is a 1953 documentary film. It was directed by Anna Nowak.",
		"Polish Mosaic is a 1953 documentary film.", "It was directed by Anna Nowak.")
	nowak := para("Anna Nowak", "Anna Nowak was a Polish director. Her mother was Maria Nowak.",
		"Anna Nowak was a Polish director.", "Her mother was Maria Nowak.")
	warsaw := para("Warsaw", "Warsaw is the capital of Poland.", "Warsaw is the capital of Poland.")
	blueSky := para("Blue Sky", "Blue Sky is a 1994 film.", "Blue Sky is a 1994 film.")
	greenHills := para("Green Hills", "Green Hills is a novel by Jo Park.")
	joPark := para("Jo Park", "Jo Park was born in Leeds.")
	lantern := para("The Lantern", "The Lantern was written by Jo Park.")
	leeds := para("Leeds", "Leeds is a city in West Yorkshire.")
	yorkshire := para("West Yorkshire", "West Yorkshire is a county in England.")

	tests := []struct {
		name      string
		format    QuestionFormat
		fixture   string
		opts      []QuestionOption
		want      []Example
		wantStats ReadStats
	}{
		{
			name:    "hotpotqa",
			format:  QuestionsHotpotQA,
			fixture: "testdata/hotpotqa.json",
			want: []Example{
				{
					Question: Question{
						ID: "hp1", Text: "Which river flows through the city where Ada Lovelace was born?",
						Answers: []string{"River Thames"}, Type: "bridge",
						GoldTitles:      []string{"Ada Lovelace", "London"},
						GoldDocIDs:      []string{ada.ID, london.ID},
						SupportingFacts: []SupportingFact{{"Ada Lovelace", 1}, {"London", 1}},
						Dataset:         "hotpotqa",
					},
					Context: []Passage{ada, london, paris},
				},
				{
					Question: Question{
						ID: "hp2", Text: "Are London and Paris both capital cities?",
						Answers: []string{"yes"}, Type: "comparison",
						GoldTitles:      []string{"London", "Paris"},
						GoldDocIDs:      []string{london.ID, paris.ID},
						SupportingFacts: []SupportingFact{{"London", 0}, {"Paris", 0}, {"London", 1}},
						Dataset:         "hotpotqa",
					},
					Context: []Passage{london, paris, berlin},
				},
				{
					Question: Question{
						ID: "hp3", Text: "In which country is Berlin?",
						Answers: []string{"Germany"}, Type: "bridge",
						GoldTitles:      []string{"Berlin"},
						GoldDocIDs:      []string{berlin.ID},
						SupportingFacts: []SupportingFact{{"Berlin", 5}},
						Dataset:         "hotpotqa",
					},
					Context: []Passage{berlin, rome},
				},
			},
			wantStats: ReadStats{Records: 3, UnresolvedFacts: 1},
		},
		{
			name:    "2wiki",
			format:  Questions2Wiki,
			fixture: "testdata/2wiki.json",
			want: []Example{
				{
					Question: Question{
						ID: "w1", Text: "Who is the mother of the director of film Polish Mosaic?",
						Answers: []string{"Maria Nowak"}, Type: "compositional",
						GoldTitles:      []string{"Polish Mosaic", "Anna Nowak"},
						GoldDocIDs:      []string{mosaic.ID, nowak.ID},
						SupportingFacts: []SupportingFact{{"Polish Mosaic", 1}, {"Anna Nowak", 1}},
						Dataset:         "2wikimultihopqa",
					},
					Context: []Passage{mosaic, nowak, warsaw},
				},
				{
					Question: Question{
						ID: "w2", Text: "Which film came out first, Polish Mosaic or Blue Sky?",
						Answers: []string{"Polish Mosaic"}, Type: "comparison",
						GoldTitles:      []string{"Polish Mosaic", "Blue Sky"},
						GoldDocIDs:      []string{mosaic.ID, blueSky.ID},
						SupportingFacts: []SupportingFact{{"Polish Mosaic", 0}, {"Blue Sky", 0}},
						Dataset:         "2wikimultihopqa",
					},
					Context: []Passage{blueSky, mosaic},
				},
			},
			wantStats: ReadStats{Records: 2},
		},
		{
			name:    "musique",
			format:  QuestionsMuSiQue,
			fixture: "testdata/musique.jsonl",
			want: []Example{
				{
					Question: Question{
						ID: "2hop__1_2", Text: "Where was the author of The Lantern born?",
						Answers: []string{"Leeds", "Leeds, England"}, Type: "2hop",
						GoldTitles: []string{"The Lantern", "Jo Park"},
						GoldDocIDs: []string{lantern.ID, joPark.ID},
						Dataset:    "musique",
					},
					Context: []Passage{greenHills, joPark, lantern},
				},
				{
					Question: Question{
						ID: "3hop1__3_4_5", Text: "In which country is the county of the birthplace of Jo Park?",
						Answers: []string{"England"}, Type: "3hop1",
						GoldTitles: []string{"Jo Park", "Leeds", "West Yorkshire"},
						GoldDocIDs: []string{joPark.ID, leeds.ID, yorkshire.ID},
						Dataset:    "musique",
					},
					Context: []Passage{leeds, yorkshire, joPark},
				},
			},
			wantStats: ReadStats{Records: 2},
		},
		{
			name:    "flashrag",
			format:  QuestionsFlashRAG,
			fixture: "testdata/flashrag.jsonl",
			opts:    []QuestionOption{WithDataset("2wikimultihopqa")},
			want: []Example{
				{Question: Question{
					ID: "f1", Text: "Who directed Polish Mosaic?", Answers: []string{"Anna Nowak", "Nowak"},
					GoldTitles: []string{"Polish Mosaic", "Anna Nowak"}, Dataset: "2wikimultihopqa",
				}},
				{Question: Question{
					ID: "17", Text: "Which film came out first?", Answers: []string{"Polish Mosaic"}, Type: "comparison",
					GoldTitles:      []string{"Polish Mosaic", "Blue Sky"},
					SupportingFacts: []SupportingFact{{"Polish Mosaic", 0}, {"Blue Sky", 0}},
					Dataset:         "2wikimultihopqa",
				}},
				{Question: Question{
					ID: "f3", Text: "Which is a colour?", Answers: []string{"blue"}, Dataset: "2wikimultihopqa",
				}},
			},
			wantStats: ReadStats{Records: 3},
		},
		{
			name:    "triviaqa, original layout",
			format:  QuestionsTriviaQA,
			fixture: "testdata/triviaqa.json",
			want: []Example{
				{Question: Question{ID: "tc_33", Text: "Which Lloyd Webber musical premiered in the US on 10th December 1993?",
					Answers: []string{"Sunset Boulevard", "Sunset Blvd", "Sunset Blvd.", "sunset blvd", "sunset boulevard"}, Dataset: "triviaqa"}},
				{Question: Question{ID: "qz_1208", Text: "How many colours has a rainbow?", Answers: []string{"7", "seven"}, Dataset: "triviaqa"}},
			},
			wantStats: ReadStats{Records: 2},
		},
		{
			name:    "triviaqa, FlashRAG layout",
			format:  QuestionsTriviaQA,
			fixture: "testdata/triviaqa_flashrag.jsonl",
			want: []Example{
				{Question: Question{ID: "test_0", Text: "Who was the man behind The Chipmunks?", Answers: []string{"David Seville"}, Dataset: "triviaqa"}},
				{Question: Question{ID: "test_1", Text: "Which Lloyd Webber musical premiered in the US on 10th December 1993?",
					Answers: []string{"Sunset Blvd", "Sunset Boulevard", "sunset boulevard"}, Dataset: "triviaqa"}},
			},
			wantStats: ReadStats{Records: 2},
		},
		{
			// With the corpus elsewhere, supporting titles missing from the
			// context (fw1's Analytical Engine, fw3's Atlantis) and an empty
			// context (fw2) are fine.
			name:    "hotpotqa fullwiki",
			format:  QuestionsHotpotQA,
			fixture: "testdata/hotpotqa_fullwiki.json",
			opts:    []QuestionOption{WithExternalCorpus()},
			want: []Example{
				{
					Question: Question{ID: "fw1", Text: "Who wrote the first program for the engine Babbage designed?",
						Answers: []string{"Ada Lovelace"}, Type: "bridge", GoldTitles: []string{"Analytical Engine", "Ada Lovelace"},
						GoldDocIDs:      []string{fullwikiAda.ID},
						SupportingFacts: []SupportingFact{{"Analytical Engine", 0}, {"Ada Lovelace", 1}}, Dataset: "hotpotqa"},
					Context: []Passage{fullwikiBabbage, fullwikiAda},
				},
				{Question: Question{ID: "fw2", Text: "Are Paris and Rome both capitals?", Answers: []string{"yes"}, Type: "comparison",
					GoldTitles: []string{"Paris", "Rome"}, SupportingFacts: []SupportingFact{{"Paris", 0}, {"Rome", 0}}, Dataset: "hotpotqa"}},
				{
					Question: Question{ID: "fw3", Text: "Which city sank in the legend Plato told?", Answers: []string{"Atlantis"}, Type: "bridge",
						GoldTitles: []string{"Atlantis"}, SupportingFacts: []SupportingFact{{"Atlantis", 0}}, Dataset: "hotpotqa"},
					Context: []Passage{para("Plato", "Plato was a Greek philosopher.", "Plato was a Greek philosopher.")},
				},
			},
			wantStats: ReadStats{Records: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stats := readExamples(t, tt.fixture, tt.format, tt.opts...)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("examples mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStats, stats); diff != "" {
				t.Errorf("stats mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// outcome is what a test keeps of one call of Next.
type outcome struct {
	ID     string // the question or passage id on success
	Index  int
	Line   int
	Field  string
	Reason string // the RecordError's Err
	Fatal  string // a fatal error's text, the file's path replaced by FILE
}

func outcomeOf(path, id string, err error) outcome {
	var recErr *RecordError
	switch {
	case err == nil:
		return outcome{ID: id}
	case errors.As(err, &recErr):
		return outcome{Index: recErr.Index, Line: recErr.Line, Field: recErr.Field, Reason: recErr.Err.Error()}
	}
	return outcome{Fatal: strings.ReplaceAll(err.Error(), path, "FILE")}
}

// hotpotqaBadRecords are the bad records of testdata/hotpotqa_bad.jsonl
// as the HotpotQA reader reports them.
var hotpotqaBadRecords = []outcome{
	{Index: 1, Line: 2, Reason: "invalid JSON: unexpected end of JSON input"},
	{Index: 2, Line: 4, Field: "question", Reason: "got JSON number, want string"},
	{Index: 3, Line: 5, Field: "paragraphs", Reason: "hotpotqa format: unknown field"},
	{Index: 4, Line: 6, Field: "question", Reason: "missing or empty"},
	{Index: 5, Line: 7, Field: "supporting_facts", Reason: `fact 0: title "B" is not in the context`},
	{Index: 6, Line: 8, Field: "supporting_facts", Reason: "fact 0: want [title, sentence index]: element 1: got JSON string, want integer"},
}

func TestQuestionReaderBadRecords(t *testing.T) {
	tests := []struct {
		format    QuestionFormat
		fixture   string
		want      []outcome
		wantStats ReadStats
	}{
		{
			format:    QuestionsHotpotQA,
			fixture:   "testdata/hotpotqa_bad.jsonl",
			want:      slices.Concat([]outcome{{ID: "good1"}}, hotpotqaBadRecords, []outcome{{ID: "good2"}}),
			wantStats: ReadStats{Records: 8, BadRecords: 6},
		},
		{
			format:  QuestionsHotpotQA,
			fixture: "testdata/hotpotqa_broken.json",
			want: []outcome{
				{ID: "ok1"},
				{Fatal: `FILE: record 2 (line 4): invalid JSON: invalid character '"' after object key:value pair`},
			},
			wantStats: ReadStats{Records: 1},
		},
		{
			format:  QuestionsMuSiQue,
			fixture: "testdata/musique_bad.jsonl",
			want: []outcome{
				{Index: 0, Line: 1, Field: "_id", Reason: "musique format: unknown field"},
				{Index: 1, Line: 2, Field: "paragraphs.is_supporting", Reason: "got JSON string, want boolean"},
				{Index: 2, Line: 3, Field: "answer", Reason: "missing or empty"},
			},
			wantStats: ReadStats{Records: 3, BadRecords: 3},
		},
		{
			format:  QuestionsFlashRAG,
			fixture: "testdata/flashrag_bad.jsonl",
			want: []outcome{
				{Index: 0, Line: 1, Field: "golden_answers", Reason: "got JSON string, want array"},
				{Index: 1, Line: 2, Field: "id", Reason: "missing or empty"},
				{Index: 2, Line: 3, Field: "metadata.gold_titles", Reason: "want a list of strings"},
				{Index: 3, Line: 4, Field: "contents", Reason: "flashrag format: unknown field"},
			},
			wantStats: ReadStats{Records: 4, BadRecords: 4},
		},
		{
			format:  Questions2Wiki,
			fixture: "testdata/hotpotqa.json",
			want: []outcome{
				{Index: 0, Line: 2, Field: "level", Reason: "2wiki format: unknown field"},
				{Index: 1, Line: 15, Field: "level", Reason: "2wiki format: unknown field"},
				{Index: 2, Line: 28, Field: "level", Reason: "2wiki format: unknown field"},
			},
			wantStats: ReadStats{Records: 3, BadRecords: 3},
		},
		{
			// Without a corpus of its own, a fullwiki record must find its
			// supporting titles in its context.
			format:  QuestionsHotpotQA,
			fixture: "testdata/hotpotqa_fullwiki.json",
			want: []outcome{
				{Index: 0, Line: 2, Field: "supporting_facts", Reason: `fact 0: title "Analytical Engine" is not in the context`},
				{Index: 1, Line: 14, Field: "context", Reason: "missing or empty"},
				{Index: 2, Line: 23, Field: "supporting_facts", Reason: `fact 0: title "Atlantis" is not in the context`},
			},
			wantStats: ReadStats{Records: 3, BadRecords: 3},
		},
		{
			format:  QuestionsTriviaQA,
			fixture: "testdata/triviaqa_bad.json",
			want: []outcome{
				{ID: "ok"},
				{Index: 1, Line: 3, Field: "Answer", Reason: "missing or empty"},
				{Index: 2, Line: 4, Field: "Extra", Reason: "triviaqa format: unknown field"},
				{Index: 3, Line: 5, Field: "Question", Reason: "missing or empty"},
				{Fatal: `FILE: line 6: unknown top-level member "Comment": unknown field`},
			},
			wantStats: ReadStats{Records: 4, BadRecords: 3},
		},
		{
			format:  QuestionsHotpotQA,
			fixture: "testdata/2wiki.json",
			want: []outcome{
				{Index: 0, Line: 2, Field: "evidences", Reason: "hotpotqa format: unknown field"},
				{Index: 1, Line: 16, Field: "evidences", Reason: "hotpotqa format: unknown field"},
			},
			wantStats: ReadStats{Records: 2, BadRecords: 2},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.format)+"/"+filepath.Base(tt.fixture), func(t *testing.T) {
			open := func(path string) (recordReader[Example], error) { return OpenQuestions(path, tt.format) }
			testBadRecords(t, open, tt.fixture, func(ex Example) string { return ex.Question.ID }, tt.want, tt.wantStats)
		})
	}
}

func TestOpenQuestionsErrors(t *testing.T) {
	openQuestions := func(path string, format QuestionFormat) (*QuestionReader, error) { return OpenQuestions(path, format) }
	testOpenErrors(t, openQuestions, []openErrorCase[QuestionFormat]{
		{"unknown format", "testdata/hotpotqa.json", "squad", `unknown question format "squad" (valid: hotpotqa, 2wiki, musique, flashrag, triviaqa)`},
		{"missing file", "testdata/absent.json", QuestionsHotpotQA, "testdata/absent.json: no such file or directory"},
	})
}

func TestParseQuestionFormat(t *testing.T) {
	testParseFormat(t, ParseQuestionFormat, []parseCase[QuestionFormat]{
		{"hotpotqa", QuestionsHotpotQA, ""},
		{" 2Wiki ", Questions2Wiki, ""},
		{"2wikimultihopqa", Questions2Wiki, ""},
		{"MuSiQue", QuestionsMuSiQue, ""},
		{"flashrag", QuestionsFlashRAG, ""},
		{"nq", "", `unknown question format "nq" (valid: hotpotqa, 2wiki, musique, flashrag, triviaqa)`},
	})
}

func TestJoinSentences(t *testing.T) {
	tests := []struct {
		name      string
		sentences []string
		want      string
	}{
		{"hotpotqa leading spaces", []string{"A b.", " C d.", " E."}, "A b. C d. E."},
		{"2wiki no spaces", []string{"A b.", "C d."}, "A b. C d."},
		{"trailing space", []string{"A b. ", "C d."}, "A b. C d."},
		{"empty sentences", []string{"", "A.", "", "B."}, "A. B."},
		{"newline boundary", []string{"A.\n", "B."}, "A.\nB."},
		{"non-breaking space", []string{"A.\u00a0", "B."}, "A.\u00a0B."},
		{"surrounding space", []string{"  A.", "B.  "}, "A. B."},
		{"nothing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := joinSentences(tt.sentences); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRealQuestions(t *testing.T) {
	tests := []struct {
		name            string
		rel             string
		format          QuestionFormat
		want            int
		wantUnresolved  int
		wantWithContext bool
	}{
		{"hotpotqa", "hotpotqa/hotpot_train_distractor_100.json", QuestionsHotpotQA, 100, 0, true},
		{"musique", "musique/musique_train_100.json", QuestionsMuSiQue, 100, 0, true},
		{"2wiki flashrag", "2wikimultihopqa/2wiki_dev_sample_40.jsonl", QuestionsFlashRAG, 40, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := sharedData(t, tt.rel)
			testQuestionReaderConformance(t, tt.format, path, tt.want)
			examples, stats := readExamples(t, path, tt.format)
			if stats.UnresolvedFacts != tt.wantUnresolved {
				t.Errorf("got %d unresolved supporting facts, want %d", stats.UnresolvedFacts, tt.wantUnresolved)
			}
			for _, ex := range examples {
				q := ex.Question
				if len(q.GoldTitles) == 0 {
					t.Errorf("question %s: got no gold titles, want some", q.ID)
				}
				if got := len(ex.Context) > 0; got != tt.wantWithContext {
					t.Errorf("question %s: got context %v, want %v", q.ID, got, tt.wantWithContext)
				}
				// MuSiQue has questions whose two supporting paragraphs
				// share a title, so count paragraphs, not titles.
				if tt.wantWithContext && len(q.GoldDocIDs) < 2 {
					t.Errorf("question %s: got gold doc ids %q, want at least 2 for a multi-hop question", q.ID, q.GoldDocIDs)
				}
			}
		})
	}
}

// fuzzQuestions fuzzes the question reader of a format (fuzzReader) from
// the seed files of testdata.
func fuzzQuestions(f *testing.F, format QuestionFormat, seeds ...string) {
	open := func(path string) (recordReader[Example], error) { return OpenQuestions(path, format) }
	fuzzReader(f, "in.json", open, true, fixtures(f, seeds...)...)
}

func FuzzHotpotQA(f *testing.F) {
	fuzzQuestions(f, QuestionsHotpotQA, "hotpotqa.json", "hotpotqa_bad.jsonl", "hotpotqa_broken.json")
}

func Fuzz2Wiki(f *testing.F) {
	fuzzQuestions(f, Questions2Wiki, "2wiki.json", "hotpotqa_bad.jsonl")
}

func FuzzMuSiQue(f *testing.F) {
	fuzzQuestions(f, QuestionsMuSiQue, "musique.jsonl", "musique_bad.jsonl")
}

func FuzzFlashRAGQuestions(f *testing.F) {
	fuzzQuestions(f, QuestionsFlashRAG, "flashrag.jsonl", "flashrag_bad.jsonl")
}

func FuzzTriviaQA(f *testing.F) {
	fuzzQuestions(f, QuestionsTriviaQA, "triviaqa.json", "triviaqa_bad.json", "triviaqa_flashrag.jsonl")
}

// TestTriviaQAValueOnly keeps the normalized value as the one gold answer,
// as the authors' code scores TriviaQA; only the original layout has it.
func TestTriviaQAValueOnly(t *testing.T) {
	r, err := OpenQuestions("testdata/triviaqa.json", QuestionsTriviaQA, WithTriviaQAValueOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got [][]string
	for _, ex := range readAll[Example](t, r) {
		got = append(got, ex.Question.Answers)
	}
	if want := [][]string{{"sunset boulevard"}, {"7"}}; !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if _, err := OpenQuestions("testdata/triviaqa_flashrag.jsonl", QuestionsTriviaQA, WithTriviaQAValueOnly()); err == nil {
		t.Error("FlashRAG's layout with the value only: no error")
	}
}
