package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/llm"
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
				bar := newProgress(c, tt.total, "working", "items")
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

// TestConsole: a log record written while a bar is drawn goes on a line of
// its own, the bar's line erased first and drawn again after it; once the
// bar has ended its line, records are written as they are.
func TestConsole(t *testing.T) {
	var out bytes.Buffer
	con := &console{w: &out}
	bar := con.bar()
	io.WriteString(bar, "\r| rollout 3/10")
	io.WriteString(con, "level=INFO msg=checkpoint\n")
	io.WriteString(bar, "\r| rollout 10/10")
	bar.end()
	io.WriteString(bar, "\r| rollout 10/10") // Finish draws it again
	io.WriteString(con, "level=INFO msg=done\n")
	want := "\r| rollout 3/10" + eraseLine + "level=INFO msg=checkpoint\n\r| rollout 3/10" +
		"\r| rollout 10/10\n" + "level=INFO msg=done\n"
	if got := out.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestBarWidth: on terminals of 100 to 160 columns the bar itself is at
// least 20 characters wide and the whole line fits, figures included.
func TestBarWidth(t *testing.T) {
	for _, cols := range []int{80, 100, 130, 160} {
		for _, desc := range []string{"rollout", "embedding", "searching"} {
			var out bytes.Buffer
			bar := progressbar.NewOptions64(123456, barOptions(&out, cols, desc, "questions")...)
			bar.Set(61728)
			line := out.String()[strings.LastIndexByte(out.String(), '\r')+1:]
			// The bar was drawn at once: a real rate and real times are
			// "3.2" and up to "[1h2m3s:1h2m3s]".
			line = regexp.MustCompile(`, [0-9.]+ `).ReplaceAllString(line, ", 3.2 ")
			line = strings.Replace(line, "[0s:0s]", "[1h2m3s:1h2m3s]", 1)
			width := utf8.RuneCountInString(strings.TrimRight(line, " "))
			saucer := strings.Index(line, "|")
			last := strings.LastIndex(line, "|")
			if saucer < 0 || last <= saucer {
				t.Fatalf("%d columns, %q: no bar in %q", cols, desc, line)
			}
			barChars := utf8.RuneCountInString(line[saucer+1 : last])
			if width > cols {
				t.Errorf("%d columns, %q: the line is %d wide: %q", cols, desc, width, line)
			}
			if cols >= 100 && barChars < 20 {
				t.Errorf("%d columns, %q: the bar is %d wide: %q", cols, desc, barChars, line)
			}
		}
	}
}

func TestUsageText(t *testing.T) {
	tests := []struct {
		usage      []llm.Stats
		wantTokens string
		wantCost   string
	}{
		{[]llm.Stats{{Model: "gpt-4o-mini", PromptTokens: 10, CompletionTokens: 2, CostUSD: 0.5}}, "12", "$0.5000"},
		{[]llm.Stats{{Model: "llama", PromptTokens: 10, Unpriced: 3}}, "10", "unknown (no price for llama: give one with --price MODEL=INPUT:OUTPUT)"},
		{[]llm.Stats{{Model: "gpt-4o-mini", PromptTokens: 1, CostUSD: 0.25}, {Model: "llama", PromptTokens: 1, Unpriced: 1}}, "2",
			"$0.2500 and unknown (no price for llama: give one with --price MODEL=INPUT:OUTPUT)"},
	}
	for _, tt := range tests {
		tokens, cost := usageText(tt.usage)
		if tokens != tt.wantTokens || cost != tt.wantCost {
			t.Errorf("usageText(%+v): got %q, %q; want %q, %q", tt.usage, tokens, cost, tt.wantTokens, tt.wantCost)
		}
	}
}
