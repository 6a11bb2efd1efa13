package main

import (
	"bytes"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// console is stderr when it is a terminal, shared by the progress bar and
// the log: a log record first clears the line the bar is drawn on, and the
// bar is drawn again after it, so that the two never share a line.
type console struct {
	mu sync.Mutex
	w  io.Writer
	// line is what the bar has drawn on the current line, "" when it has
	// drawn nothing there.
	line []byte
}

const eraseLine = "\r\x1b[K"

// Write writes log records.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.line) > 0 {
		if _, err := io.WriteString(c.w, eraseLine); err != nil {
			return 0, err
		}
	}
	n, err := c.w.Write(p)
	if err == nil && len(c.line) > 0 {
		_, err = c.w.Write(append([]byte{'\r'}, c.line...))
	}
	return n, err
}

// bar returns the writer of a progress bar: it keeps the line drawn, and
// once the bar has ended its line (end), drops what the bar draws again (a
// Finish after the bar reached its total draws it a second time).
func (c *console) bar() *barWriter { return &barWriter{c: c} }

type barWriter struct {
	c     *console
	ended bool // guarded by c.mu
}

// end ends the bar's line.
func (b *barWriter) end() {
	b.Write([]byte{'\n'})
	b.c.mu.Lock()
	b.ended = true
	b.c.mu.Unlock()
}

func (b *barWriter) Write(p []byte) (int, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.ended {
		return len(p), nil
	}
	switch i, j := bytes.LastIndexByte(p, '\n'), bytes.LastIndexByte(p, '\r'); {
	case i >= 0 && i >= j:
		c.line = append(c.line[:0], p[i+1:]...)
	case j >= 0:
		c.line = append(c.line[:0], p[j+1:]...)
	default:
		c.line = append(c.line, p...)
	}
	return c.w.Write(p)
}

const consoleKey = "distill.console"

// newConsole returns the console of the app's stderr, or nil when the
// stderr is not a terminal or progress is off (--quiet).
func newConsole(c *cli.Context) *console {
	if c.Bool("quiet") || !isTerminal(c.App.ErrWriter) {
		return nil
	}
	return &console{w: c.App.ErrWriter}
}

// newProgress returns a progress bar on the app's stderr for total units
// (-1: unknown, a spinner), counting them as unit ("questions"). It draws
// nothing with --quiet or when stderr is not a terminal (a file, a pipe,
// CI): the bar is then a no-op that keeps no count, so report totals from
// your own counters, not from the bar. Log records go above the bar, never
// on its line. Call Finish when the work is done; it also ends a spinner's
// goroutine.
func newProgress(c *cli.Context, total int64, description, unit string) *progressbar.ProgressBar {
	con, _ := c.App.Metadata[consoleKey].(*console)
	if con == nil {
		return progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(io.Discard),
			progressbar.OptionSetVisibility(false),
		)
	}
	w := con.bar()
	return progressbar.NewOptions64(total, append(barOptions(w, termColumns(con.w), description, unit),
		progressbar.OptionThrottle(65*time.Millisecond),
		progressbar.OptionOnCompletion(w.end))...)
}

// barOptions are what a bar written to w on a terminal of cols columns
// shows.
func barOptions(w io.Writer, cols int, description, unit string) []progressbar.Option {
	return []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetWidth(barWidth(cols, description)),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionSpinnerType(14),
	}
}

// barWidth is the width of the bar itself on a terminal of cols columns,
// leaving room for the description and the figures after the bar (count,
// percent, rate, times: about 60 columns). progressbar's own full width cannot measure the
// terminal through the console's writer, which is not an *os.File, and
// assumed 80 columns: the bar was 0 to 4 characters wide.
func barWidth(cols int, description string) int {
	return max(10, min(40, cols-len(description)-65))
}

// termColumns is the width of the terminal w is, 80 when it cannot be
// measured.
func termColumns(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}

// runBar is the bar of a run whose total is known from its first progress
// report: a spinner until then.
type runBar struct {
	*progressbar.ProgressBar
	sized bool
}

func newRunBar(c *cli.Context, description, unit string) *runBar {
	return &runBar{ProgressBar: newProgress(c, -1, description, unit)}
}

// show sizes the bar to total on the first report, then shows desc and
// done.
func (b *runBar) show(total int, desc string, done int) {
	if !b.sized {
		b.ChangeMax64(int64(total))
		b.sized = true
	}
	b.Describe(desc)
	b.Set(done)
}

// isTerminal reports whether w is a terminal; only an *os.File can be one.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
