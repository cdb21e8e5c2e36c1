package main

import (
	"encoding/json"
	"fmt"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner"

	"github.com/urfave/cli/v2"
)

func powerCommand() *cli.Command {
	return &cli.Command{
		Name:      "power",
		Usage:     "say how many cases and trials would detect a difference, before paying for a run",
		ArgsUsage: "[DIR|PLAN]",
		Description: `Without a suite, answers the textbook paired question: how many independent
pairs detect a difference p01 − p10, where p10 is the chance that a pair is
won by the baseline only and p01 by the skill only (Connor 1987), and how
many the exact McNemar mid-p test the verdict uses needs.

With a suite folder DIR or a PLAN file, says for each comparison its policy
makes the smallest difference the plan's cases × trials detect, and how many
cases would detect the rule's own threshold, for the case-level test the
verdict makes. The chance that a trial pair disagrees is p10 + p01 when
given; else, with --from RUN, the figures are read from that run folder's
stored results: each comparison's per-case rates (p10 and p01 of every case)
and their spread across cases (the within-case correlation), each simulated
case drawn from the run's cases (its plan is the one asked about when no DIR
or PLAN is given); else the most favourable (the baseline never wins a pair).
Each comparison says which it was read at.`,
		Flags: []cli.Flag{
			&cli.Float64Flag{Name: "p10", Usage: "chance that a pair is won by the baseline only"},
			&cli.Float64Flag{Name: "p01", Usage: "chance that a pair is won by the skill only"},
			&cli.Float64Flag{Name: "uplift", Usage: "difference to detect, p01 − p10 (sets --p01 from --p10)"},
			&cli.Float64Flag{Name: "alpha", Usage: "two-sided level of the test (default: the suite policy's level, else the schema's, 0.05)"},
			&cli.Float64Flag{Name: "power", Usage: "power wanted (default: the suite policy's, else the schema's, 0.8)"},
			&cli.StringFlag{Name: "from", Usage: "read each comparison's per-case rates and within-case correlation from the run folder `RUN`'s stored results"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Before: shortLived,
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return exit(2, fmt.Errorf("power takes one suite folder or plan file, got %d arguments", c.NArg()))
			}
			d, err := powerDesign(c)
			if err != nil {
				return exit(2, err)
			}
			if c.NArg() == 1 || c.IsSet("from") {
				// Levels not given are the policy's (PlanPower reads them).
				a := verdict.PowerAssumptions{Alpha: d.Alpha, Power: d.Power}
				if c.IsSet("p10") || c.IsSet("p01") {
					a.Discordance = d.P10 + d.P01
				}
				var p *plan.Plan
				if c.IsSet("from") {
					rp, rep, err := runner.ReadRun(c.String("from"))
					if err != nil {
						return err
					}
					p, a.FromRun, a.Run = rp, verdict.RunCaseRates(rp, rep), c.String("from")
				}
				if c.NArg() == 1 {
					var err error
					if p, err = plan.PlanOf(c.Args().First(), ""); err != nil {
						return err
					}
				}
				return printPower(c, verdict.PlanPower(p, a), verdict.PlanPowerText)
			}
			if !c.IsSet("p10") || !c.IsSet("p01") && !c.IsSet("uplift") {
				return exit(2, fmt.Errorf("power: give a suite or plan, or --p10 with --p01 or --uplift"))
			}
			pp, err := inference.PairsFor(d)
			if err != nil {
				return exit(2, err)
			}
			return printPower(c, pp, inference.PairsPower.Text)
		},
	}
}

// powerDesign reads the flags, --uplift setting --p01 from --p10.
func powerDesign(c *cli.Context) (inference.Design, error) {
	d := inference.Design{P10: c.Float64("p10"), P01: c.Float64("p01"), Alpha: c.Float64("alpha"), Power: c.Float64("power")}
	if c.NArg() == 0 && !c.IsSet("from") {
		// The textbook question, with no policy: the schema's levels.
		alpha, power := verdict.DefaultLevels()
		if !c.IsSet("alpha") {
			d.Alpha = alpha
		}
		if !c.IsSet("power") {
			d.Power = power
		}
	}
	if c.IsSet("uplift") {
		want := d.P10 + c.Float64("uplift")
		if c.IsSet("p01") && !inference.Near(want, d.P01) {
			return d, fmt.Errorf("power: --uplift %g is not --p01 − --p10 (%g)", c.Float64("uplift"), d.P01-d.P10)
		}
		d.P01 = want
	}
	return d, nil
}

// printPower prints v as JSON with --json, else as text says it.
func printPower[T any](c *cli.Context, v T, text func(T) string) error {
	if c.Bool("json") {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(c.App.Writer, "%s\n", b)
		return nil
	}
	fmt.Fprint(c.App.Writer, text(v))
	return nil
}
