package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestNumberedList(t *testing.T) {
	f := Numbered{Prefix: "chunk-", Suffix: ".f32"}
	dir := t.TempDir()
	for _, name := range []string{
		f.Name(10), f.Name(2), "chunk-x.f32", "chunk--0001.f32", "chunk-00005.f32.bak",
		PartName(1), "." + f.Name(4) + TmpMarker + "1",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, f.Name(3)), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
		want []Part
	}{
		{"family only, by number", dir, []Part{{2, filepath.Join(dir, "chunk-00002.f32")}, {10, filepath.Join(dir, "chunk-00010.f32")}}},
		{"absent directory", filepath.Join(dir, "absent"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.List(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
