package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The commands whose issue has not landed yet. To land one, delete its
// constructor here and write it, same name, in its own file (data.go, ...).

// Issues, as "number: title" for the not-implemented message.
const (
	issueBench = "6: distill bench, the judge evaluated inside the full loop"
)

func benchCommand() *cli.Command {
	return pendingCommand("bench", "evaluate the judge inside the full loop: EM, F1, calibration, ablations", issueBench)
}

// pendingCommand returns a command that is listed in --help but, when run,
// only says it is not implemented yet and which issue (as "N: title")
// tracks it, on stderr, and exits 2.
func pendingCommand(name, usage, issue string) *cli.Command {
	return &cli.Command{
		Name:  name,
		Usage: usage + " (not implemented yet)",
		// Whatever flags and arguments come, the answer is the same.
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.ErrWriter, "distill %s: not implemented yet (tracked in issue %s)\n", name, issue)
			return &exitError{code: exitUsage} // told already
		},
	}
}
