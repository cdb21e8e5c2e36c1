package main

import (
	"fmt"
	"os"

	"github.com/skillgate/skillgate/pipeline/mutate"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/urfave/cli/v2"
)

func planCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "compile a suite into a content-addressed run plan",
		ArgsUsage: "[DIR]",
		Description: `Compiles the suite in DIR (default: the current folder) into canonical JSON:
every cell (case × arm × trial) with its rollout key and grade key, every
input by digest, the agent, judge and policy, and one plan digest over it all.
The same suite gives a byte-identical plan in every checkout.

Calibration-only cases (calibration: true) are vetted but planned only when
named with --case.

The plan goes to stdout, or to the file given with -o; a summary of cells,
model calls and estimated cost goes to stderr.

With --mutants it plans what "skillgate mutate" would run instead: the
suite's mutants (by its mutants.operators) as copies of the arms that
install their skills, beside those arms, the baseline not rerun; the
summary counts the mutant arms and their cells, and, with
policy.sequential, the rounds that may stop each mutant early. The plan
names the mutants' folders where mutate writes them by default
(.skillgate/SUITE-mutants at the repository's root), so its digest is the
one mutate runs from there.

With --reuse FROM (a run folder, a pack, or cache: the machine's cache) it
also says on stderr which cells a fresh run folder would take from FROM, by
arm, and which would run, with what the taken ones cost when they ran: each
record verified as "run --reuse" verifies it; nothing is written. The plan
itself does not change.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the plan to `FILE` instead of stdout"},
			&cli.StringSliceFlag{Name: "case", Usage: "also plan the calibration-only case `ID` (repeatable); a default plan has none"},
			&cli.BoolFlag{Name: "mutants", Usage: "plan the suite's mutate run (its mutants beside the arms they copy) instead of its own"},
			&cli.StringFlag{Name: "reuse", Usage: "also say which cells a fresh run folder would take with run --reuse `FROM` (a run folder, a pack, or cache: the machine's cache) and which would run, by arm, with what the taken ones cost when they ran"},
			cacheFlag,
		},
		Before: shortLived,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return fmt.Errorf("plan takes one suite folder, got %d arguments", c.NArg())
			}
			dir := c.Args().First()
			if dir == "" {
				dir = "."
			}
			if c.Bool("mutants") {
				return planMutants(c, dir)
			}
			p, err := plan.CompileDirCases(dir, c.StringSlice("case"))
			if err != nil {
				return err
			}
			if err := p.CheckCases(c.StringSlice("case")); err != nil {
				return err
			}
			if err := writeOutput(c.String("output"), p.Encode()); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "plan %s for suite %s\n%s%s", p.Digest, p.Suite.Name, p.Summary(), verdict.DetectableLine(p)+verdict.SequentialPlanLine(p))
			return planReuse(c, p, os.Stderr)
		},
	}
}

// planMutants writes the plan of the suite's mutate run, and says on
// stderr its mutant arms, cells, calls, cost and rounds.
func planMutants(c *cli.Context, dir string) error {
	if len(c.StringSlice("case")) > 0 {
		return fmt.Errorf("plan: --mutants plans the suite's own cases; --case does not apply")
	}
	p, err := mutantPlanOf(dir, "")
	if err != nil {
		return err
	}
	if err := writeOutput(c.String("output"), p.Encode()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "plan %s for the mutants of suite %s\n%s%s%s", p.Digest, p.Suite.Name, mutate.PlanLine(p), p.Summary(), verdict.SequentialPlanLine(p)+mutate.SequentialLine(p))
	return planReuse(c, p, os.Stderr)
}

// writeOutput writes data to the named file, or to stdout when it is "" or "-".
func writeOutput(file string, data []byte) error {
	if file == "" || file == "-" {
		_, err := os.Stdout.Write(data)
		return err
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
