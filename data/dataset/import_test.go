package dataset

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/internal/testkit"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// errorOutcomes summarises the bad records an import reports.
func errorOutcomes(errs []*data.RecordError) []badRecord {
	var out []badRecord
	for _, e := range errs {
		out = append(out, badRecordOf(e))
	}
	return out
}

func TestImport(t *testing.T) {
	tests := []struct {
		name       string
		opts       ImportOptions
		want       ImportResult // paths are filled in by the test
		wantErrors []badRecord
		wantCorpus []string // titles of the passages written, in order
	}{
		{
			name:       "hotpotqa context paragraphs",
			opts:       ImportOptions{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA},
			want:       ImportResult{Questions: 3, Passages: 5, DuplicatePassages: 3, UnresolvedFacts: 1, QuestionsWithAllGoldTitles: 3},
			wantCorpus: []string{"Ada Lovelace", "London", "Paris", "Berlin", "Rome"},
		},
		{
			name:       "hotpotqa with a separate corpus",
			opts:       ImportOptions{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA, Corpus: "../testdata/corpus_list.json", CorpusFormat: data.CorpusJSONList},
			want:       ImportResult{Questions: 3, Passages: 3, UnresolvedFacts: 1, QuestionsWithAllGoldTitles: 2, QuestionsMissingGoldTitles: 1},
			wantCorpus: []string{"London", "Paris", "Berlin"},
		},
		{
			// Fullwiki: gold titles are looked up in the corpus; fw2 has no
			// context at all and fw3's gold title is in neither.
			name:       "hotpotqa fullwiki with a corpus",
			opts:       ImportOptions{In: "../testdata/hotpotqa_fullwiki.json", Format: data.QuestionsHotpotQA, Corpus: "../testdata/hotpotqa_fullwiki_corpus.jsonl", CorpusFormat: data.CorpusBEIR},
			want:       ImportResult{Questions: 3, Passages: 4, QuestionsWithAllGoldTitles: 2, QuestionsMissingGoldTitles: 1},
			wantCorpus: []string{"Analytical Engine", "Ada Lovelace", "Paris", "Rome"},
		},
		{
			name: "flashrag without a corpus",
			opts: ImportOptions{In: "../testdata/flashrag.jsonl", Format: data.QuestionsFlashRAG, Dataset: "2wikimultihopqa"},
			want: ImportResult{Questions: 3, QuestionsMissingGoldTitles: 2},
		},
		{
			name: "triviaqa, original layout",
			opts: ImportOptions{In: "../testdata/triviaqa.json", Format: data.QuestionsTriviaQA},
			want: ImportResult{Questions: 2},
		},
		{
			name:       "skip bad questions",
			opts:       ImportOptions{In: "../testdata/hotpotqa_bad.jsonl", Format: data.QuestionsHotpotQA, SkipBad: true},
			want:       ImportResult{Questions: 2, Passages: 2, BadRecords: 6, QuestionsWithAllGoldTitles: 2},
			wantErrors: hotpotqaBadRecords,
			wantCorpus: []string{"Ada Lovelace", "Paris"},
		},
		{
			name: "repeated question id",
			opts: ImportOptions{In: "../testdata/hotpotqa_dup.jsonl", Format: data.QuestionsHotpotQA, SkipBad: true},
			want: ImportResult{Questions: 2, Passages: 2, BadRecords: 1, QuestionsWithAllGoldTitles: 2},
			wantErrors: []badRecord{
				{Index: 2, Line: 3, Field: "id", Reason: `question id "same" repeats an earlier one`},
			},
			wantCorpus: []string{"Paris", "Rome"},
		},
		{
			name: "skip bad passages",
			opts: ImportOptions{In: "../testdata/flashrag.jsonl", Format: data.QuestionsFlashRAG, Corpus: "../testdata/corpus_bad.jsonl", CorpusFormat: data.CorpusJSONL, SkipBad: true},
			want: ImportResult{Questions: 3, Passages: 2, BadRecords: 5, QuestionsMissingGoldTitles: 2},
			wantErrors: []badRecord{
				{Index: 1, Line: 2, Reason: "invalid JSON: unexpected end of JSON input"},
				{Index: 2, Line: 3, Field: "text", Reason: "missing or empty"},
				{Index: 3, Line: 4, Field: "id", Reason: "missing or empty"},
				{Index: 4, Line: 5, Field: "contents", Reason: "jsonl format: unknown field"},
				{Index: 5, Line: 6, Field: "id", Reason: "want a string or a number"},
			},
			wantCorpus: []string{"London", "Rome"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			opts := tt.opts
			opts.Out = out
			opts.Logger = testLogger(t)
			got, err := Import(t.Context(), opts)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			want := tt.want
			want.QuestionsPath = filepath.Join(out, data.QuestionsFile)
			wantFiles := []string{data.QuestionsFile}
			if tt.wantCorpus != nil {
				want.CorpusPath = filepath.Join(out, data.CorpusFile)
				wantFiles = []string{data.CorpusFile, data.QuestionsFile}
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ImportResult{}, "Errors")); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrors, errorOutcomes(got.Errors)); diff != "" {
				t.Errorf("reported errors mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantFiles, testkit.DirNames(t, out)); diff != "" {
				t.Errorf("output files mismatch (-want +got):\n%s", diff)
			}
			questions, err := data.ReadParquet[data.Question](got.QuestionsPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(questions) != tt.want.Questions {
				t.Errorf("got %d questions in %s, want %d", len(questions), got.QuestionsPath, tt.want.Questions)
			}
			if tt.wantCorpus == nil {
				return
			}
			passages, err := data.ReadParquet[data.Passage](got.CorpusPath)
			if err != nil {
				t.Fatal(err)
			}
			var titles []string
			for _, p := range passages {
				titles = append(titles, p.Title)
			}
			if diff := cmp.Diff(tt.wantCorpus, titles); diff != "" {
				t.Errorf("corpus titles mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImportWritesWhatReadersRead(t *testing.T) {
	out := t.TempDir()
	res, err := Import(t.Context(), ImportOptions{In: "../testdata/2wiki.json", Format: data.Questions2Wiki, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	wantQuestions, wantPassages, err := data.ReadWithContext("../testdata/2wiki.json", data.Questions2Wiki)
	if err != nil {
		t.Fatal(err)
	}
	questions, err := data.ReadParquet[data.Question](res.QuestionsPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantQuestions, questions, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("questions mismatch (-want +got):\n%s", diff)
	}
	passages, err := data.ReadParquet[data.Passage](res.CorpusPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantPassages, passages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("passages mismatch (-want +got):\n%s", diff)
	}
}

// TestImportIDPrefix names 2Wiki's passages as the authors' code does:
// "2wiki_" + sha1(title + "\n" + text).
func TestImportIDPrefix(t *testing.T) {
	res, err := Import(t.Context(), ImportOptions{In: "../testdata/2wiki.json", Format: data.Questions2Wiki, Out: t.TempDir(), IDPrefix: "2wiki_"})
	if err != nil {
		t.Fatal(err)
	}
	passages, err := data.ReadParquet[data.Passage](res.CorpusPath)
	if err != nil || len(passages) == 0 {
		t.Fatalf("corpus: %d passages, %v", len(passages), err)
	}
	ids := map[string]bool{}
	for _, p := range passages {
		if want := fmt.Sprintf("2wiki_%x", sha1.Sum([]byte(p.Title+"\n"+p.Text))); p.ID != want {
			t.Errorf("passage %q: id %q, want %q", p.Title, p.ID, want)
		}
		ids[p.ID] = true
	}
	// The questions' gold doc ids name the passages as the corpus does.
	questions, err := data.ReadParquet[data.Question](res.QuestionsPath)
	if err != nil {
		t.Fatal(err)
	}
	gold := 0
	for _, q := range questions {
		for _, id := range q.GoldDocIDs {
			gold++
			if !ids[id] {
				t.Errorf("question %s: gold doc id %s is not in the corpus", q.ID, id)
			}
		}
	}
	if gold == 0 {
		t.Error("no gold doc id to check")
	}
}

// TestImportTriviaQAPages builds TriviaQA's corpus from its evidence
// pages: chunks of at most 800 characters, named "triviaqa_" +
// sha1(title + "\n" + text) under the prefix, the pages' titles as gold
// titles.
func TestImportTriviaQAPages(t *testing.T) {
	res, err := Import(t.Context(), ImportOptions{In: "../testdata/triviaqa.json", Format: data.QuestionsTriviaQA, Out: t.TempDir(),
		TriviaQAPages: "../testdata/triviaqa_pages", IDPrefix: "triviaqa_", TriviaQAValueOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Questions != 2 || res.QuestionsWithAllGoldTitles != 1 || res.QuestionsMissingGoldTitles != 0 {
		t.Errorf("questions %d, with all gold titles %d, missing %d; want 2, 1, 0", res.Questions, res.QuestionsWithAllGoldTitles, res.QuestionsMissingGoldTitles)
	}
	passages, err := data.ReadParquet[data.Passage](res.CorpusPath)
	if err != nil || len(passages) < 3 {
		t.Fatalf("corpus: %d passages, %v; want the page's chunks", len(passages), err)
	}
	for _, p := range passages {
		if want := fmt.Sprintf("triviaqa_%x", sha1.Sum([]byte(p.Title+"\n"+p.Text))); p.ID != want || p.Title != "Andrew Lloyd Webber" {
			t.Errorf("passage %q titled %q, want id %q of the page Andrew Lloyd Webber", p.ID, p.Title, want)
		}
		if n := utf8.RuneCountInString(p.Text); n > data.TriviaQAChunkChars {
			t.Errorf("passage %s: %d characters", p.ID, n)
		}
	}
	for _, bad := range []ImportOptions{
		{In: "../testdata/triviaqa.json", Format: data.QuestionsTriviaQA, TriviaQAPages: "../testdata/triviaqa_pages", Corpus: "../testdata/corpus.jsonl", CorpusFormat: data.CorpusJSONL},
		{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA, TriviaQAPages: "../testdata/triviaqa_pages"},
	} {
		bad.Out = t.TempDir()
		if _, err := Import(t.Context(), bad); err == nil {
			t.Errorf("import %s with pages and corpus %q: no error", bad.In, bad.Corpus)
		}
	}
}

func TestImportFailsCleanly(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		opts       ImportOptions
		wantRecord *badRecord // the data.RecordError the import stops at, if any
		wantErr    string
	}{
		{
			name:       "bad question",
			opts:       ImportOptions{In: "../testdata/hotpotqa_bad.jsonl", Format: data.QuestionsHotpotQA},
			wantRecord: &badRecord{Index: 1, Line: 2, Reason: "invalid JSON: unexpected end of JSON input"},
		},
		{
			name:       "repeated question id",
			opts:       ImportOptions{In: "../testdata/hotpotqa_dup.jsonl", Format: data.QuestionsHotpotQA},
			wantRecord: &badRecord{Index: 2, Line: 3, Field: "id", Reason: `question id "same" repeats an earlier one`},
		},
		{
			name:       "bad passage",
			opts:       ImportOptions{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA, Corpus: "../testdata/corpus_bad.jsonl", CorpusFormat: data.CorpusJSONL},
			wantRecord: &badRecord{Index: 1, Line: 2, Reason: "invalid JSON: unexpected end of JSON input"},
		},
		{
			name:    "broken question list",
			opts:    ImportOptions{In: "../testdata/hotpotqa_broken.json", Format: data.QuestionsHotpotQA, SkipBad: true},
			wantErr: "../testdata/hotpotqa_broken.json: record 2 (line 4): invalid JSON",
		},
		{
			name:    "cancelled",
			ctx:     cancelled,
			opts:    ImportOptions{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA},
			wantErr: "context canceled",
		},
		{
			name:    "missing question file",
			opts:    ImportOptions{In: "../testdata/absent.json", Format: data.QuestionsHotpotQA},
			wantErr: "../testdata/absent.json: no such file or directory",
		},
		{
			name:    "unknown question format",
			opts:    ImportOptions{In: "../testdata/hotpotqa.json", Format: "squad"},
			wantErr: `unknown question format "squad"`,
		},
		{
			name:    "corpus without a format",
			opts:    ImportOptions{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA, Corpus: "../testdata/corpus.jsonl"},
			wantErr: `unknown corpus format ""`,
		},
		{
			name:    "no input",
			opts:    ImportOptions{Format: data.QuestionsHotpotQA},
			wantErr: "no question file given",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			out := filepath.Join(t.TempDir(), "out")
			opts := tt.opts
			opts.Out = out
			opts.Logger = testLogger(t)
			res, err := Import(ctx, opts)
			if err == nil {
				t.Fatal("Import: got no error, want one")
			}
			var recErr *data.RecordError
			switch {
			case tt.wantRecord != nil && !errors.As(err, &recErr):
				t.Errorf("got %v, want a *data.RecordError", err)
			case tt.wantRecord != nil:
				if diff := cmp.Diff(*tt.wantRecord, badRecordOf(recErr)); diff != "" {
					t.Errorf("record error mismatch (-want +got):\n%s", diff)
				}
			case !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("got %q, want it to contain %q", err, tt.wantErr)
			}
			if res.QuestionsPath != "" || res.CorpusPath != "" {
				t.Errorf("got output paths %q and %q, want none", res.QuestionsPath, res.CorpusPath)
			}
			if names, _ := filepath.Glob(filepath.Join(out, "*")); len(names) != 0 {
				t.Errorf("got files %q left behind, want none", names)
			}
			if names, _ := filepath.Glob(filepath.Join(out, ".*")); len(names) != 0 {
				t.Errorf("got temporary files %q left behind, want none", names)
			}
		})
	}
	t.Run("cancelled error is context.Canceled", func(t *testing.T) {
		_, err := Import(cancelled, ImportOptions{In: "../testdata/hotpotqa.json", Format: data.QuestionsHotpotQA, Out: t.TempDir()})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

func TestImportReportsFirstErrorsOnly(t *testing.T) {
	in := writeFile(t, "bad.jsonl", []byte(strings.Repeat("not json\n", maxReportedErrors+5)))
	// Nothing could be read: an error, with the counts.
	res, err := Import(t.Context(), ImportOptions{In: in, Format: data.QuestionsFlashRAG, Out: t.TempDir(), SkipBad: true})
	if err == nil || !strings.Contains(err.Error(), "holds no question that could be read (25 bad records skipped)") {
		t.Errorf("got %v, want an error saying no question could be read", err)
	}
	if res.BadRecords != maxReportedErrors+5 || len(res.Errors) != maxReportedErrors {
		t.Errorf("got %d bad records and %d reported, want %d and %d", res.BadRecords, len(res.Errors), maxReportedErrors+5, maxReportedErrors)
	}
}

func TestImportRealData(t *testing.T) {
	tests := []struct {
		name string
		opts ImportOptions
		want ImportResult // paths are not compared
	}{
		{
			name: "hotpotqa",
			opts: ImportOptions{In: "hotpotqa/hotpot_train_distractor_100.json", Format: data.QuestionsHotpotQA},
			want: ImportResult{Questions: 100, Passages: 994, QuestionsWithAllGoldTitles: 100},
		},
		{
			name: "musique with its corpus",
			opts: ImportOptions{In: "musique/musique_train_100.json", Format: data.QuestionsMuSiQue,
				Corpus: "musique/musique_train_corpus.json", CorpusFormat: data.CorpusJSONList},
			want: ImportResult{Questions: 100, Passages: 1890, QuestionsWithAllGoldTitles: 100},
		},
		{
			name: "musique context paragraphs",
			opts: ImportOptions{In: "musique/musique_train_100.json", Format: data.QuestionsMuSiQue},
			want: ImportResult{Questions: 100, Passages: 1890, DuplicatePassages: 110, QuestionsWithAllGoldTitles: 100},
		},
		{
			name: "2wiki flashrag with its corpus",
			opts: ImportOptions{In: "2wikimultihopqa/2wiki_dev_sample_40.jsonl", Format: data.QuestionsFlashRAG, Dataset: "2wikimultihopqa",
				Corpus: "2wikimultihopqa/2wiki_corpus.jsonl", CorpusFormat: data.CorpusJSONL},
			want: ImportResult{Questions: 40, Passages: 6119, QuestionsWithAllGoldTitles: 40},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.In = sharedData(t, opts.In)
			if opts.Corpus != "" {
				opts.Corpus = sharedData(t, opts.Corpus)
			}
			opts.Out = t.TempDir()
			opts.Logger = testLogger(t)
			got, err := Import(t.Context(), opts)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(ImportResult{}, "QuestionsPath", "CorpusPath")); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
			questions, err := data.ReadParquet[data.Question](got.QuestionsPath)
			if err != nil {
				t.Fatal(err)
			}
			passages, err := data.ReadParquet[data.Passage](got.CorpusPath)
			if err != nil {
				t.Fatal(err)
			}
			ids := make(map[string]bool)
			titles := make(map[string]bool)
			for _, p := range passages {
				ids[p.ID] = true
				titles[p.Title] = true
			}
			for _, q := range questions {
				if q.Dataset == "" {
					t.Errorf("question %s: got no dataset", q.ID)
				}
				for _, f := range q.SupportingFacts {
					if !titles[f.Title] {
						t.Errorf("question %s: supporting fact title %q is not in the corpus", q.ID, f.Title)
					}
				}
				for _, id := range q.GoldDocIDs {
					if !ids[id] {
						t.Errorf("question %s: gold doc id %s is not in the corpus", q.ID, id)
					}
				}
			}
		})
	}
}

// TestImportEmpty: a file with no questions is an error, not an empty
// dataset.
func TestImportEmpty(t *testing.T) {
	in := writeFile(t, "empty.jsonl", nil)
	out := filepath.Join(t.TempDir(), "out")
	_, err := Import(t.Context(), ImportOptions{In: in, Format: data.QuestionsHotpotQA, Out: out})
	if err == nil || !strings.Contains(err.Error(), "empty.jsonl holds no questions") {
		t.Errorf("got %v, want an error saying the file holds no questions", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed import left %s: %v", out, err)
	}
}
