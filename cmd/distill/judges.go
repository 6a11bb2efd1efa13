package main

import (
	"errors"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/distill-rag/distill/judge"
)

// judgeFlagSpec is the judge that --FLAG (judge or base-judge) and its
// model flags name.
func judgeFlagSpec(c *cli.Context, flag string) judge.Spec {
	return judge.Spec{Kind: c.String(flag), Model: c.String(flag + "-model"), BaseURL: c.String(flag + "-base-url"), NoRepair: c.Bool("judge-no-repair")}
}

// judgeFromFlag is --judge-from, for the commands that run the loop.
func judgeFromFlag() cli.Flag {
	return &cli.PathFlag{Name: "judge-from", Usage: "use the judge distill train handed back in `DIR` (its model.json); a LoRA adapter must be served, at --judge-base-url"}
}

// withJudgeFrom returns the spec of --judge-from DIR when it is given,
// else spec; giving both --judge and --judge-from is a usage error of cmd.
func withJudgeFrom(c *cli.Context, cmd string, spec judge.Spec) (judge.Spec, error) {
	from := c.Path("judge-from")
	if from == "" {
		return spec, nil
	}
	if c.IsSet("judge") {
		return spec, usageErrorf("%s: give --judge or --judge-from, not both", cmd)
	}
	spec.Kind, spec.From = "", from
	return spec, nil
}

// onCommandLine reports whether flag was given on the command line or in
// the configuration file, not only through its environment variables.
func onCommandLine(c *cli.Context, flag string) bool {
	if !c.IsSet(flag) {
		return false
	}
	for _, f := range c.Command.Flags {
		names := f.Names()
		if len(names) == 0 || names[0] != flag {
			continue
		}
		ev, ok := f.(interface{ GetEnvVars() []string })
		if !ok {
			return true
		}
		for _, env := range ev.GetEnvVars() {
			if v, set := os.LookupEnv(env); set && v == c.String(flag) {
				return false
			}
		}
	}
	return true
}

// judgeError turns an error of judge.Open or judge.Resolve for --FLAG into
// what the user of command cmd sees: a bad spec is a usage error, in the
// flags' words; any other error (making the model's client) is returned
// as is.
func judgeError(cmd, flag string, err error) error {
	var se *judge.SpecError
	if !errors.As(err, &se) {
		return err
	}
	var serve *judge.ServeError
	var te *judge.TemplateError
	switch {
	case errors.Is(err, judge.ErrUnknownKind):
		return usageErrorf("%s: unknown --%s %q (want %s)", cmd, flag, se.Spec.Kind, strings.Join(judge.Kinds(), ", "))
	case errors.Is(err, judge.ErrNoModel):
		return usageErrorf("%s: --%s llm needs --%s-model", cmd, flag, flag)
	case errors.As(err, &serve):
		return usageErrorf("%s: the judge in %s is a LoRA adapter: serve it (%s) and give --%s-base-url", cmd, serve.Dir, serve.Serve, flag)
	case errors.As(err, &te) && te.Handback != "":
		return usageErrorf("%s: %v: its scores would not mean what they seem (--allow-template-mismatch to use it anyway)", cmd, te)
	case errors.As(err, &te):
		return usageErrorf("%s: --%s %s was %v (--allow-template-mismatch to use it anyway)", cmd, flag, se.Spec.Kind, te)
	case se.Spec.From != "":
		return usageErrorf("%s: --judge-from: %w", cmd, se.Err)
	}
	return usageErrorf("%s: --%s %s: %w", cmd, flag, se.Spec.Kind, se.Err)
}
