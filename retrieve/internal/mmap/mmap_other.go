//go:build !unix

package mmap

import "os"

// Map reads path into memory where mapping is not available.
func Map(path string, _ bool) (b []byte, unmap func() error, err error) {
	b, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
