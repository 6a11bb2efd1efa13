package data

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard selects the questions of one of N machines (for rollouts,
// labelling and benchmarks): shard I of N (0 <= I < N)
// holds the questions whose id hashes to I modulo N. The hash is FNV-1a of
// the id, so the split depends on nothing but the ids: every shard of a run
// sees the same partition, whatever order or machine. The zero Shard selects
// every question.
type Shard struct {
	I, N int
}

// ErrShard is the cause of errors about a bad shard.
var ErrShard = errors.New("bad shard")

// ParseShard parses "i/n", as --shard takes it; "" is the zero Shard.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, as 0/4: %w", s, ErrShard)
	}
	sh := Shard{I: i, N: n}
	if err := sh.Check(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}

// Check reports whether the shard is valid (the zero Shard is).
func (s Shard) Check() error {
	if s == (Shard{}) {
		return nil
	}
	if s.N < 1 || s.I < 0 || s.I >= s.N {
		return fmt.Errorf("shard %d/%d: want n >= 1 and 0 <= i < n: %w", s.I, s.N, ErrShard)
	}
	return nil
}

// String returns "i/n", or "" for the zero Shard.
func (s Shard) String() string {
	if s == (Shard{}) {
		return ""
	}
	return strconv.Itoa(s.I) + "/" + strconv.Itoa(s.N)
}

// Holds reports whether the question with this id belongs to the shard.
func (s Shard) Holds(id string) bool {
	if s.N <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()%uint64(s.N) == uint64(s.I)
}
