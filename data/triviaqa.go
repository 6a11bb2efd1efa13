package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TriviaQAChunkChars is the most characters (Unicode code points) of a
// passage cut from a TriviaQA evidence page (WithTriviaQAPages), the size
// of the chunks of the authors' TriviaQA corpus.
const TriviaQAChunkChars = 800

// WithTriviaQAPages makes a TriviaQA question (original layout) bring its
// Wikipedia evidence pages as its context: each page of its EntityPages is
// read from dir (the rc release's evidence/wikipedia folder) and cut into
// passages of at most TriviaQAChunkChars (chunkPage), titled with the
// page's title, and the pages' titles become the question's gold titles
// (a question that names no page has none).
// A page is returned with the first question that names it only, so that
// a corpus built from the contexts holds it once. A page whose file is
// missing makes the question a bad record.
func WithTriviaQAPages(dir string) QuestionOption {
	return func(c *questionConfig) { c.pages = dir }
}

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
	ex := Example{Question: q}
	if r.pages != "" {
		if err := r.triviaPages(v.EntityPages, &ex); err != nil {
			return Example{}, badField(r.path, rec, "EntityPages", err)
		}
	}
	return ex, nil
}

// checkPages refuses a pages folder that OpenQuestions cannot use.
func (r *QuestionReader) checkPages() error {
	if !r.original {
		return fmt.Errorf("open questions %s: evidence pages are read for TriviaQA's original layout only (its EntityPages name them)", r.path)
	}
	info, err := os.Stat(r.pages)
	switch {
	case err != nil:
		return fmt.Errorf("open questions %s: evidence pages: %w", r.path, err)
	case !info.IsDir():
		return fmt.Errorf("open questions %s: evidence pages: %s is not a folder", r.path, r.pages)
	}
	return nil
}

// triviaPages reads the evidence pages of a question into ex: the pages'
// titles as its gold titles, and the chunks of the pages no earlier
// question returned as its context.
func (r *QuestionReader) triviaPages(pages []triviaPage, ex *Example) error {
	var read []string
	for i, p := range pages {
		var name string
		if err := json.Unmarshal(p.Filename, &name); err != nil || name == "" {
			return fmt.Errorf("page %d: Filename is not a file name: %s", i, p.Filename)
		}
		title := strings.TrimSpace(p.Title)
		switch {
		case title == "":
			return fmt.Errorf("page %d (%s): empty Title", i, name)
		case !filepath.IsLocal(name):
			return fmt.Errorf("page %d: file %q is not inside the pages folder", i, name)
		}
		if !slices.Contains(ex.Question.GoldTitles, title) {
			ex.Question.GoldTitles = append(ex.Question.GoldTitles, title)
		}
		if r.pagesRead[name] || slices.Contains(read, name) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(r.pages, name))
		if err != nil {
			return fmt.Errorf("page %d: %w", i, err)
		}
		if !utf8.Valid(text) {
			return fmt.Errorf("page %d: %s is not UTF-8 text", i, name)
		}
		for _, chunk := range chunkPage(string(text), TriviaQAChunkChars) {
			ex.Context = append(ex.Context, Passage{ID: DocID(title, chunk), Title: title, Text: chunk})
		}
		read = append(read, name)
	}
	// Only a question that is returned marks its pages read.
	for _, name := range read {
		r.pagesRead[name] = true
	}
	return nil
}

// chunkPage cuts a page's text into passages of at most limit code points.
// Its lines (the page's paragraphs), trimmed and without the empty ones,
// are packed in order into a passage, joined by a line break, while they
// fit; a line longer than limit is cut first, at the last white space
// within the limit (within a word longer than limit, at the limit).
func chunkPage(text string, limit int) []string {
	var (
		chunks []string
		cur    strings.Builder
		n      int // code points in cur
	)
	add := func(piece string) {
		m := utf8.RuneCountInString(piece)
		if n > 0 && n+1+m > limit {
			chunks = append(chunks, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte('\n')
			n++
		}
		cur.WriteString(piece)
		n += m
	}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		for line != "" {
			piece, rest := cutLine(line, limit)
			add(piece)
			line = rest
		}
	}
	if n > 0 {
		chunks = append(chunks, cur.String())
	}
	return chunks
}

// cutLine returns the first piece of a trimmed line, at most limit code
// points, and the rest, trimmed.
func cutLine(line string, limit int) (piece, rest string) {
	end, count := 0, 0 // end: the byte offset after limit code points
	for end < len(line) && count < limit {
		_, size := utf8.DecodeRuneInString(line[end:])
		end += size
		count++
	}
	if end == len(line) {
		return line, ""
	}
	next, _ := utf8.DecodeRuneInString(line[end:])
	if !unicode.IsSpace(next) {
		if space := strings.LastIndexFunc(line[:end], unicode.IsSpace); space > 0 {
			end = space
		}
	}
	return strings.TrimSpace(line[:end]), strings.TrimSpace(line[end:])
}
