package eval

import (
	"bytes"
	"errors"
	"hash/maphash"
	"iter"
	"math"
)

// questionIDs numbers question ids in the order they first come. It holds
// each id once, its bytes in one arena, and finds an id's number through an
// open-addressing table of numbers: about 4 bytes a question besides the
// ids themselves, where a map of strings takes some 40 and an allocation
// an id. A benchmark's report numbers its questions with it.
type questionIDs struct {
	seed  maphash.Seed
	arena []byte
	// ends[q] is where id q ends in arena (it starts where q-1 ends).
	ends []uint32
	// slots hold q+1 of the id that hashes there, 0 when empty; their
	// number is a power of two, at least twice the ids'.
	slots []int32
}

// errTooManyIDs: the ids' bytes or number passed what questionIDs counts.
var errTooManyIDs = errors.New("more question ids than a benchmark report holds")

func newQuestionIDs() *questionIDs {
	return &questionIDs{seed: maphash.MakeSeed(), slots: make([]int32, 64)}
}

// len returns the number of ids.
func (s *questionIDs) len() int { return len(s.ends) }

// bytes returns id q's bytes, which the caller must not change.
func (s *questionIDs) bytes(q int32) []byte {
	start := uint32(0)
	if q > 0 {
		start = s.ends[q-1]
	}
	return s.arena[start:s.ends[q]]
}

// id returns id q.
func (s *questionIDs) id(q int32) string { return string(s.bytes(q)) }

// all yields the ids in the order they came.
func (s *questionIDs) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		for q := range int32(len(s.ends)) {
			if !yield(s.id(q)) {
				return
			}
		}
	}
}

// compare orders ids q and r as their strings order.
func (s *questionIDs) compare(q, r int32) int { return bytes.Compare(s.bytes(q), s.bytes(r)) }

// number returns id's number, giving it the next one when it is new
// (added).
func (s *questionIDs) number(id string) (q int32, added bool, err error) {
	mask := uint64(len(s.slots) - 1)
	i := maphash.String(s.seed, id) & mask
	for ; s.slots[i] != 0; i = (i + 1) & mask {
		if q := s.slots[i] - 1; string(s.bytes(q)) == id { // no allocation: a comparison
			return q, false, nil
		}
	}
	if len(s.arena)+len(id) > math.MaxUint32 || len(s.ends) >= math.MaxInt32/2 {
		return 0, false, errTooManyIDs
	}
	q = int32(len(s.ends))
	s.arena = append(s.arena, id...)
	s.ends = append(s.ends, uint32(len(s.arena)))
	s.slots[i] = q + 1
	if 2*len(s.ends) > len(s.slots) {
		s.grow()
	}
	return q, true, nil
}

// grow doubles the slots and places every id again.
func (s *questionIDs) grow() {
	s.slots = make([]int32, 2*len(s.slots))
	mask := uint64(len(s.slots) - 1)
	for q := range int32(len(s.ends)) {
		i := maphash.Bytes(s.seed, s.bytes(q)) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = q + 1
	}
}
