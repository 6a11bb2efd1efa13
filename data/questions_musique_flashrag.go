package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// musiqueRecord lists every field of an original MuSiQue record.
type musiqueRecord struct {
	ID                    string             `json:"id"`
	Paragraphs            []musiqueParagraph `json:"paragraphs"`
	Question              string             `json:"question"`
	QuestionDecomposition []musiqueStep      `json:"question_decomposition"`
	Answer                string             `json:"answer"`
	AnswerAliases         []string           `json:"answer_aliases"`
	Answerable            *bool              `json:"answerable"`
}

type musiqueParagraph struct {
	Idx           int    `json:"idx"`
	Title         string `json:"title"`
	ParagraphText string `json:"paragraph_text"`
	IsSupporting  bool   `json:"is_supporting"`
}

type musiqueStep struct {
	ID                  int    `json:"id"`
	Question            string `json:"question"`
	Answer              string `json:"answer"`
	ParagraphSupportIdx *int   `json:"paragraph_support_idx"`
}

func (r *QuestionReader) musique(rec rawRecord) (Example, error) {
	var v musiqueRecord
	if err := decodeStrict(rec.Data, &v); err != nil {
		return Example{}, recordErrorFor(r.path, rec, string(r.format), err)
	}
	q := Question{ID: v.ID, Text: strings.TrimSpace(v.Question)}
	switch {
	case q.ID == "":
		return Example{}, missing(r.path, rec, "id")
	case q.Text == "":
		return Example{}, missing(r.path, rec, "question")
	case len(v.Paragraphs) == 0:
		return Example{}, missing(r.path, rec, "paragraphs")
	}
	q.Answers = answerList(v.Answer, v.AnswerAliases)
	if len(q.Answers) == 0 || strings.TrimSpace(v.Answer) == "" {
		return Example{}, missing(r.path, rec, "answer")
	}
	if prefix, _, ok := strings.Cut(q.ID, "__"); ok {
		q.Type = prefix
	}
	paragraphs := make([]Passage, len(v.Paragraphs))
	for i, p := range v.Paragraphs {
		if p.Title == "" {
			return Example{}, badField(r.path, rec, "paragraphs", fmt.Errorf("paragraph %d: empty title", i))
		}
		paragraphs[i] = textPassage(p.Title, p.ParagraphText)
	}
	// Supporting paragraphs in the order the decomposition uses them, then
	// any the decomposition does not name, in paragraph order.
	var gold []int
	for _, step := range v.QuestionDecomposition {
		if step.ParagraphSupportIdx == nil {
			continue
		}
		for i, p := range v.Paragraphs {
			if p.Idx == *step.ParagraphSupportIdx && p.IsSupporting && !slices.Contains(gold, i) {
				gold = append(gold, i)
			}
		}
	}
	for i, p := range v.Paragraphs {
		if p.IsSupporting && !slices.Contains(gold, i) {
			gold = append(gold, i)
		}
	}
	for _, i := range gold {
		p := paragraphs[i]
		if !slices.Contains(q.GoldTitles, p.Title) {
			q.GoldTitles = append(q.GoldTitles, p.Title)
		}
		if !slices.Contains(q.GoldDocIDs, p.ID) {
			q.GoldDocIDs = append(q.GoldDocIDs, p.ID)
		}
	}
	return Example{Question: q, Context: paragraphs}, nil
}

// flashragRecord lists the fields of a FlashRAG dataset record. Metadata is
// free-form.
type flashragRecord struct {
	ID            json.RawMessage `json:"id"`
	Question      string          `json:"question"`
	GoldenAnswers []string        `json:"golden_answers"`
	Metadata      json.RawMessage `json:"metadata"`
	// Choices only appear in multiple-choice datasets; unused.
	Choices json.RawMessage `json:"choices"`
}

// flashragFacts is the supporting_facts layout FlashRAG keeps in the metadata
// of its HotpotQA and 2Wiki files.
type flashragFacts struct {
	Title  []string `json:"title"`
	SentID []int32  `json:"sent_id"`
}

func (r *QuestionReader) flashrag(rec rawRecord) (Example, error) {
	v, id, err := decodeWithID(r.path, rec, string(r.format), "id", func(v *flashragRecord) json.RawMessage { return v.ID })
	if err != nil {
		return Example{}, err
	}
	q := Question{ID: id, Text: strings.TrimSpace(v.Question)}
	switch {
	case q.ID == "":
		return Example{}, missing(r.path, rec, "id")
	case q.Text == "":
		return Example{}, missing(r.path, rec, "question")
	}
	if len(v.GoldenAnswers) > 0 {
		q.Answers = answerList(v.GoldenAnswers[0], v.GoldenAnswers[1:])
	}
	if len(q.Answers) == 0 {
		return Example{}, missing(r.path, rec, "golden_answers")
	}
	var meta map[string]json.RawMessage
	if len(v.Metadata) > 0 {
		if err := json.Unmarshal(v.Metadata, &meta); err != nil {
			return Example{}, badField(r.path, rec, "metadata", errors.New("want a JSON object"))
		}
	}
	if raw, ok := meta["gold_titles"]; ok {
		var titles []string
		if err := json.Unmarshal(raw, &titles); err != nil {
			return Example{}, badField(r.path, rec, "metadata.gold_titles", errors.New("want a list of strings"))
		}
		q.GoldTitles = dedup(titles)
	}
	// Other metadata is free-form: take what is recognisable, ignore the rest.
	var typ string
	if json.Unmarshal(meta["type"], &typ) == nil {
		q.Type = typ
	}
	var facts flashragFacts
	if json.Unmarshal(meta["supporting_facts"], &facts) == nil && len(facts.Title) == len(facts.SentID) {
		for i, t := range facts.Title {
			q.SupportingFacts = append(q.SupportingFacts, SupportingFact{Title: t, Sentence: facts.SentID[i]})
		}
		if _, ok := meta["gold_titles"]; !ok {
			q.GoldTitles = dedup(facts.Title)
		}
	}
	return Example{Question: q}, nil
}
