package main

// --preset picks a set of flag values at once. "distill" (the default)
// keeps distill's own choices; "reference" switches every behaviour in
// which the authors' released code differs, and that distill can
// reproduce, to theirs (docs/reference.md lists them, with the ones not
// reproduced yet). A preset's value for a flag is used only where the
// command line, the environment and the config file leave the flag unset,
// so any one behaviour can still be set on its own.

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune/local"
	"github.com/distill-rag/distill/finetune/slurm"
	"github.com/distill-rag/distill/retrieve/dense"
)

// The presets.
const (
	presetDistill   = "distill"
	presetReference = "reference"
)

// presetNames lists the values of --preset.
var presetNames = []string{presetDistill, presetReference}

func presetFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "preset",
		Value:   presetDistill,
		Usage:   "distill (distill's choices) or reference (the authors' released code in every behaviour distill reproduces: docs/reference.md); a flag given by hand wins over its preset value",
		EnvVars: []string{"DISTILL_PRESET"},
	}
}

// referenceValues returns the flags that --preset reference sets for a
// command, by its full name ("data import"); some depend on the value of
// another of its flags (the dataset's format, the kind of index), which
// flag returns.
func referenceValues(command string, flag func(name string) string) map[string]any {
	switch command {
	case "data import":
		// By layout, or by the dataset's name for FlashRAG's files.
		f, _ := data.ParseQuestionFormat(flag("format"))
		switch name := flag("name"); {
		case f == data.Questions2Wiki || name == "2wikimultihopqa" || name == "2wiki":
			return map[string]any{"id-prefix": "2wiki_"}
		case f == data.QuestionsTriviaQA || name == data.DatasetTriviaQA:
			if flag("triviaqa-pages") != "" { // the corpus is the pages' chunks
				return map[string]any{"triviaqa-value-only": true, "id-prefix": "triviaqa_"}
			}
			return map[string]any{"triviaqa-value-only": true}
		}
	case "index":
		if flag("kind") == dense.Name {
			return map[string]any{"passage-format": "title-context"}
		}
		return map[string]any{"stemmer": "porter", "lucene-norms": true}
	case "rollout":
		return map[string]any{"policy": "fixed", "query-rule": "reference", "judge-no-repair": true, "evidence-layout": "reference", "reader-input": "reference", "splitter": "pysbd"}
	case "bench":
		return map[string]any{"query-rule": "reference", "judge-no-repair": true, "evidence-layout": "reference", "reader-input": "reference", "title-match": "reference", "splitter": "pysbd"}
	case "label":
		return map[string]any{"skip-empty": true, "samples": 1, "temperature": 0.0, "max-tokens": 512, "max-attempts": 3}
	case "filter":
		return map[string]any{"truth": "reference", "val-split": "row"}
	case "train":
		if b := flag("backend"); b == local.Name || b == slurm.Name { // the trainers that take --loss
			return map[string]any{"loss": "full", "target-json": "spaced"}
		}
		return map[string]any{"target-json": "spaced"}
	}
	return nil
}

// commandPath names c's command with the commands above it, below the
// app ("data import"); urfave/cli's FullName gives the last name only.
func commandPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" && x.Command.Name != c.App.Name {
			names = append(names, x.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

// applyPreset sets the flags of c's command that its --preset names and
// that nothing else set; a command without --preset is left alone.
func applyPreset(c *cli.Context) error {
	if !slices.ContainsFunc(c.Command.Flags, func(f cli.Flag) bool { return f.Names()[0] == "preset" }) {
		return nil
	}
	command := commandPath(c)
	switch p := c.String("preset"); p {
	case presetDistill:
		return nil
	case presetReference:
	default:
		return usageErrorf("%s: unknown --preset %q (want %s)", command, p, strings.Join(presetNames, " or "))
	}
	values := map[any]any{}
	for name, v := range referenceValues(command, c.String) {
		values[name] = v
	}
	if len(values) == 0 {
		return nil
	}
	src := altsrc.NewMapInputSource("--preset "+presetReference, values)
	if err := altsrc.ApplyInputSourceValues(c, src, c.Command.Flags); err != nil {
		return usageErrorf("--preset %s: %w", presetReference, err)
	}
	return nil
}
