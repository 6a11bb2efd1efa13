package eval

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/rollout/runner"
)

// ScoreOptions say what Score reads.
type ScoreOptions struct {
	// Questions is the questions file: a questions.parquet that distill
	// wrote (Format empty), or a dataset file in one of the layouts
	// distill data import reads (Format).
	Questions string
	Format    data.QuestionFormat
	// Predictions is a JSONL file (or JSON list) of {"id", "prediction"}.
	Predictions string
	// Scoring is how empty answers score (default ScoringReference).
	Scoring Scoring
	// PerQuestion, when set, receives every question's scores in the order
	// of the questions file; an error it returns ends Score.
	PerQuestion func(QuestionScore) error
}

// QuestionScore is one question's scores, as `distill score --per-question`
// prints them.
type QuestionScore struct {
	ID string  `json:"id"`
	EM float64 `json:"em"`
	F1 float64 `json:"f1"`
	// Missing: there was no prediction for the question; it scores 0.
	Missing bool `json:"missing,omitempty"`
}

// ScoreSummary is what Score measured. EM, F1, Precision and Recall are
// means over every question, in percent, a question without a prediction
// scoring 0 (as SQuAD's official script counts unanswered questions).
type ScoreSummary struct {
	Scoring   Scoring `json:"scoring"`
	Questions int     `json:"questions"`
	// DuplicateQuestions counts repeated question ids, skipped (the first
	// one counts).
	DuplicateQuestions int `json:"duplicate_questions"`
	Predictions        int `json:"predictions"`
	// Answered counts the questions with a prediction, Missing those
	// without one, Extra the predictions whose id is not a question's.
	Answered  int     `json:"answered"`
	Missing   int     `json:"missing"`
	Extra     int     `json:"extra"`
	EM        float64 `json:"em"`
	F1        float64 `json:"f1"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	// MissingIDs and ExtraIDs are the first ids of each kind, for display.
	MissingIDs []string `json:"missing_ids,omitempty"`
	ExtraIDs   []string `json:"extra_ids,omitempty"`
}

// maxListedIDs is how many missing or extra ids a ScoreSummary lists.
const maxListedIDs = 10

// Score scores a file of predictions against the gold answers of a
// questions file with the benchmark's metric (ScoreAnswer), so that any
// system's answers can be measured exactly as distill bench measures its
// own. A malformed prediction, a prediction id given twice or a bad
// question record is an error naming the file and the record.
func Score(ctx context.Context, opts ScoreOptions) (ScoreSummary, error) {
	sum := ScoreSummary{Scoring: opts.Scoring.orDefault()}
	if opts.Questions == "" || opts.Predictions == "" {
		return sum, fmt.Errorf("score: give a questions file and a predictions file: %w", ErrOptions)
	}
	preds, order, err := readPredictions(ctx, opts.Predictions)
	if err != nil {
		return sum, fmt.Errorf("score: %w", err)
	}
	sum.Predictions = len(order)
	seen := make(map[string]bool)
	var em, f1, prec, rec float64
	for q, err := range questionsOf(opts.Questions, opts.Format) {
		if err != nil {
			return sum, fmt.Errorf("score: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		if seen[q.ID] {
			sum.DuplicateQuestions++
			continue
		}
		seen[q.ID] = true
		sum.Questions++
		qs := QuestionScore{ID: q.ID}
		if p, ok := preds[q.ID]; ok {
			sum.Answered++
			s := ScoreAnswer(p, q.Answers, sum.Scoring)
			qs.EM, qs.F1 = s.EM, s.F1
			em, f1, prec, rec = em+s.EM, f1+s.F1, prec+s.Precision, rec+s.Recall
		} else {
			qs.Missing = true
			sum.Missing++
			if len(sum.MissingIDs) < maxListedIDs {
				sum.MissingIDs = append(sum.MissingIDs, q.ID)
			}
		}
		if opts.PerQuestion != nil {
			if err := opts.PerQuestion(qs); err != nil {
				return sum, fmt.Errorf("score: %w", err)
			}
		}
	}
	for _, id := range order {
		if !seen[id] {
			sum.Extra++
			if len(sum.ExtraIDs) < maxListedIDs {
				sum.ExtraIDs = append(sum.ExtraIDs, id)
			}
		}
	}
	sum.EM, sum.F1 = percent(em, sum.Questions), percent(f1, sum.Questions)
	sum.Precision, sum.Recall = percent(prec, sum.Questions), percent(rec, sum.Questions)
	return sum, nil
}

// readPredictions reads a predictions file into a map by id, with the ids
// in file order.
func readPredictions(ctx context.Context, path string) (map[string]string, []string, error) {
	r, err := data.OpenPredictions(path)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	preds := make(map[string]string)
	var order []string
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		p, err := r.Next()
		if err == io.EOF {
			return preds, order, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if _, dup := preds[p.ID]; dup {
			return nil, nil, fmt.Errorf("%s: prediction id %q given twice", path, p.ID)
		}
		preds[p.ID] = p.Prediction
		order = append(order, p.ID)
	}
}

// questionsOf streams the questions of a questions.parquet (format empty)
// or of a dataset file in format.
func questionsOf(path string, format data.QuestionFormat) iter.Seq2[data.Question, error] {
	if format == "" {
		return runner.QuestionsFile(path)
	}
	return func(yield func(data.Question, error) bool) {
		r, err := data.OpenQuestions(path, format)
		if err != nil {
			yield(data.Question{}, err)
			return
		}
		defer r.Close()
		for {
			ex, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(ex.Question, err) || err != nil {
				return
			}
		}
	}
}
