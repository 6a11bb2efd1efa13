package data

import "hash/maphash"

// IDSet is a set of ids kept as 128-bit hashes (two independently seeded
// maphash values): 16 bytes an id in the map whatever the id's length,
// and no reference to the string, so that the set of every id of a large
// input costs a fraction of the ids themselves. Two distinct ids are
// taken for one with a probability of about n²/2¹²⁹ among n ids (10⁻²⁷
// at a million): never, in practice. The zero IDSet is empty and ready
// to use; it is not safe for concurrent use.
type IDSet struct {
	seeds [2]maphash.Seed
	m     map[[2]uint64]struct{}
}

func (s *IDSet) key(id string) [2]uint64 {
	if s.m == nil {
		s.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		s.m = make(map[[2]uint64]struct{})
	}
	return [2]uint64{maphash.String(s.seeds[0], id), maphash.String(s.seeds[1], id)}
}

// Add adds id and reports whether it was not in the set yet.
func (s *IDSet) Add(id string) bool {
	k := s.key(id)
	if _, ok := s.m[k]; ok {
		return false
	}
	s.m[k] = struct{}{}
	return true
}

// Has reports whether id is in the set.
func (s *IDSet) Has(id string) bool {
	_, ok := s.m[s.key(id)]
	return ok
}

// Len returns the number of ids in the set.
func (s *IDSet) Len() int { return len(s.m) }
