package benchfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAndDirSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a": "12345", "sub/b": "678"} {
		err := Write(filepath.Join(dir, name), func(w *bufio.Writer) error {
			_, err := w.WriteString(text)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := DirSize(dir)
	if err != nil || got != 8 {
		t.Errorf("DirSize = %d, %v; want 8, nil", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub/b")); string(b) != "678" {
		t.Errorf("sub/b holds %q, want %q", b, "678")
	}
}

func TestWriteReturnsFillError(t *testing.T) {
	want := errors.New("fill failed")
	err := Write(filepath.Join(t.TempDir(), "f"), func(*bufio.Writer) error { return want })
	if !errors.Is(err, want) {
		t.Errorf("Write = %v, want %v", err, want)
	}
	if _, err := DirSize(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("DirSize of a missing directory: no error")
	}
}
