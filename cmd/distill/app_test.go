package main

import (
	"bufio"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

func TestHelpListsCommandsInOrder(t *testing.T) {
	r := runDistill(t, "--help")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("distill --help: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	var got []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "COMMANDS:":
			in = true
		case in && strings.HasPrefix(line, "   "):
			got = append(got, strings.TrimSuffix(strings.Fields(line)[0], ","))
		case in:
			in = false
		}
	}
	want := []string{"run", "data", "index", "search", "rollout", "merge", "label", "filter", "train", "bench", "score", "version", "help"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands in distill --help (-want +got):\n%s\n%s", diff, r.stdout)
	}
}

// TestPendingCommands: landing a command means deleting its row here.
func TestPendingCommands(t *testing.T) {
	tests := []struct {
		name  string
		issue string
	}{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := "distill " + tt.name + ": not implemented yet (tracked in issue " + tt.issue + ": "
			for _, args := range [][]string{{tt.name}, {tt.name, "--out", "x", "arg"}} {
				r := runDistill(t, args...)
				if r.code != exitUsage {
					t.Errorf("distill %v: exit %d, want %d", args, r.code, exitUsage)
				}
				if r.stdout != "" {
					t.Errorf("distill %v: stdout %q, want nothing", args, r.stdout)
				}
				if !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("distill %v: stderr %q, want one line starting %q", args, r.stderr, want)
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // stderr
	}{
		{[]string{"--log-level", "verbose", "version"}, "distill: bad --log-level \"verbose\": want debug, info, warn or error\n"},
		{[]string{"--log-format", "xml", "version"}, "distill: bad --log-format \"xml\": want text or json\n"},
		{[]string{"--no-such-flag", "version"}, "distill: flag provided but not defined: -no-such-flag (see 'distill --help')\n"},
		{[]string{"version", "--no-such-flag"}, "distill: flag provided but not defined: -no-such-flag (see 'distill version --help')\n"},
		{[]string{"rollup"}, "distill: unknown command \"rollup\"; did you mean rollout? (see 'distill --help')\n"},
		{[]string{"rolout"}, "distill: unknown command \"rolout\"; did you mean rollout? (see 'distill --help')\n"},
		{[]string{"data", "shwo"}, "distill: unknown command \"shwo\"; did you mean show? (see 'distill data --help')\n"},
		{[]string{"rollout", "--questoins", "q.parquet"}, "distill: flag provided but not defined: -questoins; did you mean --questions? (see 'distill rollout --help')\n"},
		{[]string{"rollout", "--zzz"}, "distill: flag provided but not defined: -zzz (see 'distill rollout --help')\n"},
		{[]string{"rollout", "--log-format", "json"}, "distill: --log-format is a global flag: give it before the command (distill --log-format ... rollout ...)\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runDistill(t, tt.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d", r.code, exitUsage)
			}
			if r.stderr != tt.want {
				t.Errorf("stderr %q, want %q", r.stderr, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
}

func TestBadLogLevelFromEnvironment(t *testing.T) {
	t.Setenv("DISTILL_LOG_LEVEL", "loud")
	if r := runDistill(t, "version"); r.code != exitUsage {
		t.Errorf("DISTILL_LOG_LEVEL=loud distill version: exit %d, want %d", r.code, exitUsage)
	}
}

func TestUnknownSubcommand(t *testing.T) {
	group := withConfig(&cli.Command{
		Name:        "group",
		Subcommands: []*cli.Command{{Name: "sub", Action: func(*cli.Context) error { return nil }}},
	})
	r := runCommands(t, []*cli.Command{group}, "group", "nope")
	if r.code != exitUsage || r.stderr != "distill: unknown command \"nope\" (see 'distill group --help')\n" {
		t.Errorf("distill group nope: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCommands(t, []*cli.Command{group}, "group")
	if r.code != 0 || !strings.Contains(r.stdout, "sub") {
		t.Errorf("distill group: exit %d, stdout %q; want 0 and its help", r.code, r.stdout)
	}
}

// TestCommandsAreConfigurable guards against a command constructor that
// forgot withConfig: its flags would ignore the config file silently.
func TestCommandsAreConfigurable(t *testing.T) {
	notConfigured := map[string]bool{"distill version": true} // --json only
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			name := path + " " + cmd.Name
			if !notConfigured[name] {
				for _, f := range cmd.Flags {
					if _, ok := f.(altsrc.FlagInputSourceExtension); !ok {
						t.Errorf("%s: flag %q (%T) cannot be set from --config; build the command with withConfig", name, f.Names()[0], f)
					}
				}
			}
			walk(name, cmd.Subcommands)
		}
	}
	walk("distill", newApp(nil, nil).Commands)
}

// TestEveryCommandHasExamples: --help of every command of a release shows
// how to use it.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(cmds []*cli.Command, parent []string)
	walk = func(cmds []*cli.Command, parent []string) {
		for _, cmd := range cmds {
			if cmd.Hidden || cmd.Name == "help" {
				continue
			}
			args := append(append([]string{"--quiet"}, parent...), cmd.Name, "--help")
			r := runDistill(t, args...)
			if r.code != 0 || !examplesRE.MatchString(r.stdout) {
				t.Errorf("distill %s --help: exit %d, no examples in:\n%s", strings.Join(append(parent, cmd.Name), " "), r.code, r.stdout)
			}
			walk(cmd.Subcommands, append(parent, cmd.Name))
		}
	}
	walk(commands(), nil)
}

var examplesRE = regexp.MustCompile(`Examples:\n\s+distill `)
