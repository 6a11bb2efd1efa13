package data

import (
	"encoding/json"
	"slices"
	"strings"
)

// triviaTopLevel are the members of the top-level object of an original
// TriviaQA file; the questions are the elements of Data.
var triviaTopLevel = []string{"Data", "Domain", "Split", "Version", "VerifiedEval"}

// isTriviaQAOriginal tells TriviaQA's original layout, one object whose
// first member is one of triviaTopLevel, from FlashRAG's (JSONL or a JSON
// list of records).
func isTriviaQAOriginal(path string) (bool, error) {
	s, err := openStream(path, false)
	if err != nil {
		return false, err
	}
	defer s.close()
	if s.err != nil || s.layout != layoutJSONL {
		return false, nil // empty, or a JSON list
	}
	// A JSONL record and the original object both open with '{': the
	// first member's name tells them apart.
	if _, err := s.readByte(); err != nil {
		return false, nil
	}
	if _, err := s.skipSpace(); err != nil {
		return false, nil
	}
	key, err := s.readKey()
	if err != nil {
		return false, nil // the reader reports the bad record itself
	}
	return slices.Contains(triviaTopLevel, key), nil
}

// triviaRecord lists every field of a question of an original TriviaQA
// file (rc and unfiltered, Wikipedia and web).
type triviaRecord struct {
	Answer         *triviaAnswer     `json:"Answer"`
	EntityPages    []triviaPage      `json:"EntityPages"`
	Question       string            `json:"Question"`
	QuestionID     string            `json:"QuestionId"`
	QuestionSource string            `json:"QuestionSource"`
	SearchResults  []json.RawMessage `json:"SearchResults"`
}

type triviaAnswer struct {
	Aliases                         []string `json:"Aliases"`
	HumanAnswers                    []string `json:"HumanAnswers"`
	MatchedWikiEntityName           string   `json:"MatchedWikiEntityName"`
	NormalizedAliases               []string `json:"NormalizedAliases"`
	NormalizedHumanAnswers          []string `json:"NormalizedHumanAnswers"`
	NormalizedMatchedWikiEntityName string   `json:"NormalizedMatchedWikiEntityName"`
	NormalizedValue                 string   `json:"NormalizedValue"`
	Type                            string   `json:"Type"`
	Value                           string   `json:"Value"`
}

// triviaPage is an evidence document of a question. Its fields other than
// the title are unused, and their types vary (LinkProbability and Rho are
// strings holding numbers).
type triviaPage struct {
	DocSource       json.RawMessage `json:"DocSource"`
	Filename        json.RawMessage `json:"Filename"`
	LinkProbability json.RawMessage `json:"LinkProbability"`
	Rho             json.RawMessage `json:"Rho"`
	Title           string          `json:"Title"`
}

// trivia reads a question of an original TriviaQA file. Its gold answers
// are the answer's value, then its aliases and their normalised forms (the
// forms TriviaQA's own evaluation accepts), without repeats. TriviaQA names
// no supporting documents (its evidence pages are distant supervision), so
// the question has no gold titles.
func (r *QuestionReader) trivia(rec rawRecord) (Example, error) {
	var v triviaRecord
	if err := decodeStrict(rec.Data, &v); err != nil {
		return Example{}, recordErrorFor(r.path, rec, string(r.format), err)
	}
	q := Question{ID: strings.TrimSpace(v.QuestionID), Text: strings.TrimSpace(v.Question)}
	switch {
	case q.ID == "":
		return Example{}, missing(r.path, rec, "QuestionId")
	case q.Text == "":
		return Example{}, missing(r.path, rec, "Question")
	case v.Answer == nil:
		return Example{}, missing(r.path, rec, "Answer")
	}
	a := v.Answer
	q.Answers = answerList(a.Value, slices.Concat(a.Aliases, a.NormalizedAliases, a.HumanAnswers, a.NormalizedHumanAnswers))
	if len(q.Answers) == 0 || strings.TrimSpace(a.Value) == "" {
		return Example{}, missing(r.path, rec, "Answer.Value")
	}
	if r.valueOnly {
		if strings.TrimSpace(a.NormalizedValue) == "" {
			return Example{}, missing(r.path, rec, "Answer.NormalizedValue")
		}
		q.Answers = []string{a.NormalizedValue}
	}
	return Example{Question: q}, nil
}
