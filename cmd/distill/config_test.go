package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// probeValues is what the probe commands print: the values their flags got.
type probeValues struct {
	K1    float64  `json:"k1"`
	Out   string   `json:"out"`
	N     int      `json:"n"`
	Tags  []string `json:"tags"`
	Dir   string   `json:"dir"`
	Group string   `json:"group,omitempty"`
	Sub   int      `json:"sub,omitempty"`
	Level string   `json:"level"`
	Seen  float64  `json:"seen"` // k1 as the command's own Before saw it
}

// probeCommands returns a command "probe" with flags of several types and a
// command "group" with subcommands "sub" and "other", all built as real
// commands are, with withConfig. Their actions print what they got.
func probeCommands() []*cli.Command {
	print := func(c *cli.Context) error {
		v := probeValues{
			Level: c.String("log-level"),
			Group: c.String("group"),
		}
		if c.Command.Name == "probe" {
			v.K1, v.Out, v.N, v.Tags, v.Dir = c.Float64("k1"), c.String("out"), c.Int("n"), c.StringSlice("tags"), c.Path("dir")
			v.Seen = c.App.Metadata["seen"].(float64)
		}
		if c.Command.Name == "sub" {
			v.Sub = c.Int("sub")
		}
		return json.NewEncoder(c.App.Writer).Encode(v)
	}
	probe := withConfig(&cli.Command{
		Name: "probe",
		Flags: []cli.Flag{
			&cli.Float64Flag{Name: "k1", Value: 0.9, EnvVars: []string{"DISTILL_TEST_K1"}},
			&cli.StringFlag{Name: "out", Value: "runs/default"},
			&cli.IntFlag{Name: "n", Aliases: []string{"k"}, Value: 6},
			&cli.StringSliceFlag{Name: "tags"},
			&cli.PathFlag{Name: "dir"},
		},
		Before: func(c *cli.Context) error {
			c.App.Metadata["seen"] = c.Float64("k1")
			return nil
		},
		Action: print,
	})
	group := withConfig(&cli.Command{
		Name:  "group",
		Flags: []cli.Flag{&cli.StringFlag{Name: "group", Value: "g-default"}},
		Subcommands: []*cli.Command{
			{
				Name:   "sub",
				Flags:  []cli.Flag{&cli.IntFlag{Name: "sub", Value: 1}},
				Action: print,
			},
			{
				Name:   "other",
				Flags:  []cli.Flag{&cli.StringFlag{Name: "other-only"}},
				Action: print,
			},
		},
	})
	return []*cli.Command{probe, group}
}

// writeConfig writes a config file in a new directory and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// probe runs the probe commands and decodes what they printed.
func probe(t *testing.T, args ...string) probeValues {
	t.Helper()
	r := runCommands(t, probeCommands(), args...)
	if r.code != 0 {
		t.Fatalf("distill %v: exit %d, stderr %q", args, r.code, r.stderr)
	}
	var v probeValues
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("distill %v printed %q: %v", args, r.stdout, err)
	}
	return v
}

func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, "k1: 1.2\nout: runs/from-file\nlog-level: debug\n")
	tests := []struct {
		name string
		env  string // DISTILL_TEST_K1
		args []string
		want float64
	}{
		{"default", "", []string{"probe"}, 0.9},
		{"file over default", "", []string{"--config", file, "probe"}, 1.2},
		{"environment over file", "1.5", []string{"--config", file, "probe"}, 1.5},
		{"command line over file", "", []string{"--config", file, "probe", "--k1", "2"}, 2},
		{"command line over environment", "1.5", []string{"--config", file, "probe", "--k1", "2"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("DISTILL_TEST_K1", tt.env)
			}
			got := probe(t, tt.args...)
			if got.K1 != tt.want {
				t.Errorf("k1 = %v, want %v", got.K1, tt.want)
			}
			if got.Seen != tt.want {
				t.Errorf("the command's own Before saw k1 = %v, want %v", got.Seen, tt.want)
			}
		})
	}
}

func TestConfigValues(t *testing.T) {
	file := writeConfig(t, `
# a whole experiment in one file
log-level: debug
k1: 1          # an int where a float is wanted
out: 2026      # a number where a string is wanted
k: 12          # an alias
tags: [bm25, 3]
dir: models/judge
`)
	got := probe(t, "--config", file, "probe")
	want := probeValues{
		K1:    1,
		Out:   "2026",
		N:     12,
		Tags:  []string{"bm25", "3"},
		Dir:   filepath.Join(filepath.Dir(file), "models/judge"), // relative to the file
		Level: "debug",
		Seen:  1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flag values (-want +got):\n%s", diff)
	}

	t.Run("DISTILL_CONFIG", func(t *testing.T) {
		t.Setenv("DISTILL_CONFIG", file)
		if got := probe(t, "probe"); got.K1 != 1 {
			t.Errorf("k1 = %v, want 1 from the file DISTILL_CONFIG names", got.K1)
		}
	})
	t.Run("global flag from the file", func(t *testing.T) {
		file := writeConfig(t, "log-level: debug\n")
		cmd := withConfig(&cli.Command{Name: "log", Action: func(c *cli.Context) error {
			loggerFrom(c).Debug("debug is on")
			return nil
		}})
		r := runCommands(t, []*cli.Command{cmd}, "--config", file, "log")
		if r.code != 0 || !strings.Contains(r.stderr, "debug is on") {
			t.Errorf("exit %d, stderr %q; want the debug line logged", r.code, r.stderr)
		}
	})
	t.Run("empty file", func(t *testing.T) {
		file := writeConfig(t, "# nothing yet\n")
		if got := probe(t, "--config", file, "probe"); got.K1 != 0.9 {
			t.Errorf("k1 = %v, want the default 0.9", got.K1)
		}
	})
	t.Run("key without a value", func(t *testing.T) {
		file := writeConfig(t, "out:\n")
		if got := probe(t, "--config", file, "probe"); got.Out != "runs/default" {
			t.Errorf("out = %q, want the default", got.Out)
		}
	})
}

func TestConfigSubcommands(t *testing.T) {
	file := writeConfig(t, "group: from-file\nsub: 7\n")
	got := probe(t, "--config", file, "group", "sub")
	if got.Group != "from-file" || got.Sub != 7 {
		t.Errorf("group = %q, sub = %d; want from-file and 7 from the file", got.Group, got.Sub)
	}
	got = probe(t, "--config", file, "group", "--group", "cli", "sub", "--sub", "8")
	if got.Group != "cli" || got.Sub != 8 {
		t.Errorf("group = %q, sub = %d; want cli and 8 from the command line", got.Group, got.Sub)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	tests := []struct {
		name string
		yaml string // "" with path: the file does not exist
		args []string
		code int
		want string // stderr, after "distill: config <file>"
	}{
		{"unknown key", "k1: 1.2\nk-1: 1.3\n", []string{"probe"}, exitUsage, `: unknown key "k-1"`},
		{"unknown keys", "zz: 1\nk-1: 1.3\n", []string{"probe"}, exitUsage, `: unknown keys "k-1", "zz"`},
		{"key of a sibling subcommand", "sub: 2\nother-only: x\n", []string{"group", "sub"}, exitUsage, `: unknown key "other-only"`},
		{"key of another command", "sub: 2\n", []string{"probe"}, exitUsage, `: unknown key "sub"`},
		{"the config flag itself", "config: other.yaml\n", []string{"probe"}, exitUsage, `: unknown key "config"`},
		{"nested keys", "probe:\n  k1: 1.2\n", []string{"probe"}, exitUsage, `: unknown key "probe"`},
		{"wrong type", "n: six\n", []string{"probe"}, exitUsage, `: Mismatched type for flag 'n'`},
		{"malformed", "k1: [1.2\n", []string{"probe"}, exitFailure, `: yaml: line `},
		{"not a mapping", "- k1\n- 1.2\n", []string{"probe"}, exitFailure, `: want a mapping of flag names to values at the top level`},
		{"duplicate key", "k1: 1\nk1: 2\n", []string{"probe"}, exitFailure, `: line 2: mapping key "k1" already defined at line 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.yaml)
			r := runCommands(t, probeCommands(), append([]string{"--config", file}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			if want := "distill: config " + file + tt.want; !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		r := runCommands(t, probeCommands(), "--config", missing, "probe")
		want := "distill: config: open " + missing + ": no such file or directory\n"
		if r.code != exitFailure || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want %d, %q", r.code, r.stderr, exitFailure, want)
		}
	})
}
