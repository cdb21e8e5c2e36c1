package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/runner"
)

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:      "gate",
		Usage:     "paired gate of a candidate run against a baseline run",
		ArgsUsage: "BASELINE CANDIDATE",
		Description: `Compares one arm of two run folders the way SkillOpt's paired candidate gate
does. Each side is rebuilt from its plan.json and its store, exactly as
"skillgate report" rebuilds it, and nothing is written: the gate never reads
a report.json, since an edited file is not evidence.

It refuses two runs that do not pair, naming every difference on its own
line: benchmark (suite name), phase (the splits the arm covers), the target
skill (and, with --reference, the one file it may change), companion skills
by name and revision, agent provider and host, the models that actually
answered, the adapter (agent kind, image, configuration, CLI version), the
judge, the git revision, the case set (each case whose digest differs, with
the fields that differ), run keys and count, and metric families with their
sample counts. Which conditions apply is policy data (#Pairing in the
skillopt preset).

Then: no invalid run, no paired metric regresses by its direction (a rate
of failures such as hallucination or prohibitedOutcome regresses when it
rises), at least one strict improvement (unless --allow-equal), enough run
keys per case, and the target skill's bytes within the bound when both
install it (else sizeComparable=false). Thresholds come from the skillopt
preset in the schema.

Exit 0 pass, 1 fail, 2 error or runs that do not pair.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "baseline-arm", Usage: "the baseline run's `ARM` (default: its only arm)"},
			&cli.StringFlag{Name: "candidate-arm", Usage: "the candidate run's `ARM` (default: its only arm)"},
			&cli.StringFlag{Name: "target", Usage: "the target skill `NAME`, when the candidate arm changes more than one skill"},
			&cli.StringFlag{Name: "reference", Usage: "the one file `PATH` of the target skill the candidate may change (SkillOpt's selected reference)"},
			&cli.BoolFlag{Name: "allow-equal", Usage: "pass without a strict improvement"},
			&cli.BoolFlag{Name: "allow-single-run", Usage: "accept a single run key per case (smoke and debug only)"},
			&cli.BoolFlag{Name: "allow-longer", Usage: "drop the skill size bound"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exit(2, fmt.Errorf("gate needs the run folders BASELINE and CANDIDATE"))
			}
			var runs [2]verdict.GateRun
			for i, role := range []string{"baseline", "candidate"} {
				dir := c.Args().Get(i)
				st, err := os.Stat(dir)
				if err != nil {
					return exit(2, fmt.Errorf("read %s run: %w", role, err))
				}
				if !st.IsDir() {
					return exit(2, fmt.Errorf("read %s run %s: a file, not a run folder: the gate rebuilds each run from its plan.json and store, never from a report file, since an edited report is not evidence", role, dir))
				}
				p, r, err := runner.ReadRun(dir)
				if err != nil {
					return exit(2, fmt.Errorf("read %s run %s: %w", role, dir, err))
				}
				runs[i] = verdict.GateRun{Plan: p, Report: r}
			}
			opts, err := verdict.SkillOptGateOptions()
			if err != nil {
				return exit(2, err)
			}
			opts.BaselineArm, opts.CandidateArm = c.String("baseline-arm"), c.String("candidate-arm")
			opts.Target, opts.Reference = c.String("target"), c.String("reference")
			opts.AllowEqual, opts.AllowSingleRun, opts.AllowLonger = c.Bool("allow-equal"), c.Bool("allow-single-run"), c.Bool("allow-longer")
			v, err := verdict.Gate(runs[0], runs[1], opts)
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
			for _, r := range v.Rules {
				if r.Inference != nil {
					fmt.Fprintf(os.Stderr, "  %s, paired inference: %s\n", r.Rule, r.Inference)
				}
			}
			if v.Verdict != verdict.VerdictPass {
				return exit(1, nil)
			}
			return nil
		},
	}
}
