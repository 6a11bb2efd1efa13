package main

// The --config file is YAML whose keys are flag names, global or of the
// command being run (or of its parent commands):
//
//	log-level: debug
//	k1: 1.2
//	out: runs/x
//
// A flag takes its value from, in order: the command line, its environment
// variable, the config file, its default. That is urfave/cli's altsrc order,
// and it lets one run override a shared, reviewed experiment file from the
// shell without editing it. Relative paths of Path flags in the file are
// relative to the file's directory.
//
// Any key that is not such a flag is a usage error, so a typo cannot
// silently leave a setting at its default. The file is read once, before
// the first command runs; each command applies its own flags in its Before.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"gopkg.in/yaml.v3"
)

const configKey = "distill.config"

// config is a parsed --config file.
type config struct {
	path   string
	values map[string]any // flag name -> value as YAML decoded it
}

// loadConfig reads the config file at path; "" means no file, an empty config.
func loadConfig(path string) (*config, error) {
	cfg := &config{path: path}
	if path == "" {
		return cfg, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return cfg, nil // empty, or only comments
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config %s: want a mapping of flag names to values at the top level", path)
	}
	if err := doc.Decode(&cfg.values); err != nil {
		var te *yaml.TypeError // "unmarshal errors:\n  line 2: ...", one line each
		if errors.As(err, &te) {
			return nil, fmt.Errorf("config %s: %s", path, strings.Join(te.Errors, "; "))
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// configFrom returns the config file of the run (nil before setUp).
func configFrom(c *cli.Context) *config {
	cfg, _ := c.App.Metadata[configKey].(*config)
	return cfg
}

// apply sets the configurable flags among flags (those of c's command) that
// the file names, unless the command line or the environment set them.
func (cfg *config) apply(c *cli.Context, flags []cli.Flag) error {
	values := make(map[any]any)
	for _, f := range flags {
		if _, ok := f.(altsrc.FlagInputSourceExtension); !ok {
			continue
		}
		for _, name := range f.Names() {
			if v, ok := cfg.values[name]; ok && v != nil { // "key:" alone keeps the default
				values[name] = normalize(f, v)
			}
		}
	}
	if len(values) == 0 {
		return nil
	}
	src := altsrc.NewMapInputSource(cfg.path, values)
	if err := altsrc.ApplyInputSourceValues(c, src, flags); err != nil {
		return usageErrorf("config %s: %w", cfg.path, err)
	}
	return nil
}

// normalize adapts a YAML value to the type altsrc wants for f, where YAML's
// reading is narrower than a user's intent: "k1: 1" for a float, "name: 3"
// for a string, "sources: a" for a list of one.
func normalize(f cli.Flag, v any) any {
	switch f.(type) {
	case *altsrc.Float64Flag:
		if i, ok := v.(int); ok {
			return float64(i)
		}
	case *altsrc.StringFlag, *altsrc.PathFlag:
		switch v.(type) {
		case int, float64, bool:
			return fmt.Sprint(v)
		}
	case *altsrc.Float64SliceFlag:
		if list, ok := v.([]any); ok {
			out := make([]any, len(list))
			for i, e := range list {
				out[i] = normalize(&altsrc.Float64Flag{}, e)
			}
			return out
		}
	case *altsrc.StringSliceFlag:
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = normalize(&altsrc.StringFlag{}, e)
		}
		return out
	}
	return v
}

// checkKeys reports the keys of the file that are not configurable flags of
// c's command, of its parents or of the app.
func (cfg *config) checkKeys(c *cli.Context) error {
	known := make(map[string]bool)
	for _, ctx := range c.Lineage() {
		if ctx.Command == nil {
			continue
		}
		for _, f := range ctx.Command.Flags {
			if _, ok := f.(altsrc.FlagInputSourceExtension); ok {
				for _, name := range f.Names() {
					known[name] = true
				}
			}
		}
	}
	var unknown []string
	for key := range cfg.values {
		if !known[key] {
			unknown = append(unknown, fmt.Sprintf("%q", key))
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return usageErrorf("config %s: unknown key %s", cfg.path, unknown[0])
	default:
		slices.Sort(unknown)
		return usageErrorf("config %s: unknown keys %s", cfg.path, strings.Join(unknown, ", "))
	}
}

// configurable returns flags with each one that a config file can set
// wrapped for altsrc. Flags of other types are returned as they are, and a
// config file cannot set them.
func configurable(flags ...cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			out[i] = altsrc.NewStringFlag(f)
		case *cli.PathFlag:
			out[i] = altsrc.NewPathFlag(f)
		case *cli.BoolFlag:
			out[i] = altsrc.NewBoolFlag(f)
		case *cli.IntFlag:
			out[i] = altsrc.NewIntFlag(f)
		case *cli.Int64Flag:
			out[i] = altsrc.NewInt64Flag(f)
		case *cli.UintFlag:
			out[i] = altsrc.NewUintFlag(f)
		case *cli.Uint64Flag:
			out[i] = altsrc.NewUint64Flag(f)
		case *cli.Float64Flag:
			out[i] = altsrc.NewFloat64Flag(f)
		case *cli.DurationFlag:
			out[i] = altsrc.NewDurationFlag(f)
		case *cli.StringSliceFlag:
			out[i] = altsrc.NewStringSliceFlag(f)
		case *cli.IntSliceFlag:
			out[i] = altsrc.NewIntSliceFlag(f)
		case *cli.Int64SliceFlag:
			out[i] = altsrc.NewInt64SliceFlag(f)
		case *cli.Float64SliceFlag:
			out[i] = altsrc.NewFloat64SliceFlag(f)
		default: // already wrapped, or a type YAML has no value for
			out[i] = f
		}
	}
	return out
}

// withConfig makes cmd and its subcommands read the --config file: their
// flags become configurable and, before cmd runs, the file's values for them
// are applied. The command that runs last (the leaf) also checks that the
// file names no unknown key. cmd's own Before still runs, after that.
// Every command constructor with flags returns withConfig(&cli.Command{...}).
func withConfig(cmd *cli.Command) *cli.Command {
	cmd.Flags = configurable(cmd.Flags...)
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		if err := applyConfig(c); err != nil {
			return err
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	for _, sub := range cmd.Subcommands {
		withConfig(sub)
	}
	return cmd
}

func applyConfig(c *cli.Context) error {
	cfg := configFrom(c)
	if cfg == nil {
		return errors.New("config: not loaded (the command runs outside the distill app)")
	}
	if err := cfg.apply(c, c.Command.Flags); err != nil {
		return err
	}
	if err := applyPreset(c); err != nil {
		return err
	}
	if hasSubcommands(c.Command) {
		// A subcommand runs next and checks the keys, or only help is shown.
		return nil
	}
	return cfg.checkKeys(c)
}

// hasSubcommands reports whether cmd groups commands of its own (urfave/cli
// adds "help" to every command).
func hasSubcommands(cmd *cli.Command) bool {
	for _, sub := range cmd.Subcommands {
		if !sub.HasName("help") {
			return true
		}
	}
	return false
}
