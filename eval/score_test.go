package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/data/dataset"
)

// writeFile writes content to name in a new temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const scoreQuestions = `{"id": "a", "question": "Capital of France?", "golden_answers": ["Paris"]}
{"id": "b", "question": "Who wrote it?", "golden_answers": ["John Smith Jr", "Smith"]}
{"id": "c", "question": "Empty gold?", "golden_answers": ["the"]}
{"id": 4, "question": "Unanswered?", "golden_answers": ["yes"]}
{"id": "a", "question": "Capital of France, again?", "golden_answers": ["Lyon"]}
`

func TestScore(t *testing.T) {
	questions := writeFile(t, "q.jsonl", scoreQuestions)
	predictions := writeFile(t, "p.jsonl", `{"id": "a", "prediction": "Paris."}
{"id": "b", "prediction": "John Smith"}
{"id": "c", "prediction": "a"}
{"id": "zz", "prediction": "extra"}
`)
	tests := []struct {
		scoring Scoring
		want    ScoreSummary
		per     []QuestionScore
	}{
		{ScoringReference, ScoreSummary{Scoring: ScoringReference, Questions: 4, DuplicateQuestions: 1, Predictions: 4,
			Answered: 3, Missing: 1, Extra: 1,
			EM: 100 * 2.0 / 4, F1: 100 * (1 + 0.8 + 1) / 4, Precision: 100 * 3.0 / 4, Recall: 100 * (1 + 2.0/3 + 1) / 4,
			MissingIDs: []string{"4"}, ExtraIDs: []string{"zz"}},
			[]QuestionScore{{ID: "a", EM: 1, F1: 1}, {ID: "b", F1: 0.8}, {ID: "c", EM: 1, F1: 1}, {ID: "4", Missing: true}}},
		{ScoringSQuAD, ScoreSummary{Scoring: ScoringSQuAD, Questions: 4, DuplicateQuestions: 1, Predictions: 4,
			Answered: 3, Missing: 1, Extra: 1,
			EM: 100 * 2.0 / 4, F1: 100 * (1 + 0.8) / 4, Precision: 100 * 2.0 / 4, Recall: 100 * (1 + 2.0/3) / 4,
			MissingIDs: []string{"4"}, ExtraIDs: []string{"zz"}},
			[]QuestionScore{{ID: "a", EM: 1, F1: 1}, {ID: "b", F1: 0.8}, {ID: "c", EM: 1}, {ID: "4", Missing: true}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.scoring), func(t *testing.T) {
			var per []QuestionScore
			got, err := Score(context.Background(), ScoreOptions{Questions: questions, Format: data.QuestionsFlashRAG,
				Predictions: predictions, Scoring: tt.scoring,
				PerQuestion: func(q QuestionScore) error { per = append(per, q); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("summary mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.per, per); diff != "" {
				t.Errorf("per-question scores mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScoreParquetQuestions(t *testing.T) {
	dir := t.TempDir()
	qs := []data.Question{{ID: "x", Text: "?", Answers: []string{"blue"}}, {ID: "y", Text: "?", Answers: []string{"red"}}}
	if err := dataset.Write(context.Background(), dir, qs, []data.Passage{{ID: "p", Title: "t", Text: "x"}}, false); err != nil {
		t.Fatal(err)
	}
	predictions := writeFile(t, "p.jsonl", `{"id": "x", "prediction": "Blue"}`+"\n")
	got, err := Score(context.Background(), ScoreOptions{Questions: filepath.Join(dir, data.QuestionsFile), Predictions: predictions})
	if err != nil {
		t.Fatal(err)
	}
	if got.Questions != 2 || got.EM != 50 || got.Missing != 1 || got.Scoring != ScoringReference {
		t.Errorf("got %+v, want 2 questions, EM 50, 1 missing, reference scoring", got)
	}
}

func TestScoreErrors(t *testing.T) {
	questions := writeFile(t, "q.jsonl", scoreQuestions)
	tests := []struct {
		name, predictions string
		want              string
	}{
		{"repeated id", `{"id": "a", "prediction": "x"}` + "\n" + `{"id": "a", "prediction": "y"}`, `prediction id "a" given twice`},
		{"unknown field", `{"id": "a", "answer": "x"}`, `field "answer"`},
		{"null prediction", `{"id": "a", "prediction": null}`, `field "prediction"`},
		{"no id", `{"prediction": "x"}`, `field "id"`},
		{"not JSON", `{"id": "a", "prediction": }`, "invalid JSON"},
		{"object id", `{"id": {}, "prediction": "x"}`, `field "id"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Score(context.Background(), ScoreOptions{Questions: questions, Format: data.QuestionsFlashRAG,
				Predictions: writeFile(t, "p.jsonl", tt.predictions)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := Score(context.Background(), ScoreOptions{Questions: questions}); !errors.Is(err, ErrOptions) {
		t.Errorf("no predictions file: got %v, want ErrOptions", err)
	}
	_, err := Score(context.Background(), ScoreOptions{Questions: writeFile(t, "bad.jsonl", `{"id": "a"}`),
		Format: data.QuestionsFlashRAG, Predictions: writeFile(t, "p.jsonl", "")})
	if err == nil || !strings.Contains(err.Error(), "question") {
		t.Errorf("bad question record: got %v, want an error naming the field", err)
	}
}
