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

// TestDropAndAdopt: a finished job's parts go away whole (a leftover of
// an interrupted removal is a temporary that RemoveTemps clears, other
// directories stay), and its output file becomes part 0 of a resumed
// job only when no part is there.
func TestDropAndAdopt(t *testing.T) {
	out := t.TempDir()
	parts := filepath.Join(out, "parts")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return "absent"
		}
		return string(b)
	}
	write(filepath.Join(parts, PartName(0)), "p0")
	write(filepath.Join(parts, PartName(1)), "p1")
	write(filepath.Join(out, "out.parquet"), "all")
	// A part already there: the output is not adopted.
	if ok, err := AdoptOutput(filepath.Join(out, "out.parquet"), parts); ok || err != nil {
		t.Fatalf("AdoptOutput beside parts: %v, %v", ok, err)
	}
	if err := DropParts(parts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(parts); !os.IsNotExist(err) {
		t.Fatalf("parts after DropParts: %v", err)
	}
	if err := DropParts(parts); err != nil {
		t.Fatalf("DropParts of no parts: %v", err)
	}
	// What a kill during the removal leaves, and a directory of the user's.
	write(filepath.Join(out, ".parts"+TmpMarker+"drop", PartName(3)), "p3")
	write(filepath.Join(out, ".keep"+TmpMarker+"x", "mine"), "mine")
	removed, err := PrepareParts(out, parts)
	if err != nil || len(removed) != 1 || filepath.Base(removed[0]) != ".parts"+TmpMarker+"drop" {
		t.Fatalf("PrepareParts removed %v (%v), want the interrupted removal only", removed, err)
	}
	if read(filepath.Join(out, ".keep"+TmpMarker+"x", "mine")) != "mine" {
		t.Error("PrepareParts removed a directory it did not make")
	}
	// parts exists and is empty: the output becomes part 0.
	if ok, err := AdoptOutput(filepath.Join(out, "out.parquet"), parts); !ok || err != nil {
		t.Fatalf("AdoptOutput: %v, %v", ok, err)
	}
	if got := read(filepath.Join(parts, PartName(0))); got != "all" || read(filepath.Join(out, "out.parquet")) != "absent" {
		t.Errorf("part 0 %q, output %q; want the output moved", got, read(filepath.Join(out, "out.parquet")))
	}
	// No output and no parts: nothing to adopt.
	empty := t.TempDir()
	if ok, err := AdoptOutput(filepath.Join(empty, "out.parquet"), filepath.Join(empty, "parts")); ok || err != nil {
		t.Errorf("AdoptOutput of nothing: %v, %v", ok, err)
	}
}
