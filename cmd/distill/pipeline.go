package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/eval"
	"github.com/distill-rag/distill/filter"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/internal/pipeline"
	"github.com/distill-rag/distill/judge"
	"github.com/distill-rag/distill/label"
	"github.com/distill-rag/distill/retrieve/bm25"
	"github.com/distill-rag/distill/rollout/runner"
)

func runCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:      "run",
		Usage:     "run a pipeline file: import -> index -> rollout -> label -> filter -> train -> bench",
		ArgsUsage: "PIPELINE.yaml",
		Description: `Runs every stage that a pipeline file declares, each into its own directory
under the file's root (default runs/NAME): data/DATASET, index/DATASET,
rollout/DATASET, labels/DATASET, sft, judge and bench. Each stage is the
distill command of the same name, run in this process with the flags the file
gives it (the file's keys are those flags, as in docs/commands.md) and the
inputs and outputs the pipeline chooses. docs/pipeline.md describes the file.

A stage whose command line and input files are unchanged since it finished is
skipped (its directory's pipeline.json records a hash of both); a stage that
runs again makes every stage after it run again; an interrupted rollout, label
or bench resumes. At the end, one line per stage: what it did and what it
holds.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan (each stage's command, and whether it would run) and run nothing"},
			&cli.StringFlag{Name: "from", Usage: "run from this `STAGE` on (a stage, as rollout:hotpotqa, or a kind, as rollout)"},
			&cli.StringFlag{Name: "until", Usage: "run up to this `STAGE` (a stage or a kind), and not the stages after it"},
			&cli.StringFlag{Name: "only", Usage: "run only this `STAGE` (a stage or a kind)"},
			&cli.BoolFlag{Name: "force", Usage: "run the selected stages even when they are up to date"},
			&cli.PathFlag{Name: "root", Usage: "write under this `DIR` instead of the file's root"},
		},
		Action: pipelineAction,
	})
}

func pipelineAction(c *cli.Context) error {
	if err := rejectFlagsAfterArgs(c); err != nil {
		return err
	}
	if c.NArg() != 1 {
		return usageErrorf("run: want one pipeline file (see '%s --help')", helpName(c))
	}
	spec, err := pipeline.Parse(c.Args().First())
	if err != nil {
		return usageErrorf("%w", err)
	}
	if c.IsSet("root") {
		spec.Root = c.Path("root")
	}
	spec.All = withOuterGlobals(c, spec.All)
	stages, err := pipeline.Plan(spec, commandFlags{commands()})
	if err != nil {
		return usageErrorf("%w", err)
	}
	exec := func(ctx context.Context, args []string) error {
		return newApp(c.App.Writer, c.App.ErrWriter).RunContext(ctx, append([]string{"distill"}, args...))
	}
	steps, err := pipeline.Run(c.Context, spec.Root, stages, pipeline.Options{
		From: c.String("from"), Until: c.String("until"), Only: c.String("only"), Force: c.Bool("force"), DryRun: c.Bool("dry-run"),
		Exec: exec, Logger: loggerFrom(c),
	})
	if c.Bool("dry-run") && err == nil {
		printPlan(c.App.Writer, steps)
		return nil
	}
	if len(steps) > 0 {
		fmt.Fprintln(c.App.Writer)
		printSummary(c.App.Writer, steps)
	}
	return err
}

// withOuterGlobals adds the global flags given to distill run (log level,
// format, quiet) to the file's settings for every stage, winning over them.
func withOuterGlobals(c *cli.Context, all pipeline.Settings) pipeline.Settings {
	out := pipeline.Settings{}
	for k, v := range all {
		out[k] = v
	}
	for _, name := range []string{"log-format", "log-level"} {
		if c.IsSet(name) {
			out[name] = c.String(name)
		}
	}
	if c.IsSet("quiet") {
		out["quiet"] = c.Bool("quiet")
	}
	return out
}

// commandFlags answers pipeline.Flags from distill's commands.
type commandFlags struct{ cmds []*cli.Command }

func (f commandFlags) Has(command []string, name string) bool { return f.flag(command, name) != nil }

func (f commandFlags) TakesFile(command []string, name string) bool {
	switch fl := f.flag(command, name).(type) {
	case *altsrc.PathFlag:
		return fl.TakesFile
	case *altsrc.StringFlag:
		return fl.TakesFile
	case *altsrc.StringSliceFlag:
		return fl.TakesFile
	}
	return false
}

// flag is the flag called name of the command (nil: the global flags).
func (f commandFlags) flag(command []string, name string) cli.Flag {
	flags := globalFlags()
	cmds := f.cmds
	for _, n := range command {
		i := slices.IndexFunc(cmds, func(c *cli.Command) bool { return c.Name == n })
		if i < 0 {
			return nil
		}
		flags, cmds = cmds[i].Flags, cmds[i].Subcommands
	}
	i := slices.IndexFunc(flags, func(fl cli.Flag) bool { return slices.Contains(fl.Names(), name) })
	if i < 0 {
		return nil
	}
	return flags[i]
}

func printPlan(w io.Writer, steps []pipeline.Step) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\taction\twhy\tdirectory")
	for _, s := range steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Stage.Name, s.Action, s.Why, s.Stage.Dir)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, s := range steps {
		fmt.Fprintf(w, "distill %s\n", strings.Join(s.Stage.CommandLine(), " "))
	}
}

func printSummary(w io.Writer, steps []pipeline.Step) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tdone\tseconds\tdirectory\tholds")
	for _, s := range steps {
		secs := "-"
		if s.Action == pipeline.ActionRun || s.Action == pipeline.ActionResume {
			secs = fmt.Sprintf("%.1f", s.Seconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Stage.Name, s.Action, secs, s.Stage.Dir, holds(s.Stage))
	}
	tw.Flush()
}

// holds says in a few words what a finished stage's directory holds.
func holds(st pipeline.Stage) string {
	if _, ok, err := pipeline.ReadRecord(st.Dir); err != nil || !ok {
		return "not finished"
	}
	switch st.Kind {
	case pipeline.KindImport:
		q, qerr := data.ParquetStats(filepath.Join(st.Dir, data.QuestionsFile))
		p, perr := data.ParquetStats(filepath.Join(st.Dir, data.CorpusFile))
		if qerr == nil && perr == nil {
			return fmt.Sprintf("%d questions, %d passages", q.Rows, p.Rows)
		}
	case pipeline.KindIndex:
		if !bm25.IsIndex(st.Dir) {
			break
		}
		if x, err := bm25.Open(st.Dir); err == nil {
			defer x.Close()
			m := x.Meta()
			return fmt.Sprintf("BM25 over %d passages, %d terms", m.Passages, m.Terms)
		}
	case pipeline.KindRollout:
		if r, err := runner.ReadReport(st.Dir); err == nil {
			o := r.Counts.Output
			return fmt.Sprintf("%d states of %d questions (%d failed)", o.States, o.Questions, o.Failed)
		}
	case pipeline.KindLabel:
		if r, err := label.ReadReport(st.Dir); err == nil {
			o := r.Counts.Output
			return fmt.Sprintf("%d labelled states, %d sufficient, %d failed", o.States, o.Sufficient, o.Failed)
		}
	case pipeline.KindFilter:
		if s, err := filter.ReadSummary(st.Dir); err == nil {
			return fmt.Sprintf("%d train + %d val kept of %d labels", s.Rows.Train, s.Rows.Val, s.Rows.In)
		}
	case pipeline.KindTrain:
		if r, err := finetune.LoadRecord(st.Dir); err == nil {
			return fmt.Sprintf("%s, step %d of %d, loss %.4f; %s", r.State.Status, r.State.Step, r.State.TotalSteps, r.State.Loss,
				filepath.Join(st.Dir, judge.HandbackFile))
		}
	case pipeline.KindBench:
		if r, err := eval.ReadReport(filepath.Join(st.Dir, eval.ReportJSON)); err == nil {
			var f1 []string
			for _, v := range r.Variants {
				f1 = append(f1, fmt.Sprintf("%s %.1f", v.Name, v.Metrics.F1))
			}
			return "F1 " + strings.Join(f1, ", ") + "; " + filepath.Join(st.Dir, eval.ReportMD)
		}
	}
	return ""
}
