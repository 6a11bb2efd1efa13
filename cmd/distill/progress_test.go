package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestProgressOffWithoutTerminal: with stderr a buffer or a file, or with
// --quiet, a bar draws nothing anywhere, and stdout stays clean.
func TestProgressOffWithoutTerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	tests := []struct {
		name   string
		stderr interface {
			Write([]byte) (int, error)
		}
		args  []string
		total int64
	}{
		{"buffer", &bytes.Buffer{}, nil, 100},
		{"buffer, unknown total", &bytes.Buffer{}, nil, -1},
		{"file", file, nil, 100},
		{"quiet", &bytes.Buffer{}, []string{"--quiet"}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &cli.Command{Name: "work", Action: func(c *cli.Context) error {
				bar := newProgress(c, tt.total, "working")
				for range 100 {
					if err := bar.Add(1); err != nil {
						return err
					}
				}
				return bar.Finish()
			}}
			var stdout bytes.Buffer
			app := buildApp(&stdout, tt.stderr, []*cli.Command{cmd})
			if err := app.Run(append(append([]string{"distill"}, tt.args...), "work")); err != nil {
				t.Fatal(err)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			if b, ok := tt.stderr.(*bytes.Buffer); ok && b.Len() != 0 {
				t.Errorf("stderr %q, want nothing", b.String())
			}
		})
	}
	if info, err := file.Stat(); err != nil || info.Size() != 0 {
		t.Errorf("stderr file: %v, %v bytes; want it empty", err, info.Size())
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Errorf("a regular file or a buffer counts as a terminal")
	}
}
