package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/distill-rag/distill/retrieve/internal/benchfile"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/internal/synth"
)

// The files every engine reads, in the corpus's directory.
const (
	corpusFile  = "corpus.jsonl" // {"id", "title", "text"} a line
	queriesFile = "queries.tsv"  // qid<TAB>text a line
)

// Seeds of the generated corpora and their queries (as retrieve/bm25/scale).
const (
	corpusSeed = 1
	querySeed  = 2
	synthWords = 100
)

// corpus is one corpus and its queries, written on demand.
type corpus struct {
	name  string
	write func(dir string) (passages, queries int, err error)
}

func synthCorpora(sizes []int, queries int) []corpus {
	var out []corpus
	for _, n := range sizes {
		out = append(out, corpus{
			name: fmt.Sprintf("synth-%s", count(n)),
			write: func(dir string) (int, int, error) {
				texts := make([]string, queries)
				w := synth.NewWords(querySeed)
				for i := range texts {
					texts[i] = w.Query()
				}
				return writeFiles(dir, synth.NewCorpus(corpusSeed, n, synth.Options{Words: synthWords}), texts)
			},
		})
	}
	return out
}

// count writes 1000000 as 1M, 300000 as 300k.
func count(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// sharedCorpora are the shared datasets' slices, each searched with its
// questions; none when dir is absent.
func sharedCorpora(dir string) ([]corpus, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		logf("no shared datasets in %s: only generated corpora", dir)
		return nil, nil
	}
	path := func(rel string) string { return filepath.Join(dir, rel) }
	hotpot := corpus{name: "hotpotqa", write: func(out string) (int, int, error) {
		qs, ps, err := data.ReadWithContext(path("hotpotqa/hotpot_train_distractor_100.json"), data.QuestionsHotpotQA)
		if err != nil {
			return 0, 0, err
		}
		return writeFiles(out, data.NewPassageSlice(ps), questionTexts(qs))
	}}
	musique := corpus{name: "musique", write: func(out string) (int, int, error) {
		qs, _, err := data.ReadWithContext(path("musique/musique_train_100.json"), data.QuestionsMuSiQue, data.WithExternalCorpus())
		if err != nil {
			return 0, 0, err
		}
		return writeCorpusFile(out, path("musique/musique_train_corpus.json"), questionTexts(qs))
	}}
	wiki := corpus{name: "2wikimultihopqa", write: func(out string) (int, int, error) {
		var texts []string
		for _, f := range []string{"2wiki_dev_sample_40.jsonl", "2wiki_dev_400.jsonl"} {
			qs, _, err := data.ReadWithContext(path("2wikimultihopqa/"+f), data.QuestionsFlashRAG,
				data.WithDataset("2wikimultihopqa"), data.WithExternalCorpus())
			if err != nil {
				return 0, 0, err
			}
			texts = append(texts, questionTexts(qs)...)
		}
		return writeCorpusFile(out, path("2wikimultihopqa/2wiki_corpus.jsonl"), texts)
	}}
	return []corpus{hotpot, musique, wiki}, nil
}

func questionTexts(qs []data.Question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Text
	}
	return out
}

func writeCorpusFile(dir, path string, queries []string) (int, int, error) {
	format, err := data.DetectCorpusFormat(path)
	if err != nil {
		return 0, 0, err
	}
	r, err := data.OpenCorpus(path, format)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	return writeFiles(dir, r, queries)
}

// writeFiles writes the passages of src as corpusFile and the queries as
// queriesFile in dir.
func writeFiles(dir string, src interface {
	Next() (data.Passage, error)
}, queries []string) (int, int, error) {
	n, err := benchfile.WriteCorpus(filepath.Join(dir, corpusFile), src.Next)
	if err != nil {
		return 0, 0, err
	}
	err = benchfile.Write(filepath.Join(dir, queriesFile), func(w *bufio.Writer) error {
		for i, q := range queries {
			fmt.Fprintf(w, "q%d\t%s\n", i, strings.Join(strings.Fields(q), " "))
		}
		return nil
	})
	return n, len(queries), err
}
