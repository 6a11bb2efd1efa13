package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/rollout/runner"
)

// TestPresetValuesAreFlags holds every value --preset reference sets to a
// flag of its command, of the flag's type, for every value of the flags
// the preset depends on.
func TestPresetValuesAreFlags(t *testing.T) {
	byName := map[string]*cli.Command{}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name)
			byName[name] = c
			walk(name, c.Subcommands)
		}
	}
	walk("", commands())
	commandsWithPreset := []string{"data import", "index", "rollout", "label", "filter", "train", "bench", "score"}
	for _, name := range commandsWithPreset {
		cmd := byName[name]
		if cmd == nil {
			t.Fatalf("no command %q", name)
		}
		flags := map[string]cli.Flag{}
		for _, f := range cmd.Flags {
			flags[f.Names()[0]] = f
		}
		if flags["preset"] == nil {
			t.Errorf("%s has no --preset", name)
		}
		for _, other := range []map[string]string{{"format": "2wiki", "kind": "dense", "backend": "local"}, {"format": "triviaqa", "kind": "bm25", "backend": "slurm"}, {"format": "hotpotqa", "backend": "builtin"}, {"format": "flashrag", "name": "2wikimultihopqa"}} {
			for flag, v := range referenceValues(name, func(n string) string { return other[n] }) {
				f := flags[flag]
				ok := false
				switch f.(type) {
				case *altsrc.StringFlag:
					_, ok = v.(string)
				case *altsrc.BoolFlag:
					_, ok = v.(bool)
				case *altsrc.IntFlag:
					_, ok = v.(int)
				case *altsrc.Float64Flag:
					_, ok = v.(float64)
				}
				if !ok {
					t.Errorf("%s: the preset sets --%s to %v (%T), which is not a value of a flag of the command (%T)", name, flag, v, v, f)
				}
			}
		}
	}
}

// TestPresetReference runs rollout and index under --preset reference, from
// the command line, the environment and a config file, and checks that a
// flag given by hand wins over the preset.
func TestPresetReference(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	loop := func(t *testing.T, out string) runner.Loop {
		t.Helper()
		rep, err := runner.ReadReport(out)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Config.Loop
	}
	for _, tt := range []struct {
		name       string
		args       []string
		env        string
		policy     string
		queryRule  string
		configFile string
	}{
		{name: "flag", args: []string{"--preset", "reference"}, policy: "fixed", queryRule: "reference"},
		{name: "environment", env: "reference", policy: "fixed", queryRule: "reference"},
		{name: "config file", configFile: "preset: reference\n", policy: "fixed", queryRule: "reference"},
		{name: "a flag given by hand wins", args: []string{"--preset", "reference", "--policy", "early-stop"}, policy: "early-stop", queryRule: "reference"},
		{name: "distill", args: []string{"--preset", "distill"}, policy: "early-stop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := strings.ReplaceAll(tt.name, " ", "-")
			var global []string
			if tt.configFile != "" {
				if err := os.WriteFile(out+".yaml", []byte(tt.configFile), 0o644); err != nil {
					t.Fatal(err)
				}
				global = []string{"--config", out + ".yaml"}
			}
			if tt.env != "" {
				t.Setenv("DISTILL_PRESET", tt.env)
			}
			// pysbd, the preset's splitter, is not installed for make test:
			// distill's is set by hand (the "pysbd" case below).
			args := append(append(global, "--quiet", "rollout", "--limit", "3", "--out", out, "--splitter", "distill"), tt.args...)
			if r := runDistill(t, args...); r.code != 0 {
				t.Fatalf("rollout: exit %d, stderr %q", r.code, r.stderr)
			}
			if got := loop(t, out); got.Policy != tt.policy || got.QueryRule != tt.queryRule {
				t.Errorf("run.json: policy %q, query rule %q; want %q, %q", got.Policy, got.QueryRule, tt.policy, tt.queryRule)
			}
		})
	}

	t.Run("pysbd", func(t *testing.T) {
		// The preset asks for pysbd; without it the run stops at once and
		// says how to give it.
		t.Setenv("DISTILL_PYSBD_PYTHON", filepath.Join(t.TempDir(), "no-python"))
		r := runDistill(t, "--quiet", "rollout", "--preset", "reference", "--limit", "1", "--out", "pysbd")
		if r.code == 0 || !strings.Contains(r.stderr, "--splitter pysbd") || !strings.Contains(r.stderr, "--pysbd-python") {
			t.Errorf("exit %d, stderr %q; want a failure naming --splitter pysbd and --pysbd-python", r.code, r.stderr)
		}
	})

	t.Run("index", func(t *testing.T) {
		if r := runDistill(t, "--quiet", "index", "--preset", "reference", "--dataset", "sample", "--out", "idx"); r.code != 0 {
			t.Fatalf("index: exit %d, stderr %q", r.code, r.stderr)
		}
		x, err := bm25.Open(filepath.Join("idx"))
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if m := x.Meta(); m.Stemmer != "porter" || m.Norms != "lucene" {
			t.Errorf("meta.json: stemmer %q, norms %q; want porter, lucene", m.Stemmer, m.Norms)
		}
	})

	t.Run("2wiki ids", func(t *testing.T) {
		for _, format := range []string{"2wiki", "flashrag --name 2wikimultihopqa"} {
			if got := referenceValues("data import", func(n string) string {
				f, name, _ := strings.Cut(format, " --name ")
				return map[string]string{"format": f, "name": name}[n]
			}); got["id-prefix"] != "2wiki_" {
				t.Errorf("data import --format %s: the preset sets %v, want --id-prefix 2wiki_", format, got)
			}
		}
	})

	t.Run("triviaqa corpus", func(t *testing.T) {
		testdata, err := filepath.Abs(filepath.Join(cwd, "..", "..", "data", "testdata"))
		if err != nil {
			t.Fatal(err)
		}
		if r := runDistill(t, "--quiet", "data", "import", "--preset", "reference", "--format", "triviaqa", "--in", filepath.Join(testdata, "triviaqa.json"),
			"--triviaqa-pages", filepath.Join(testdata, "triviaqa_pages"), "--out", "trivia"); r.code != 0 {
			t.Fatalf("data import: exit %d, stderr %q", r.code, r.stderr)
		}
		passages, err := data.ReadParquet[data.Passage](filepath.Join("trivia", data.CorpusFile))
		if err != nil || len(passages) == 0 {
			t.Fatalf("corpus: %d passages, %v", len(passages), err)
		}
		for _, p := range passages {
			if !strings.HasPrefix(p.ID, "triviaqa_") {
				t.Errorf("passage id %q, want the prefix triviaqa_", p.ID)
			}
		}
		questions, err := data.ReadParquet[data.Question](filepath.Join("trivia", data.QuestionsFile))
		if err != nil || len(questions) == 0 || len(questions[0].Answers) != 1 {
			t.Errorf("questions %+v, %v; want the normalized value as the one answer", questions, err)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		r := runDistill(t, "--quiet", "rollout", "--preset", "paper", "--limit", "1", "--out", "never")
		if r.code != 2 || !strings.Contains(r.stderr, `unknown --preset "paper" (want distill or reference)`) {
			t.Errorf("exit %d, stderr %q; want 2 and the presets", r.code, r.stderr)
		}
	})
}
