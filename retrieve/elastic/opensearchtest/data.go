package opensearchtest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/distill-rag/distill/data"
)

// Dataset is a shared slice: its questions and its corpus.
type Dataset struct {
	Name      string
	Questions []data.Question
	Corpus    []data.Passage
}

// SharedFile returns the path of rel under ../shared/data beside the
// checkout, and skips t when it is absent.
func SharedFile(t testing.TB, rel string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data not available (%v); it is kept outside the repository at ../shared/data", err)
	}
	return p
}

// Datasets reads the HotpotQA and 2WikiMultiHopQA slices kept in
// ../shared/data beside the checkout (see its README): HotpotQA's
// questions with the corpus of their context paragraphs, 2Wiki's
// questions with its corpus file. It skips t when they are absent.
func Datasets(t testing.TB) []Dataset {
	t.Helper()
	path := func(rel string) string { return SharedFile(t, rel) }
	hotpotPath := path("hotpotqa/hotpot_train_distractor_100.json")
	wikiQuestions := path("2wikimultihopqa/2wiki_dev_sample_40.jsonl")
	wikiCorpus := path("2wikimultihopqa/2wiki_corpus.jsonl")

	hq, hc, err := data.ReadWithContext(hotpotPath, data.QuestionsHotpotQA)
	if err != nil {
		t.Fatal(err)
	}
	wq, _, err := data.ReadWithContext(wikiQuestions, data.QuestionsFlashRAG, data.WithDataset("2wikimultihopqa"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := data.OpenCorpus(wikiCorpus, data.CorpusJSONL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var wc []data.Passage
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		wc = append(wc, p)
	}
	return []Dataset{{"hotpotqa", hq, hc}, {"2wikimultihopqa", wq, wc}}
}
