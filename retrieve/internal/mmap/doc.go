// Package mmap maps the files of the on-disk indexes (BM25, dense)
// read-only into memory, with a plain read where mapping is not available.
// A Set holds an open index's mappings: searches use them while Close
// waits, so that no search reads a mapping that is gone.
package mmap
