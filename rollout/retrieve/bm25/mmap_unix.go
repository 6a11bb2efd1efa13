//go:build unix

package bm25

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only into memory. Pages are read from the page
// cache on first touch, so opening a large index costs next to nothing and
// only the parts that searches touch become resident.
//
// With random set the kernel is told that accesses jump around (the stored
// passages: a search reads a few of them), so it maps only the pages read
// instead of reading ahead around each one.
func mapFile(path string, random bool) (b []byte, unmap func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: too large to map", path)
	}
	b, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	if random {
		// Advice only: a kernel that ignores it costs memory, not correctness.
		_ = syscall.Madvise(b, syscall.MADV_RANDOM)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
