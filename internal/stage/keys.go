package stage

import "hash/maphash"

// keyMap maps units' keys to values, keeping each key as two independently
// seeded 64-bit hashes of it (maphash.Comparable) rather than the key: 16
// bytes a key whatever the length of its strings, and no reference to the
// rows it was read from. The maps of every unit of an output (the units a
// resumed run finds done, the units a merge has seen) grow with the
// questions, and a key holding its question id cost several times that.
// Two distinct keys are taken for one with a probability of about
// n²/2¹²⁹ among n keys (10⁻²⁷ at a million): never, in practice. It is
// distill's one hashed set. The zero keyMap is empty and ready to use;
// sets must not run concurrently with anything else.
type keyMap[K comparable, V any] struct {
	seeds [2]maphash.Seed
	m     map[[2]uint64]V
}

func (m *keyMap[K, V]) hash(k K) [2]uint64 {
	return [2]uint64{maphash.Comparable(m.seeds[0], k), maphash.Comparable(m.seeds[1], k)}
}

// get returns the value of k, and whether there is one. It does not
// change the map: gets may run concurrently once the sets are done.
func (m *keyMap[K, V]) get(k K) (V, bool) {
	if m.m == nil {
		var zero V
		return zero, false
	}
	v, ok := m.m[m.hash(k)]
	return v, ok
}

// set sets the value of k.
func (m *keyMap[K, V]) set(k K, v V) {
	if m.m == nil {
		m.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		m.m = make(map[[2]uint64]V)
	}
	m.m[m.hash(k)] = v
}

// len returns the number of keys.
func (m *keyMap[K, V]) len() int { return len(m.m) }
