package data

import (
	"errors"
	"fmt"
	"testing"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want Shard
		err  bool
	}{
		{"", Shard{}, false},
		{"0/1", Shard{0, 1}, false},
		{"0/4", Shard{0, 4}, false},
		{"3/4", Shard{3, 4}, false},
		{" 2 / 3 ", Shard{2, 3}, false},
		{"4/4", Shard{}, true},
		{"-1/4", Shard{}, true},
		{"1/0", Shard{}, true},
		{"1", Shard{}, true},
		{"a/b", Shard{}, true},
		{"1/2/3", Shard{}, true},
	}
	for _, tt := range tests {
		got, err := ParseShard(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrShard) {
			t.Errorf("ParseShard(%q): error %v is not ErrShard", tt.in, err)
		}
		if err == nil && got.String() != "" {
			if back, _ := ParseShard(got.String()); back != got {
				t.Errorf("ParseShard(%q).String() = %q does not parse back", tt.in, got.String())
			}
		}
	}
}

// TestShardsPartition: for every n, the shards 0/n .. n-1/n hold every id
// exactly once, and split them about evenly.
func TestShardsPartition(t *testing.T) {
	var ids []string
	for i := range 5000 {
		ids = append(ids, fmt.Sprintf("5a8b%04d-%d", i, i*7919%1000))
	}
	for n := 1; n <= 8; n++ {
		held := make(map[string]int)
		for i := range n {
			s := Shard{I: i, N: n}
			count := 0
			for _, id := range ids {
				if s.Holds(id) {
					held[id]++
					count++
				}
			}
			if want := len(ids) / n; count < want*8/10 || count > want*12/10 {
				t.Errorf("shard %v holds %d of %d ids, want about %d", s, count, len(ids), want)
			}
		}
		for _, id := range ids {
			if held[id] != 1 {
				t.Fatalf("n = %d: id %s is held by %d shards, want 1", n, id, held[id])
			}
		}
	}
	if !(Shard{}).Holds("anything") {
		t.Error("the zero Shard does not hold every id")
	}
}
