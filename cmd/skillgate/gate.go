package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline"
)

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:      "gate",
		Usage:     "paired gate of a candidate report against a baseline report",
		ArgsUsage: "BASELINE CANDIDATE",
		Description: `Compares two runs (run folders or report.json files) the way SkillOpt's
paired candidate gate does. It refuses reports that do not pair (case set,
trials, agent, model or judge differ) and says which. Then: no invalid run,
task success and valid-unseen score do not regress, at least one strict
improvement (unless --allow-equal), protected metrics do not regress, enough
run keys per case, and candidate skill bytes within the bound when both
install a skill (else sizeComparable=false). Thresholds come from the
skillopt preset in the schema.

Exit 0 pass, 1 fail, 2 error or reports that do not pair.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "baseline-arm", Usage: "the baseline report's `ARM` (default: its only arm)"},
			&cli.StringFlag{Name: "candidate-arm", Usage: "the candidate report's `ARM` (default: its only arm)"},
			&cli.BoolFlag{Name: "allow-equal", Usage: "pass without a strict improvement"},
			&cli.BoolFlag{Name: "allow-single-run", Usage: "accept a single run key per case (smoke and debug only)"},
			&cli.BoolFlag{Name: "allow-longer", Usage: "drop the skill size bound"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exit(2, fmt.Errorf("gate needs BASELINE and CANDIDATE"))
			}
			base, err := pipeline.ReadReport(c.Args().Get(0))
			if err != nil {
				return exit(2, err)
			}
			cand, err := pipeline.ReadReport(c.Args().Get(1))
			if err != nil {
				return exit(2, err)
			}
			opts, err := pipeline.SkillOptGateOptions()
			if err != nil {
				return exit(2, err)
			}
			opts.BaselineArm, opts.CandidateArm = c.String("baseline-arm"), c.String("candidate-arm")
			opts.AllowEqual, opts.AllowSingleRun, opts.AllowLonger = c.Bool("allow-equal"), c.Bool("allow-single-run"), c.Bool("allow-longer")
			v, err := pipeline.Gate(base, cand, opts)
			if err != nil {
				return exit(2, err)
			}
			if c.Bool("json") {
				b, _ := json.MarshalIndent(v, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
			}
			fmt.Fprintf(os.Stderr, "gate: %s\n", v.Verdict)
			for _, r := range v.Reasons {
				fmt.Fprintf(os.Stderr, "  %s\n", r)
			}
			for _, r := range v.Rules {
				for _, f := range r.Flags {
					fmt.Fprintf(os.Stderr, "  note: %s\n", f)
				}
			}
			if v.Verdict != pipeline.VerdictPass {
				return exit(1, nil)
			}
			return nil
		},
	}
}
