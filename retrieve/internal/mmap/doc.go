// Package mmap maps the files of the on-disk indexes (BM25, dense)
// read-only into memory, with a plain read where mapping is not available.
package mmap
