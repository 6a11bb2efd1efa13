package data

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func storeTestQuestions() []Question {
	return []Question{
		{ID: "q1", Text: "Who?", Answers: []string{"A", "a"}, Type: "bridge", GoldTitles: []string{"T1", "T2"},
			GoldDocIDs: []string{"d1"}, SupportingFacts: []SupportingFact{{Title: "T1", Sentence: 0}, {Title: "T2", Sentence: -3}}, Dataset: "hotpotqa"},
		{ID: "q2", Text: "What?", Answers: []string{}, GoldTitles: []string{}, GoldDocIDs: []string{}, SupportingFacts: []SupportingFact{}},
		{ID: "q3"},
		{ID: "", Text: "no id", Answers: []string{""}},
		{ID: "q1", Text: "a repeated id", Answers: []string{"B"}},
		{ID: "ünï", Text: "long " + string(make([]byte, 70000)), Answers: []string{"x"}},
	}
}

func seq(qs []Question, err error) func(func(Question, error) bool) {
	return func(yield func(Question, error) bool) {
		for _, q := range qs {
			if !yield(q, nil) {
				return
			}
		}
		if err != nil {
			yield(Question{}, err)
		}
	}
}

func TestQuestionStore(t *testing.T) {
	qs := storeTestQuestions()
	s, err := StoreQuestions(seq(qs, nil), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Len(), len(qs); got != want {
		t.Errorf("Len: got %d, want %d", got, want)
	}
	tests := []struct {
		id   string
		want Question
		ok   bool
	}{
		{"q1", qs[0], true}, // the first of a repeated id
		{"q2", qs[1], true},
		{"q3", qs[2], true},
		{"", qs[3], true},
		{"ünï", qs[5], true},
		{"q4", Question{}, false},
		{"q", Question{}, false},
	}
	// Twice, in another order the second time: found again, and through
	// the last-question cache.
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {6, 0, 0, 5, 1, 1, 2, 3, 4}} {
		for _, i := range order {
			tt := tests[i]
			got, ok, err := s.Question(tt.id)
			if err != nil {
				t.Fatalf("Question(%q): %v", tt.id, err)
			}
			if ok != tt.ok {
				t.Errorf("Question(%q): got ok %v, want %v", tt.id, ok, tt.ok)
			}
			// Exact: nil and empty lists as they went in.
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Question(%q): (-want +got)\n%s", tt.id, cmp.Diff(tt.want, got))
			}
		}
	}
}

func TestQuestionStoreLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	s, err := StoreQuestions(seq(storeTestQuestions(), nil), dir)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("while open: got %d files in the directory, want 0 (unlinked)", len(ents))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("after Close: got %d files in the directory, want 0", len(ents))
	}
}

func TestQuestionStoreErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := StoreQuestions(seq(storeTestQuestions(), boom), t.TempDir()); !errors.Is(err, boom) {
		t.Errorf("an error of the questions: got %v, want %v", err, boom)
	}
	if _, err := StoreQuestions(seq(nil, nil), "/nonexistent/dir"); err == nil {
		t.Error("a directory that is not there: got no error")
	}
	// Empty: nothing found.
	s, err := StoreQuestions(seq(nil, nil), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.Question("q1"); ok || err != nil {
		t.Errorf("empty store: got ok %v, err %v, want false, nil", ok, err)
	}
}

// Many ids, concurrently: every one found, as it went in.
func TestQuestionStoreMany(t *testing.T) {
	qs := make([]Question, 5000)
	for i := range qs {
		qs[i] = Question{ID: fmt.Sprintf("id-%d", i), Text: fmt.Sprintf("question %d", i), Answers: []string{fmt.Sprint(i)}}
	}
	s, err := StoreQuestions(seq(qs, nil), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(qs); i += 4 {
				got, ok, err := s.Question(qs[i].ID)
				if err != nil || !ok || !reflect.DeepEqual(got, qs[i]) {
					t.Errorf("Question(%q): got %+v, %v, %v, want %+v", qs[i].ID, got, ok, err, qs[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// The record holds every field of Question: a new field must be added to
// appendQuestion and decodeQuestion, and then to questionFields.
func TestQuestionStoreRecordHoldsEveryField(t *testing.T) {
	if got := reflect.TypeFor[Question]().NumField(); got != questionFields {
		t.Errorf("Question has %d fields, the store's record %d: add the new ones to appendQuestion and decodeQuestion", got, questionFields)
	}
}

func TestQuestionStoreDamagedRecord(t *testing.T) {
	q := storeTestQuestions()[0]
	rec := appendQuestion(nil, &q)
	for n := range len(rec) {
		if _, err := decodeQuestion(rec[:n]); err == nil {
			t.Fatalf("record cut at %d of %d bytes: got no error", n, len(rec))
		}
	}
	if _, err := decodeQuestion(append(rec, 0)); err == nil {
		t.Error("record with a byte more: got no error")
	}
}

func FuzzQuestionStoreRecord(f *testing.F) {
	for _, q := range storeTestQuestions()[:4] {
		f.Add(appendQuestion(nil, &q))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := decodeQuestion(b)
		if err != nil {
			return
		}
		again, err := decodeQuestion(appendQuestion(nil, &q))
		if err != nil {
			t.Fatalf("encoded again: %v", err)
		}
		if !reflect.DeepEqual(again, q) {
			t.Errorf("encoded and decoded again: (-want +got)\n%s", cmp.Diff(q, again))
		}
	})
}

func TestQuestionMap(t *testing.T) {
	m := QuestionMap{"a": {ID: "a", Text: "x"}}
	if q, ok, err := m.Question("a"); !ok || err != nil || q.Text != "x" {
		t.Errorf(`Question("a"): got %+v, %v, %v`, q, ok, err)
	}
	if _, ok, _ := m.Question("b"); ok {
		t.Error(`Question("b"): got ok, want not found`)
	}
}
