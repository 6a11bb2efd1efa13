package data

import (
	"path/filepath"
	"testing"
)

func TestRelativePath(t *testing.T) {
	for _, tt := range []struct{ dir, path, want string }{
		{"/runs/judge", "/runs/sft/train.parquet", "../sft/train.parquet"},
		{"/runs/out", "/runs/out/questions.parquet", "questions.parquet"},
		{"runs/out", "runs/q.parquet", "../q.parquet"},
		{"/runs/out", "", ""},
	} {
		if got := RelativePath(tt.dir, tt.path); got != filepath.FromSlash(tt.want) {
			t.Errorf("RelativePath(%q, %q) = %q, want %q", tt.dir, tt.path, got, tt.want)
		}
	}
}
