package main

import (
	"encoding/json"
	"fmt"

	"github.com/skillgate/skillgate/pipeline/mutate"
	"github.com/skillgate/skillgate/pipeline/plan"

	"github.com/urfave/cli/v2"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "show which cells must run again between two plans, and why",
		ArgsUsage: "A [B]",
		Description: `A and B are plan files or suite folders. With --rev, a suite folder is read
as it was at that git revision (with git, never by checking out): one --rev
applies to A and compares it with B (default: A as it is now); two --rev
flags give A's and B's revisions.

  skillgate diff old-plan.json suites/demo
  skillgate diff --rev HEAD suites/demo          # the working tree against HEAD
  skillgate diff --rev v1.0 --rev main suites/demo

Cells are listed as needing a new rollout (what the agent does changed),
needing only a regrade (assertions, rubric or judge changed), added, removed
or unchanged, each with the input that changed. Exit 0 when the plans are
equal, 1 when they differ, 2 on error.

With --mutants it compares the plans of the suite's mutate runs (as
"skillgate plan --mutants" compiles them; a plan file is read as it is),
and ends with one line per mutant arm: its cells to rerun, to regrade,
added, removed or unchanged, and why. An edit reruns a mutant only where
the mutant's own tree changed: the mutant that deletes the edited section
keeps its cells.

  skillgate diff --mutants --rev HEAD suites/demo`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "rev", Usage: "read suite folders at git revision `REV` (once for A, twice for A and B)"},
			&cli.BoolFlag{Name: "json", Usage: "print the diff as JSON"},
			&cli.BoolFlag{Name: "mutants", Usage: "compare the plans of the suites' mutate runs (each mutant arm's cells, and why they rerun)"},
		},
		Before: shortLived,
		Action: func(c *cli.Context) error {
			revs := c.StringSlice("rev")
			args := c.Args().Slice()
			if len(revs) > 2 {
				return exit(2, fmt.Errorf("diff takes at most two --rev flags"))
			}
			if len(args) == 1 && len(revs) > 0 {
				args = append(args, args[0])
			}
			if len(args) != 2 {
				return exit(2, fmt.Errorf("diff needs A and B (or --rev REV and one suite folder)"))
			}
			revA, revB := "", ""
			if len(revs) > 0 {
				revA = revs[0]
			}
			if len(revs) > 1 {
				revB = revs[1]
			}
			planOf := plan.PlanOf
			if c.Bool("mutants") {
				planOf = mutantPlanOf
			}
			a, err := planOf(args[0], revA)
			if err != nil {
				return exit(2, err)
			}
			b, err := planOf(args[1], revB)
			if err != nil {
				return exit(2, err)
			}
			d := plan.DiffPlans(a, b)
			if c.Bool("json") {
				out, _ := json.MarshalIndent(d, "", "  ")
				fmt.Fprintln(c.App.Writer, string(out))
			} else {
				fmt.Fprint(c.App.Writer, d)
				fmt.Fprint(c.App.Writer, mutate.DiffText(a, b, d))
			}
			if !d.Same() {
				return exit(1, nil)
			}
			return nil
		},
	}
}
