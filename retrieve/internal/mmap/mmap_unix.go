//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
)

// Map maps path read-only. Pages come from the page cache on first
// touch, so opening costs next to nothing whatever the index size. With
// random set the kernel is told not to read ahead (stored passages: a
// search reads a few of them). Files that are scanned whole get no advice:
// MADV_SEQUENTIAL would let the kernel drop pages right after a scan reads
// them, and the next query reads them again. unmap releases the mapping.
func Map(path string, random bool) (b []byte, unmap func() error, err error) {
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
	// Advice only: a kernel that ignores it costs speed, not correctness.
	if random {
		_ = syscall.Madvise(b, syscall.MADV_RANDOM)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
