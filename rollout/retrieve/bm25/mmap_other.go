//go:build !unix

package bm25

import "os"

// mapFile reads path into memory where memory mapping is not available.
func mapFile(path string, _ bool) (b []byte, unmap func() error, err error) {
	b, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
