// Package idtable is the table by which the on-disk indexes (BM25, dense)
// find a passage's row from its doc id: open addressing over FNV-1a hashes
// of the ids, each slot holding row + 1 (0 is empty), in a power-of-two
// number of slots at least twice the rows, so that probes stay short. The
// hash is fixed, so a table built by one process works in another.
package idtable

import "fmt"

// Size is the number of slots of the table of n rows.
func Size(n int) int {
	size := 2
	for size < 2*n {
		size *= 2
	}
	return size
}

// hash is FNV-1a (64 bits) of id.
func hash(id []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range id {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// Build returns the table of rows 0 to n-1, idOf(row) being a row's id.
// Two rows with the same id are an error that names them (1-based, as
// passages).
func Build(n int, idOf func(row int) []byte) ([]uint32, error) {
	table := make([]uint32, Size(n))
	mask := uint64(len(table) - 1)
	for row := range n {
		id := idOf(row)
		j := hash(id) & mask
		for ; table[j] != 0; j = (j + 1) & mask {
			if o := int(table[j] - 1); string(idOf(o)) == string(id) {
				return nil, fmt.Errorf("duplicate doc id %q (passages %d and %d)", id, o+1, row+1)
			}
		}
		table[j] = uint32(row) + 1
	}
	return table, nil
}

// Lookup returns the row of id in table, or -1. idOf must give the ids
// the table was built from. It probes at most every slot, so a damaged
// table without empty slots cannot loop.
func Lookup(table []uint32, id string, idOf func(row int) []byte) int {
	if len(table) == 0 {
		return -1
	}
	mask := uint64(len(table) - 1)
	j := hash([]byte(id)) & mask
	for range table {
		e := table[j]
		if e == 0 {
			return -1
		}
		if string(idOf(int(e-1))) == id {
			return int(e - 1)
		}
		j = (j + 1) & mask
	}
	return -1
}
