package eval

import (
	"errors"
	"iter"
	"math"
	"slices"
	"strings"
)

// questionIDs numbers question ids in the order they first come. A
// benchmark's report numbers its questions with it.
type questionIDs struct {
	num map[string]int32
	ids []string
}

// errTooManyIDs: more ids than an int32 numbers.
var errTooManyIDs = errors.New("more question ids than a benchmark report holds")

func newQuestionIDs() *questionIDs { return &questionIDs{num: map[string]int32{}} }

// len returns the number of ids.
func (s *questionIDs) len() int { return len(s.ids) }

// id returns id q.
func (s *questionIDs) id(q int32) string { return s.ids[q] }

// all yields the ids in the order they came.
func (s *questionIDs) all() iter.Seq[string] { return slices.Values(s.ids) }

// compare orders ids q and r as their strings order.
func (s *questionIDs) compare(q, r int32) int { return strings.Compare(s.ids[q], s.ids[r]) }

// number returns id's number, giving it the next one when it is new
// (added).
func (s *questionIDs) number(id string) (q int32, added bool, err error) {
	if q, ok := s.num[id]; ok {
		return q, false, nil
	}
	if len(s.ids) >= math.MaxInt32 {
		return 0, false, errTooManyIDs
	}
	q = int32(len(s.ids))
	s.num[id] = q
	s.ids = append(s.ids, id)
	return q, true, nil
}
