package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline/formats/runbenchmark"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner"
	"github.com/skillgate/skillgate/runner/contract"
)

func runBenchmarkCommand() *cli.Command {
	return &cli.Command{
		Name:      "run-benchmark",
		Usage:     "run run-benchmark's definitions and write its reports beside them",
		ArgsUsage: "[SKILL...]",
		Description: `Runs the scenarios of each named skill's definition (a suite reading
run-benchmark's specs/benchmarks/<skill>.yaml, see "skillgate import
run-benchmark"), or of every definition with --all, with and without the skill,
and writes run-benchmark's own reports into the reports/ folder beside each
definition: benchmark-<skill>.json and BENCHMARK-<skill>-<YYYY-MM-DD>.yaml.

Each scenario's pass rate is its passing runs over its valid runs; each split's
pass@k is the weighted mean of its scenarios' rates, in each mode, and
Δ = with − without, rounded as the suite's passAtK rule says.

--baseline pins the results as the baseline (baseline-<skill>.json and
BASELINE-<skill>.yaml). Without it, a pinned baseline is compared with:
IMPROVED, STABLE, or REGRESSION ("do NOT ship") on the validation Δ. The
validation Δ is then gated as the passAtK rule says: below failBelow blocks
("do NOT ship"), below warnBelow warns.

Cells run as "skillgate run" runs them, into the run folder --out, and resume
from it.

Exit codes: 0 every skill passes, 1 a Δ below the gate or a regression from the
baseline, 2 a scenario without a valid result in a mode, or a usage error.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "suite", Value: ".", Usage: "the suite folder `DIR` reading the definitions"},
			&cli.BoolFlag{Name: "all", Usage: "run every definition the suite reads"},
			&cli.BoolFlag{Name: "baseline", Usage: "pin the results as each skill's baseline"},
			&cli.StringFlag{Name: "out", Usage: "run folder `DIR` (default: .skillgate/SUITE)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "cells to run at once"},
			&cli.StringFlag{Name: "date", Usage: "the run date `YYYY-MM-DD` the reports carry (default: today, UTC)"},
		},
		Action: func(c *cli.Context) error {
			date := c.String("date")
			if date == "" {
				date = time.Now().UTC().Format(time.DateOnly)
			} else if _, err := time.Parse(time.DateOnly, date); err != nil {
				return exit(2, fmt.Errorf("read --date: want YYYY-MM-DD, got %q", date))
			}
			t, err := plan.ResolveTarget(c.String("suite"), "", nil)
			if err != nil {
				return exit(2, err)
			}
			defs, err := contract.RunBenchmarkSkills(t.Plan, c.String("suite"), c.Args().Slice(), c.Bool("all"))
			if err != nil {
				return exit(2, err)
			}
			var cases []string
			for _, d := range defs {
				cases = append(cases, d.Cases...)
			}
			opts, err := report.RunBenchmarkPlanOptions(t.Plan, date)
			if err != nil {
				return exit(2, err)
			}
			out := c.String("out")
			if out == "" {
				out = filepath.Join(".skillgate", t.Plan.Suite.Name)
			}
			if err := runbenchmark.IgnoreRunFolder(out); err != nil {
				return exit(2, err)
			}
			ctx, finish, stop := interruptible(c.Context)
			defer stop()
			sum, rep, err := runner.Evaluate(ctx, t.Plan, runner.Options{
				Out: out, SuiteDir: t.SuiteDir, Jobs: c.Int("jobs"), Cases: cases, Log: os.Stderr, Finish: finish,
			})
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprintf(os.Stderr, "%s\n", runner.DescribeSummary(sum, out, false))
			if rep == nil {
				return exit(2, fmt.Errorf("run-benchmark: the run gave no report"))
			}
			// The source exits per skill: each skill's verdict decides its
			// Δ line and its exit code, the worst of them the command's.
			code := 0
			for _, b := range report.RunBenchmarks(rep, opts) {
				i := slices.IndexFunc(defs, func(d report.RunBenchmarkDefinition) bool { return d.Skill == b.Skill })
				if i < 0 {
					continue
				}
				dir := filepath.Join(t.SuiteDir, filepath.Dir(filepath.FromSlash(defs[i].File)), "reports")
				outcome, line, err := report.WriteRunBenchmark(dir, b, c.Bool("baseline"))
				if err != nil {
					return exit(2, err)
				}
				paths := report.RunBenchmarkPaths(dir, b)
				fmt.Printf("Wrote %s\nWrote %s\n", paths.YAML, paths.JSON)
				if c.Bool("baseline") {
					fmt.Printf("Pinned baseline for %s\n", b.Skill)
				}
				if line != "" {
					fmt.Println(line)
				}
				v := verdict.SkillVerdict(t.Plan, rep, defs[i].Cases, outcome)
				if gate := report.RunBenchmarkGateLine(b, v); gate != "" {
					fmt.Println(gate)
				}
				code = max(code, v.ExitCode)
				var pending []string
				for _, sc := range b.Scenarios {
					if sc.Pending {
						pending = append(pending, sc.ID)
					}
				}
				if len(pending) > 0 {
					fmt.Fprintf(os.Stderr, "%s: no valid result in a mode for %s (left out of pass@k)\n", b.Skill, strings.Join(pending, ", "))
				}
			}
			if code != 0 {
				return exit(code, nil)
			}
			return nil
		},
	}
}
