package data

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DetectCorpusFormat guesses the layout of a corpus file from its name and
// first record: a ".parquet" file is distill's own corpus; otherwise the
// first JSON value is inspected (a JSON object mapping titles to lists is
// title-sentences; records with "_id" are BEIR, with "contents" FlashRAG,
// with "id" JSONL, with only title and text a json-list). It reads at most
// the first record.
func DetectCorpusFormat(path string) (CorpusFormat, error) {
	if strings.HasSuffix(path, ".parquet") {
		return CorpusParquet, nil
	}
	f, br, err := openInput(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// Skip a byte-order mark and white space to the first JSON value.
	head, _ := br.Peek(3)
	if bytes.HasPrefix(head, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	dec := json.NewDecoder(br)
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("%s: cannot tell the corpus format: %w", path, err)
	}
	inList := false
	if d, ok := tok.(json.Delim); ok && d == '[' {
		inList = true
		if tok, err = dec.Token(); err != nil {
			return "", fmt.Errorf("%s: cannot tell the corpus format: %w", path, err)
		}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return "", fmt.Errorf("%s: cannot tell the corpus format: the file does not start with JSON objects (use --corpus-format)", path)
	}
	// Read the first object's keys and the kind of its first value.
	keys := map[string]bool{}
	firstIsList := false
	for i := 0; dec.More(); i++ {
		k, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("%s: cannot tell the corpus format: %w", path, err)
		}
		key, _ := k.(string)
		keys[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf("%s: cannot tell the corpus format: %w", path, err)
		}
		if i == 0 {
			firstIsList = len(v) > 0 && v[0] == '['
		}
	}
	switch {
	case !inList && firstIsList:
		return CorpusTitleSentences, nil
	case keys["_id"]:
		return CorpusBEIR, nil
	case keys["contents"]:
		return CorpusFlashRAG, nil
	case keys["id"]:
		return CorpusJSONL, nil
	case keys["title"] && keys["text"]:
		return CorpusJSONList, nil
	}
	return "", fmt.Errorf("%s: cannot tell the corpus format from the first record's fields (use --corpus-format)", path)
}

// PassageSlice is an in-memory corpus: Next yields its passages in order,
// then io.EOF.
type PassageSlice struct {
	ps []Passage
	i  int
}

// NewPassageSlice returns a source over ps (not copied).
func NewPassageSlice(ps []Passage) *PassageSlice { return &PassageSlice{ps: ps} }

// Next returns the next passage or io.EOF.
func (s *PassageSlice) Next() (Passage, error) {
	if s.i >= len(s.ps) {
		return Passage{}, io.EOF
	}
	s.i++
	return s.ps[s.i-1], nil
}

// SkipBad reads a corpus, passing over bad records: each *RecordError goes
// to OnBad (when set) and is counted in Skipped, and Next moves on to the
// next record. Fatal errors are returned as they are.
type SkipBad struct {
	Source interface {
		Next() (Passage, error)
	}
	OnBad   func(*RecordError)
	Skipped int
}

// Next returns the next good passage, or a fatal error, or io.EOF.
func (s *SkipBad) Next() (Passage, error) {
	for {
		p, err := s.Source.Next()
		var re *RecordError
		if !errors.As(err, &re) {
			return p, err
		}
		s.Skipped++
		if s.OnBad != nil {
			s.OnBad(re)
		}
	}
}

// ReadWithContext reads a whole question file into memory with the corpus
// of its context paragraphs (each unique paragraph once, in order of first
// appearance). It is for small files (slices for tests, examples and quick
// experiments); Import streams large ones to parquet instead. The first bad
// record is an error.
func ReadWithContext(path string, format QuestionFormat, opts ...QuestionOption) ([]Question, []Passage, error) {
	r, err := OpenQuestions(path, format, opts...)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var qs []Question
	var ps []Passage
	seen := make(map[string]bool)
	for {
		ex, err := r.Next()
		if errors.Is(err, io.EOF) {
			return qs, ps, nil
		}
		if err != nil {
			return nil, nil, err
		}
		qs = append(qs, ex.Question)
		for _, p := range ex.Context {
			if !seen[p.ID] {
				seen[p.ID] = true
				ps = append(ps, p)
			}
		}
	}
}
