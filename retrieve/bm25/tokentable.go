package bm25

import "hash/maphash"

// tokenTable maps analysed tokens to term numbers during a build. It does
// the job of a map[string]int32, faster for this one use: the table is
// probed tens of millions of times, and keeping short keys inside the slot
// itself saves the cache miss that following a string pointer costs.
type tokenTable struct {
	seed  maphash.Seed
	slots []tokenSlot
	long  []byte // keys longer than inlineKey, concatenated
	used  int
}

const inlineKey = 22

type tokenSlot struct {
	hash uint32 // 0 marks an empty slot
	term int32
	n    uint16 // key length
	// key holds the key when n <= inlineKey, else its offset in long as
	// a little-endian uint64 in the first 8 bytes.
	key [inlineKey]byte
}

func newTokenTable() *tokenTable {
	return &tokenTable{seed: maphash.MakeSeed(), slots: make([]tokenSlot, 1<<16)}
}

func (t *tokenTable) hashOf(tok []byte) uint32 {
	h := uint32(maphash.Bytes(t.seed, tok))
	if h == 0 {
		h = 1
	}
	return h
}

func (t *tokenTable) keyOf(s *tokenSlot) []byte {
	if s.n <= inlineKey {
		return s.key[:s.n]
	}
	off := uint64(0)
	for i := 7; i >= 0; i-- {
		off = off<<8 | uint64(s.key[i])
	}
	return t.long[off : off+uint64(s.n)]
}

// get returns the term of tok and whether tok is in the table.
func (t *tokenTable) get(tok []byte) (int32, bool) {
	h := t.hashOf(tok)
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.hash == 0 {
			return 0, false
		}
		if s.hash == h && int(s.n) == len(tok) && string(t.keyOf(s)) == string(tok) {
			return s.term, true
		}
	}
}

// put adds tok, which must not be in the table yet.
func (t *tokenTable) put(tok []byte, term int32) {
	if len(tok) > 1<<16-1 {
		tok = tok[:1<<16-1]
	}
	if 2*(t.used+1) > len(t.slots) {
		t.grow()
	}
	t.insert(tokenSlot{hash: t.hashOf(tok), term: term, n: uint16(len(tok))}, tok)
	t.used++
}

func (t *tokenTable) insert(s tokenSlot, tok []byte) {
	if len(tok) <= inlineKey {
		copy(s.key[:], tok)
	} else {
		off := uint64(len(t.long))
		t.long = append(t.long, tok...)
		for i := range 8 {
			s.key[i] = byte(off >> (8 * i))
		}
	}
	mask := len(t.slots) - 1
	i := int(s.hash) & mask
	for t.slots[i].hash != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *tokenTable) grow() {
	old := t.slots
	t.slots = make([]tokenSlot, 2*len(old))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.hash == 0 {
			continue
		}
		i := int(s.hash) & mask
		for t.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
