package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// QuestionFormat names a layout of question files.
type QuestionFormat string

// The question file layouts OpenQuestions reads. Each is read from a JSON
// list or from JSONL, optionally gzip-compressed (a path ending in ".gz").
const (
	// QuestionsHotpotQA is the original HotpotQA layout: {_id, question,
	// answer, type, level, supporting_facts, context}.
	QuestionsHotpotQA QuestionFormat = "hotpotqa"
	// Questions2Wiki is the original 2WikiMultiHopQA layout: HotpotQA's
	// without level, plus evidences and entity_ids.
	Questions2Wiki QuestionFormat = "2wiki"
	// QuestionsMuSiQue is the original MuSiQue layout: {id, paragraphs,
	// question, question_decomposition, answer, answer_aliases, answerable}.
	QuestionsMuSiQue QuestionFormat = "musique"
	// QuestionsFlashRAG is FlashRAG's dataset layout: {id, question,
	// golden_answers, metadata}; it has no context paragraphs.
	QuestionsFlashRAG QuestionFormat = "flashrag"
	// QuestionsTriviaQA is TriviaQA: its original layout, one JSON object
	// {"Data": [{QuestionId, Question, Answer, EntityPages, ...}], "Version",
	// ...}, or FlashRAG's layout of it, told apart by the file's first
	// member. Neither has gold titles or context paragraphs.
	QuestionsTriviaQA QuestionFormat = "triviaqa"
)

// QuestionFormats lists the question formats in the order help texts show them.
func QuestionFormats() []QuestionFormat {
	return []QuestionFormat{QuestionsHotpotQA, Questions2Wiki, QuestionsMuSiQue, QuestionsFlashRAG, QuestionsTriviaQA}
}

// ParseQuestionFormat returns the format named s (case-insensitive;
// "2wikimultihopqa" is accepted for "2wiki").
func ParseQuestionFormat(s string) (QuestionFormat, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "2wikimultihopqa" {
		name = string(Questions2Wiki)
	}
	if f := QuestionFormat(name); slices.Contains(QuestionFormats(), f) {
		return f, nil
	}
	return "", fmt.Errorf("unknown question format %q (valid: %s)", s, joinNames(QuestionFormats()))
}

func joinNames[S ~string](names []S) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}

// DatasetTriviaQA is the Question.Dataset of TriviaQA's questions, whose
// loop and evaluation the authors' code treats apart.
const DatasetTriviaQA = "triviaqa"

// defaultDataset is the Question.Dataset a format's questions get unless
// WithDataset names another.
func (f QuestionFormat) defaultDataset() string {
	switch f {
	case QuestionsHotpotQA:
		return "hotpotqa"
	case Questions2Wiki:
		return "2wikimultihopqa"
	case QuestionsMuSiQue:
		return "musique"
	case QuestionsTriviaQA:
		return DatasetTriviaQA
	}
	return "flashrag"
}

// Example is one question with the context paragraphs its dataset gives it
// (none for FlashRAG files).
type Example struct {
	Question Question
	Context  []Passage
}

// ReadStats counts what a reader has seen so far.
type ReadStats struct {
	// Records counts every record read, good or bad.
	Records int
	// BadRecords counts the records returned as a *RecordError.
	BadRecords int
	// UnresolvedFacts counts supporting facts whose sentence index is outside
	// its paragraph. They are kept: the real HotpotQA data has a few.
	UnresolvedFacts int
}

// QuestionOption configures OpenQuestions.
type QuestionOption func(*questionConfig)

type questionConfig struct {
	dataset string
	// externalCorpus: the corpus is not the records' context paragraphs.
	externalCorpus bool
	// valueOnly: WithTriviaQAValueOnly.
	valueOnly bool
	// pages: WithTriviaQAPages.
	pages string
}

// WithDataset sets the Dataset of every question read, instead of the
// format's own name ("hotpotqa", "2wikimultihopqa", "musique", "flashrag").
// An empty name keeps the default.
func WithDataset(name string) QuestionOption {
	return func(c *questionConfig) {
		if name != "" {
			c.dataset = name
		}
	}
}

// WithExternalCorpus says that the corpus is a file of its own, not the
// records' context paragraphs, as with HotpotQA's fullwiki setting: a
// HotpotQA or 2Wiki record may then have an empty context, and supporting
// facts whose title is not in its context are kept (their titles are gold
// titles, looked up in the corpus) instead of making the record bad.
func WithExternalCorpus() QuestionOption {
	return func(c *questionConfig) { c.externalCorpus = true }
}

// WithTriviaQAValueOnly keeps a TriviaQA question's NormalizedValue as its
// only gold answer, as the authors' code scores TriviaQA, instead of the
// value and every alias. It applies to TriviaQA's original layout.
func WithTriviaQAValueOnly() QuestionOption {
	return func(c *questionConfig) { c.valueOnly = true }
}

// QuestionReader streams the questions of a dataset file.
//
// Contract, shared by every format and by CorpusReader:
//   - Next returns the next record, then io.EOF at the end and on every call
//     after it.
//   - A *RecordError reports one bad record (the file, its index and line,
//     the field at fault). It is recoverable: call Next again for the next
//     record. Any other error is fatal (I/O, a JSON list that breaks off or
//     has a syntax error, a closed reader), names the file, and is returned
//     again by every later call.
//   - Close releases the file; it is idempotent.
//   - A reader is not safe for concurrent use.
type QuestionReader struct {
	path    string
	format  QuestionFormat
	dataset string
	// external: WithExternalCorpus; original: a TriviaQA file in its
	// original layout.
	external, original bool
	valueOnly          bool
	// pages is WithTriviaQAPages's folder; pagesRead the files of the
	// pages already returned, each with the first question that names it.
	pages     string
	pagesRead map[string]bool
	stream    *recordStream
	stats     ReadStats
	// last is the position of the record Next returned last, for callers
	// in this package that report errors about it.
	last rawRecord
}

// OpenQuestions opens a question file of the given format.
func OpenQuestions(path string, format QuestionFormat, opts ...QuestionOption) (*QuestionReader, error) {
	if !slices.Contains(QuestionFormats(), format) {
		return nil, fmt.Errorf("open questions %s: unknown question format %q (valid: %s)", path, format, joinNames(QuestionFormats()))
	}
	cfg := questionConfig{dataset: format.defaultDataset()}
	for _, o := range opts {
		o(&cfg)
	}
	r := &QuestionReader{path: path, format: format, dataset: cfg.dataset, external: cfg.externalCorpus, valueOnly: cfg.valueOnly,
		pages: cfg.pages, pagesRead: map[string]bool{}}
	var err error
	if format == QuestionsTriviaQA {
		if r.original, err = isTriviaQAOriginal(path); err != nil {
			return nil, err
		}
	}
	if r.valueOnly && !r.original {
		return nil, fmt.Errorf("open questions %s: only TriviaQA's original layout has a NormalizedValue to keep as the one answer", path)
	}
	if r.pages != "" {
		if err := r.checkPages(); err != nil {
			return nil, err
		}
	}
	if r.original {
		r.stream, err = openMemberList(path, "Data", triviaTopLevel)
	} else {
		r.stream, err = openStream(path, false)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Last returns where the record that Next returned last starts: its
// 1-based line and its 0-based index in the file.
func (r *QuestionReader) Last() (line, index int) { return r.last.Line, r.last.Index }

// Next returns the next question; see QuestionReader for what its errors mean.
func (r *QuestionReader) Next() (Example, error) {
	rec, err := r.stream.next()
	var recErr *RecordError
	switch {
	case errors.As(err, &recErr):
		r.stats.Records++
		r.stats.BadRecords++
		r.last = rawRecord{Index: rec.Index, Line: rec.Line}
		return Example{}, err
	case err != nil:
		return Example{}, err
	}
	r.stats.Records++
	r.last = rawRecord{Index: rec.Index, Line: rec.Line}
	var ex Example
	switch r.format {
	case QuestionsHotpotQA:
		ex, err = r.hotpot(rec)
	case Questions2Wiki:
		ex, err = r.twoWiki(rec)
	case QuestionsMuSiQue:
		ex, err = r.musique(rec)
	case QuestionsFlashRAG:
		ex, err = r.flashrag(rec)
	case QuestionsTriviaQA:
		if r.original {
			ex, err = r.trivia(rec)
		} else {
			ex, err = r.flashrag(rec)
		}
	}
	if err != nil {
		r.stats.BadRecords++
		return Example{}, err
	}
	ex.Question.Dataset = r.dataset
	return ex, nil
}

// Stats returns the counts so far.
func (r *QuestionReader) Stats() ReadStats { return r.stats }

// Close releases the file. It is idempotent.
func (r *QuestionReader) Close() error { return r.stream.close() }

// hotpotRecord lists every field of an original HotpotQA record, so that a
// file in another layout fails with the name of a field it should not have.
type hotpotRecord struct {
	ID              string            `json:"_id"`
	Question        string            `json:"question"`
	Answer          string            `json:"answer"`
	Type            string            `json:"type"`
	Level           string            `json:"level"`
	SupportingFacts []json.RawMessage `json:"supporting_facts"`
	Context         []json.RawMessage `json:"context"`
}

// twoWikiRecord lists every field of an original 2WikiMultiHopQA record.
type twoWikiRecord struct {
	ID              string            `json:"_id"`
	Question        string            `json:"question"`
	Answer          string            `json:"answer"`
	Type            string            `json:"type"`
	SupportingFacts []json.RawMessage `json:"supporting_facts"`
	Context         []json.RawMessage `json:"context"`
	// Evidences are [subject, relation, object] triples; unused.
	Evidences [][]string `json:"evidences"`
	// EntityIDs is unused and its type varies between releases.
	EntityIDs json.RawMessage `json:"entity_ids"`
}

func (r *QuestionReader) hotpot(rec rawRecord) (Example, error) {
	var v hotpotRecord
	if err := decodeStrict(rec.Data, &v); err != nil {
		return Example{}, recordErrorFor(r.path, rec, string(r.format), err)
	}
	return r.multihop(rec, v.ID, v.Question, v.Answer, v.Type, v.SupportingFacts, v.Context)
}

func (r *QuestionReader) twoWiki(rec rawRecord) (Example, error) {
	var v twoWikiRecord
	if err := decodeStrict(rec.Data, &v); err != nil {
		return Example{}, recordErrorFor(r.path, rec, string(r.format), err)
	}
	return r.multihop(rec, v.ID, v.Question, v.Answer, v.Type, v.SupportingFacts, v.Context)
}

// multihop builds an example from the fields HotpotQA and 2Wiki share.
func (r *QuestionReader) multihop(rec rawRecord, id, question, answer, typ string, facts, context []json.RawMessage) (Example, error) {
	q := Question{ID: id, Text: strings.TrimSpace(question), Type: typ}
	switch {
	case q.ID == "":
		return Example{}, missing(r.path, rec, "_id")
	case q.Text == "":
		return Example{}, missing(r.path, rec, "question")
	}
	q.Answers = answerList(answer, nil)
	if len(q.Answers) == 0 {
		return Example{}, missing(r.path, rec, "answer")
	}
	if len(context) == 0 && !r.external {
		return Example{}, missing(r.path, rec, "context")
	}
	paragraphs := make([]Passage, len(context))
	for i, raw := range context {
		var (
			title     *string
			sentences []string
		)
		if err := decodePair(raw, &title, &sentences); err != nil {
			return Example{}, badField(r.path, rec, "context", fmt.Errorf("paragraph %d: want [title, [sentences]]: %w", i, err))
		}
		if title == nil || *title == "" {
			return Example{}, badField(r.path, rec, "context", fmt.Errorf("paragraph %d: empty title", i))
		}
		paragraphs[i] = sentencesPassage(*title, sentences)
	}
	if len(facts) == 0 {
		return Example{}, missing(r.path, rec, "supporting_facts")
	}
	unresolved := 0
	for i, raw := range facts {
		var (
			title *string
			index *int32
		)
		if err := decodePair(raw, &title, &index); err != nil || title == nil || index == nil {
			if err == nil {
				err = errors.New("null element")
			}
			return Example{}, badField(r.path, rec, "supporting_facts", fmt.Errorf("fact %d: want [title, sentence index]: %w", i, err))
		}
		found, inRange := false, false
		for _, p := range paragraphs {
			if p.Title == *title {
				found = true
				inRange = inRange || (*index >= 0 && int(*index) < len(p.Sentences))
			}
		}
		switch {
		case !found && !r.external:
			return Example{}, badField(r.path, rec, "supporting_facts", fmt.Errorf("fact %d: title %q is not in the context", i, *title))
		case found && !inRange:
			unresolved++
		}
		q.SupportingFacts = append(q.SupportingFacts, SupportingFact{Title: *title, Sentence: *index})
		if !slices.Contains(q.GoldTitles, *title) {
			q.GoldTitles = append(q.GoldTitles, *title)
		}
	}
	for _, t := range q.GoldTitles {
		for _, p := range paragraphs {
			if p.Title == t && !slices.Contains(q.GoldDocIDs, p.ID) {
				q.GoldDocIDs = append(q.GoldDocIDs, p.ID)
			}
		}
	}
	r.stats.UnresolvedFacts += unresolved
	return Example{Question: q, Context: paragraphs}, nil
}

// decodePair decodes a two-element JSON array into first and second.
func decodePair(raw json.RawMessage, first, second any) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil {
		return describeJSONError(err)
	}
	if len(pair) != 2 {
		return fmt.Errorf("got %d elements, want 2", len(pair))
	}
	for i, dst := range []any{first, second} {
		if err := json.Unmarshal(pair[i], dst); err != nil {
			return fmt.Errorf("element %d: %w", i, describeJSONError(err))
		}
	}
	return nil
}

// describeJSONError rephrases a type error in JSON's terms.
func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Errorf("got JSON %s, want %s", typeErr.Value, jsonKind(typeErr.Type))
	}
	return err
}

// decodeWithID decodes a record of the format strictly into a T and reads
// its id, a JSON string or number (flexibleID), which idOf gives and the
// record holds as field. Its errors are *RecordError.
func decodeWithID[T any](path string, rec rawRecord, format, field string, idOf func(*T) json.RawMessage) (T, string, error) {
	var v T
	if err := decodeStrict(rec.Data, &v); err != nil {
		return v, "", recordErrorFor(path, rec, format, err)
	}
	id, err := flexibleID(idOf(&v))
	if err != nil {
		return v, "", badField(path, rec, field, err)
	}
	return v, id, nil
}

// flexibleID reads an id given as a JSON string or number.
func flexibleID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.TrimSpace(s), nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", errors.New("want a string or a number")
}

// answerList returns the first answer then the aliases, trimmed, without
// empty strings or repeats.
func answerList(first string, aliases []string) []string {
	out := make([]string, 0, 1+len(aliases))
	for _, a := range append([]string{first}, aliases...) {
		a = strings.TrimSpace(a)
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// dedup returns the non-empty strings of in without repeats, in order.
func dedup(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// sentencesPassage builds a passage from a dataset's sentence split. The
// sentences are trimmed but kept, even empty ones, so that sentence indices
// of supporting facts stay valid.
func sentencesPassage(title string, sentences []string) Passage {
	text := joinSentences(sentences)
	trimmed := make([]string, len(sentences))
	for i, s := range sentences {
		trimmed[i] = strings.TrimSpace(s)
	}
	return Passage{ID: DocID(title, text), Title: title, Text: text, Sentences: trimmed}
}

// textPassage builds a passage from a title and an unsplit text.
func textPassage(title, text string) Passage {
	text = strings.TrimSpace(text)
	return Passage{ID: DocID(title, text), Title: title, Text: text}
}

// joinSentences concatenates sentences, adding a space only where neither
// side of a boundary has white space already: HotpotQA sentences carry their
// own leading space, 2Wiki ones do not.
func joinSentences(sentences []string) string {
	var b strings.Builder
	for _, s := range sentences {
		if s == "" {
			continue
		}
		if b.Len() > 0 && !endsInSpace(b.String()) && !startsWithSpace(s) {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return strings.TrimSpace(b.String())
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

func endsInSpace(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(r)
}
