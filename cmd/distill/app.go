package main

import (
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

const appDescription = `distill is a toolkit for S2G-RAG, iterative retrieval-augmented question
answering steered by a small trained judge that decides whether the evidence
gathered so far is sufficient and, if not, what is missing. distill imports
datasets and corpora and indexes them (data, index, search), runs the S2G
loop with the untuned judge and records every state (rollout), has a teacher
model label those states (label), keeps the labels that agree with retrieval
truth (filter), fine-tunes the judge on them (train), and measures the tuned
judge inside the full loop (bench). distill run runs them all from one
pipeline file (examples/sample.yaml; make demo).

Flags take their values from, in order: the command line, the environment
(DISTILL_...), the --config file, the defaults.`

// commands are the commands of distill, in the order --help lists them.
// Each one comes from a constructor in its own file; fakeCommands are
// those of a build with the fakes tag (none in a release).
func commands() []*cli.Command {
	return append([]*cli.Command{
		runCommand(),
		dataCommand(),
		indexCommand(),
		searchCommand(),
		rolloutCommand(),
		mergeCommand(),
		labelCommand(),
		filterCommand(),
		trainCommand(),
		benchCommand(),
		scoreCommand(),
		versionCommand(),
	}, fakeCommands()...)
}

// newApp returns the distill app, writing data and reports to stdout and
// logs, progress and errors to stderr.
func newApp(stdout, stderr io.Writer) *cli.App {
	return buildApp(stdout, stderr, commands())
}

// buildApp returns an app with distill's global flags, start-up and error
// handling around cmds. Tests use it with commands of their own.
func buildApp(stdout, stderr io.Writer, cmds []*cli.Command) *cli.App {
	app := &cli.App{
		Name:        "distill",
		Usage:       "build training data for the S2G-RAG judge, train it and evaluate it",
		Description: appDescription,
		Version:     readVersionInfo().Version,
		Flags:       globalFlags(),
		Commands:    cmds,
		Before:      setUp,
		After:       finishProfiles,
		Action:      showHelpOrRejectCommand,
		Writer:      stdout,
		ErrWriter:   stderr,
		Metadata:    map[string]any{},
		// run decides exit codes; urfave/cli's default handler would exit.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
	}
	guardUsage(cmds)
	addExamples(cmds, "")
	return app
}

func globalFlags() []cli.Flag {
	flags := append(configurable(
		&cli.StringFlag{
			Name:    "log-format",
			Usage:   "log format on stderr: text or json",
			Value:   "text",
			EnvVars: []string{"DISTILL_LOG_FORMAT"},
		},
		&cli.StringFlag{
			Name:    "log-level",
			Usage:   "lowest level logged: debug, info, warn or error",
			Value:   "info",
			EnvVars: []string{"DISTILL_LOG_LEVEL"},
		},
		&cli.BoolFlag{
			Name:    "quiet",
			Aliases: []string{"q"},
			Usage:   "no progress bars; log only warnings and errors",
			EnvVars: []string{"DISTILL_QUIET"},
		},
	),
		// Not configurable itself: the file cannot name another file.
		&cli.PathFlag{
			Name:      "config",
			Usage:     "read flag values from a YAML `FILE` whose keys are flag names (log-level: debug); the command line and the environment win over it",
			EnvVars:   []string{"DISTILL_CONFIG"},
			TakesFile: true,
		},
	)
	return append(flags, profileFlags()...)
}

// setUp runs before any command: it reads the config file, applies it to the
// global flags and builds the one logger of the run.
func setUp(c *cli.Context) error {
	cfg, err := loadConfig(c.Path("config"))
	if err != nil {
		return err
	}
	c.App.Metadata[configKey] = cfg
	if err := cfg.apply(c, c.App.Flags); err != nil {
		return err
	}
	var logTo io.Writer = c.App.ErrWriter
	if con := newConsole(c); con != nil {
		c.App.Metadata[consoleKey] = con
		logTo = con
	}
	logger, err := newLogger(logTo, c.String("log-format"), c.String("log-level"), c.Bool("quiet"))
	if err != nil {
		return err
	}
	c.App.Metadata[loggerKey] = logger
	prof, err := startProfiles(c)
	if err != nil {
		return err
	}
	c.App.Metadata[profilerKey] = prof
	return nil
}

// finishProfiles writes the profiles setUp started, after the command.
func finishProfiles(c *cli.Context) error {
	prof, _ := c.App.Metadata[profilerKey].(*profiler)
	return prof.finish()
}

const loggerKey = "distill.logger"

// loggerFrom returns the logger of the run. Commands pass it on in their
// library Options; nothing uses slog's default logger.
func loggerFrom(c *cli.Context) *slog.Logger {
	if l, ok := c.App.Metadata[loggerKey].(*slog.Logger); ok {
		return l
	}
	// Only reached when setUp did not run, as in a test calling an action.
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
}

// showHelpOrRejectCommand is the action of the app and of commands that only
// group subcommands: without arguments it shows help, and an argument can
// only be a command that does not exist (a usage error, where urfave/cli
// would exit 3).
func showHelpOrRejectCommand(c *cli.Context) error {
	if c.Args().Present() {
		cmds := c.App.Commands
		if c.Command != nil && len(c.Command.Subcommands) > 0 {
			cmds = c.Command.Subcommands
		}
		var names []string
		for _, cmd := range cmds {
			if !cmd.Hidden {
				names = append(names, cmd.Names()...)
			}
		}
		return usageErrorf("unknown command %q%s (see '%s --help')", c.Args().First(), didYouMean(c.Args().First(), names, ""), helpName(c))
	}
	if c.Command.HelpName == "" || c.Command.HelpName == c.App.HelpName {
		return cli.ShowAppHelp(c)
	}
	return cli.ShowSubcommandHelp(c)
}

// onUsageError turns flag parsing errors into one usage error, instead of
// urfave/cli's default of printing help to stdout.
func onUsageError(c *cli.Context, err error, _ bool) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return usageErrorf("%w (see '%s --help')", err, helpName(c))
	}
	name = strings.TrimPrefix(name, "-")
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" {
		flags = c.Command.Flags
		// A global flag after the command: say where it goes.
		for _, f := range c.App.Flags {
			if slices.Contains(f.Names(), name) {
				return usageErrorf("--%s is a global flag: give it before the command (distill --%s ... %s ...)", name, name, strings.TrimPrefix(helpName(c), c.App.Name+" "))
			}
		}
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return usageErrorf("%w%s (see '%s --help')", err, didYouMean(name, names, "--"), helpName(c))
}

// didYouMean returns "; did you mean PREFIX+NAME?" for the name among
// names closest to provided, when it is close enough to be a misspelling
// of it (Jaro-Winkler similarity at least 0.85), else "".
func didYouMean(provided string, names []string, prefix string) string {
	best, score := "", 0.85
	for _, n := range names {
		if s := smetrics.JaroWinkler(n, provided, 0.7, 4); s >= score {
			best, score = n, s
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

// helpName is the command line that names c's command, as "distill data import".
func helpName(c *cli.Context) string {
	if c.Command != nil && c.Command.HelpName != "" {
		return c.Command.HelpName
	}
	return c.App.Name
}

// guardUsage gives every command in cmds, and their subcommands, distill's
// handling of usage errors and unknown subcommands.
func guardUsage(cmds []*cli.Command) {
	for _, cmd := range cmds {
		if cmd.OnUsageError == nil {
			cmd.OnUsageError = onUsageError
		}
		if cmd.Action == nil && len(cmd.Subcommands) > 0 {
			cmd.Action = showHelpOrRejectCommand
		}
		guardUsage(cmd.Subcommands)
	}
}
