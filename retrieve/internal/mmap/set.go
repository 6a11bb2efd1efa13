package mmap

import (
	"errors"
	"sync"
)

// Set is the mappings of an open index. Searches use them between Use and
// Done; Close waits for those, then unmaps every mapping, once.
type Set struct {
	mu     sync.RWMutex
	closed bool
	unmaps []func() error
}

// Map maps path (see Map) and keeps the mapping in s.
func (s *Set) Map(path string, random bool) ([]byte, error) {
	b, unmap, err := Map(path, random)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.unmaps = append(s.unmaps, unmap)
	s.mu.Unlock()
	return b, nil
}

// Use holds the mappings for reading, and reports false when s is
// closed. Call Done after each Use that reported true.
func (s *Set) Use() bool {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return false
	}
	return true
}

// Done ends a Use.
func (s *Set) Done() { s.mu.RUnlock() }

// Close waits for the uses in progress and unmaps every mapping. It is
// idempotent.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, unmap := range s.unmaps {
		errs = append(errs, unmap())
	}
	return errors.Join(errs...)
}
