package data

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"os"
	"slices"
	"sync"
)

// QuestionStore finds questions by id without holding them in memory: they
// are written to an unlinked temporary file, and memory keeps 16 bytes a
// question (a hash of the id and where the question is in the file), so
// that a stage that looks up the questions of its input (label's retrieval
// truth, a benchmark's scores) needs about the same memory for a million
// questions as for a thousand. A lookup reads one record back, or a few
// when ids' hashes collide; the last question found is kept, since a
// stage looks up the rows of one question one after another.
//
// A QuestionStore is safe for concurrent use. Close removes the file.
type QuestionStore struct {
	f    *os.File
	path string // to remove on Close, when it could not be removed at once
	seed maphash.Seed
	// index is sorted by hash, then by offset: the first of the entries
	// with an id's hash whose record holds that id is its first occurrence.
	index []storeEntry

	mu   sync.Mutex // guards what follows
	last Question
	hit  bool // last is set
	buf  []byte
}

// storeEntry is one question of a QuestionStore: the hash of its id, and
// the offset and length of its record packed into one word.
type storeEntry struct {
	hash uint64
	loc  uint64 // offset<<storeLenBits | length
}

const (
	storeLenBits = 24
	// maxStoreRecord and maxStoreOffset bound a record (16 MiB) and the
	// file (1 TiB).
	maxStoreRecord = 1<<storeLenBits - 1
	maxStoreOffset = 1<<(64-storeLenBits) - 1
)

// StoreQuestions writes the questions of qs to a new QuestionStore, in a
// temporary file in dir (os.TempDir() when dir is ""). When an id comes
// more than once, the first question with it is the one found. An error
// of qs ends it and is returned.
func StoreQuestions(qs iter.Seq2[Question, error], dir string) (*QuestionStore, error) {
	f, err := os.CreateTemp(dir, "distill-questions-*")
	if err != nil {
		return nil, fmt.Errorf("question store: %w", err)
	}
	s := &QuestionStore{f: f, seed: maphash.MakeSeed()}
	// Unlinked at once where the system allows it (the open file stays
	// readable), so that nothing is left behind even after a kill -9.
	if os.Remove(f.Name()) != nil {
		s.path = f.Name()
	}
	if err := s.fill(qs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *QuestionStore) fill(qs iter.Seq2[Question, error]) error {
	w := bufio.NewWriterSize(s.f, 1<<16)
	var (
		rec []byte
		off uint64
	)
	for q, err := range qs {
		if err != nil {
			return err
		}
		rec = appendQuestion(rec[:0], &q)
		if len(rec) > maxStoreRecord {
			return fmt.Errorf("question store: question %s takes %d bytes, more than %d", q.ID, len(rec), maxStoreRecord)
		}
		if off+uint64(len(rec)) > maxStoreOffset {
			return fmt.Errorf("question store: more than %d bytes of questions", uint64(maxStoreOffset))
		}
		if _, err := w.Write(rec); err != nil {
			return fmt.Errorf("question store: %w", err)
		}
		s.index = append(s.index, storeEntry{hash: maphash.String(s.seed, q.ID), loc: off<<storeLenBits | uint64(len(rec))})
		off += uint64(len(rec))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("question store: %w", err)
	}
	// Stable, and entries were appended in offset order: among equal
	// hashes, the first occurrence comes first.
	slices.SortStableFunc(s.index, func(a, b storeEntry) int { return cmp.Compare(a.hash, b.hash) })
	s.index = slices.Clip(s.index)
	return nil
}

// Len returns the number of questions stored, repeated ids included.
func (s *QuestionStore) Len() int { return len(s.index) }

// Question returns the question with the id, and whether there is one. An
// error means the store's file could not be read.
func (s *QuestionStore) Question(id string) (Question, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hit && s.last.ID == id {
		return s.last, true, nil
	}
	h := maphash.String(s.seed, id)
	i, _ := slices.BinarySearchFunc(s.index, h, func(e storeEntry, h uint64) int { return cmp.Compare(e.hash, h) })
	for ; i < len(s.index) && s.index[i].hash == h; i++ {
		loc := s.index[i].loc
		n, off := int(loc&maxStoreRecord), int64(loc>>storeLenBits)
		if cap(s.buf) < n {
			s.buf = make([]byte, n)
		}
		b := s.buf[:n]
		if _, err := s.f.ReadAt(b, off); err != nil {
			return Question{}, false, fmt.Errorf("question store: read question %s: %w", id, err)
		}
		if storedID(b) != id {
			continue // another id with the same hash
		}
		q, err := decodeQuestion(b)
		if err != nil {
			return Question{}, false, fmt.Errorf("question store: question %s: %w", id, err)
		}
		s.last, s.hit = q, true
		return q, true, nil
	}
	return Question{}, false, nil
}

// Close closes and removes the store's file.
func (s *QuestionStore) Close() error {
	err := s.f.Close()
	if s.path != "" {
		if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = cmp.Or(err, rerr)
		}
	}
	return err
}

// QuestionMap holds questions by id in memory; its Question method finds
// them as a QuestionStore's does, for callers that have a few questions
// at hand.
type QuestionMap map[string]Question

// Question returns the question with the id, and whether there is one; the
// error is always nil.
func (m QuestionMap) Question(id string) (Question, bool, error) {
	q, ok := m[id]
	return q, ok, nil
}

// A question's record in a QuestionStore: every field in the order of the
// struct, strings as a uvarint length and the bytes, lists as a uvarint
// that is 0 for nil and the length plus one otherwise (so that nil and
// empty lists come back as they went in), a fact's sentence as a varint.
// questionFields is the number of fields the record holds: a test checks
// it against the struct, so that a new field is not silently dropped.
const questionFields = 8

func appendQuestion(b []byte, q *Question) []byte {
	b = appendStoreString(b, q.ID)
	b = appendStoreString(b, q.Text)
	b = appendStoreStrings(b, q.Answers)
	b = appendStoreString(b, q.Type)
	b = appendStoreStrings(b, q.GoldTitles)
	b = appendStoreStrings(b, q.GoldDocIDs)
	if q.SupportingFacts == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(q.SupportingFacts))+1)
		for _, f := range q.SupportingFacts {
			b = appendStoreString(b, f.Title)
			b = binary.AppendVarint(b, int64(f.Sentence))
		}
	}
	return appendStoreString(b, q.Dataset)
}

func appendStoreString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStoreStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendStoreString(b, s)
	}
	return b
}

var errStoreRecord = errors.New("damaged record")

// storeReader reads a record; the first error sticks.
type storeReader struct {
	b   []byte
	err error
}

func (r *storeReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errStoreRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *storeReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errStoreRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *storeReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errStoreRecord
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *storeReader) string() string { return string(r.bytes()) }

// count reads a list's length: -1 for nil.
func (r *storeReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b))+1 { // every element takes a byte at least
		r.err = errStoreRecord
	}
	if r.err != nil {
		return -1
	}
	return int(n) - 1
}

func (r *storeReader) strings() []string {
	n := r.count()
	if n < 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// storedID returns the id of a record without decoding the rest.
func storedID(b []byte) string {
	r := storeReader{b: b}
	id := r.bytes()
	if r.err != nil {
		return ""
	}
	return string(id)
}

func decodeQuestion(b []byte) (Question, error) {
	r := storeReader{b: b}
	q := Question{ID: r.string(), Text: r.string(), Answers: r.strings(), Type: r.string(),
		GoldTitles: r.strings(), GoldDocIDs: r.strings()}
	if n := r.count(); n >= 0 {
		q.SupportingFacts = make([]SupportingFact, n)
		for i := range q.SupportingFacts {
			q.SupportingFacts[i] = SupportingFact{Title: r.string(), Sentence: int32(r.varint())}
		}
	}
	q.Dataset = r.string()
	if r.err == nil && len(r.b) > 0 {
		r.err = errStoreRecord
	}
	if r.err != nil {
		return Question{}, r.err
	}
	return q, nil
}
