// Command distill builds training data for the S2G-RAG judge and evaluates
// it: rollout -> label -> filter -> train -> bench. Run `distill --help`.
//
// The binary is thin: each command copies its flags into the Options of one
// library function and calls it with the command's context. This package
// owns what only a process has: flags and the config file, the logger,
// progress bars, signals and exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/data/outdir"
)

// Exit codes. They are decided in one place, exitCode.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2   // bad flags, arguments or config, and commands not implemented yet
	exitIncomplete  = 3   // a job stopped cleanly before its end (a budget reached); it can be resumed
	exitInterrupted = 130 // SIGINT or SIGTERM, as shells report 128+SIGINT
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it builds the app on the given streams,
// runs it until it ends or a signal arrives, and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	app.Reader = stdin
	return runWithSignals(context.Background(), app, args)
}

// runWithSignals runs app with a context that SIGINT, SIGTERM or parent
// cancels, reports the error once on app.ErrWriter as "distill: <error>", and
// returns the exit code.
func runWithSignals(parent context.Context, app *cli.App, args []string) int {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, give the signals back to the runtime, so that
	// a second Ctrl-C kills a command that is slow to wind down.
	go func() {
		<-ctx.Done() // at the latest when the deferred stop runs
		stop()
	}()

	err := app.RunContext(ctx, args)
	if msg := errorMessage(ctx, err); msg != "" {
		fmt.Fprintf(app.ErrWriter, "distill: %s\n", msg)
	}
	return exitCode(ctx, err)
}

// exitCode maps the outcome of a run to the process exit code. ctx is the
// run's context: once it is cancelled, any error counts as an interruption.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	var coder cli.ExitCoder // our exitError, and urfave/cli's own exit errors
	if errors.As(err, &coder) {
		return coder.ExitCode()
	}
	// Every command's output directory: held by another writer, or not
	// empty where it must be; the user chooses another.
	if errors.Is(err, outdir.ErrBusy) || errors.Is(err, outdir.ErrNotEmpty) {
		return exitUsage
	}
	return exitFailure
}

// errorMessage is what the user is told about err; "" means nothing.
func errorMessage(ctx context.Context, err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if hint := embedServerHint(err); hint != "" {
		msg += "\n" + hint
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		// The signal that stopped the run, e.g. "interrupt signal received".
		if msg == "" {
			return cause.Error()
		}
		return msg + " (" + cause.Error() + ")"
	}
	return msg
}

// exitError is an error that decides the exit code. Commands return it
// through usageErrorf, or directly where another code is meant.
type exitError struct {
	code int
	// err is what went wrong; nil means the user has been told already
	// and only the exit code remains.
	err error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// ExitCode makes exitError a cli.ExitCoder.
func (e *exitError) ExitCode() int { return e.code }

// usageErrorf returns an error for a bad invocation: a wrong flag, argument
// or config file. It exits with code 2. Use %w to wrap a cause.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// rejectFlagsAfterArgs returns a usage error when one of c's arguments is
// one of its flags, or looks like a flag ("--name"): urfave/cli stops
// reading flags at the first argument, so "show FILE -n 3" would silently
// treat "-n" and "3" as arguments.
func rejectFlagsAfterArgs(c *cli.Context) error {
	cmd := strings.TrimPrefix(helpName(c), c.App.Name+" ")
	for _, arg := range c.Args().Slice() {
		name := strings.TrimLeft(arg, "-")
		if name == arg || name == "" {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		known := false
		for _, f := range c.Command.Flags {
			known = known || slices.Contains(f.Names(), name)
		}
		switch {
		case known:
			return usageErrorf("%s: flag %s comes after an argument: put flags before arguments (see '%s --help')", cmd, arg, helpName(c))
		case strings.HasPrefix(arg, "--"):
			return usageErrorf("%s: %s comes after an argument, and is not a flag of %s (see '%s --help')", cmd, arg, cmd, helpName(c))
		}
	}
	return nil
}
