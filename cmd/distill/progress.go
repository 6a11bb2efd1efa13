package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// newProgress returns a progress bar on the app's stderr for total steps
// (-1: unknown, a spinner). It draws nothing with --quiet or when stderr is
// not a terminal (a file, a pipe, CI): the bar is then a no-op that keeps
// no count, so report totals from your own counters, not from the bar.
// Call Finish when the work is done; it also ends a spinner's goroutine.
func newProgress(c *cli.Context, total int64, description string) *progressbar.ProgressBar {
	w := c.App.ErrWriter
	if c.Bool("quiet") || !isTerminal(w) {
		return progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(io.Discard),
			progressbar.OptionSetVisibility(false),
		)
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetWidth(10),
		progressbar.OptionFullWidth(),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(65*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)
}

// isTerminal reports whether w is a terminal; only an *os.File can be one.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
