package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline/formats/benchmarkskill"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/runner"
	"github.com/skillgate/skillgate/runner/spend"
)

func benchmarkSkillCommand() *cli.Command {
	return &cli.Command{
		Name:      "benchmark-skill",
		Usage:     "benchmark one skill's tests/ cases against no skill, as /benchmark-skill NAME does",
		ArgsUsage: "NAME [DIR]",
		Description: `Runs the cases of skill NAME in the suite folder DIR (default: the current
folder), a suite that reads a benchmark-skill tree (formats.benchmarkSkill):
every case under tests/ at the skill's path, each in a force-invoked
new-skill arm and a no-skill baseline over its paired trials, judged blind
per trial, gated by the efficacy policy. Like "skillgate run", it resumes
from the run folder and writes its reports there; then it writes the skill's
report, NAME.html (the Efficacy badge, run metadata, the per-arm cost
table, the cases) and its results model, NAME.json, under the repository's
git-ignored tests/.reports/.

A skill with no tests is reported and nothing runs.

Exit codes: 0 Efficacy green, 1 red, 2 incomplete or an error.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "run folder `DIR` (default: .skillgate/SUITE)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "cells to run at once"},
			&cli.Float64Flag{Name: "spend-cap", Usage: "start a cell or judge call only while its worst case fits under `USD` spent in the run folder"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return exit(2, fmt.Errorf("benchmark-skill takes NAME and an optional suite folder, got %d arguments", c.NArg()))
			}
			name, dir := c.Args().Get(0), c.Args().Get(1)
			if dir == "" {
				dir = "."
			}
			t, err := plan.ResolveTarget(dir, "", nil)
			if err != nil {
				return exit(2, err)
			}
			p := t.Plan
			if !slices.Contains(p.Formats, "benchmarkSkill") {
				return exit(2, fmt.Errorf("benchmark-skill %s: the suite in %s reads no benchmark-skill tree (formats.benchmarkSkill)", name, dir))
			}
			var ids, skills []string
			var caseMD string
			for _, pc := range p.Cases {
				skill, _ := report.BenchmarkSkillSkill(pc.ID)
				if !slices.Contains(skills, skill) {
					skills = append(skills, skill)
				}
				if skill == name {
					ids = append(ids, pc.ID)
					if caseMD == "" && len(pc.Sources) > 0 {
						caseMD = pc.Sources[0]
					}
				}
			}
			sk, known := p.Skills[name]
			if len(ids) == 0 || !known {
				return exit(2, fmt.Errorf("benchmark-skill %s: skill %s has no tests in the suite (skills with tests: %s)", name, name, strings.Join(skills, ", ")))
			}
			reports, err := benchmarkskill.ReportsFolder(t.SuiteDir, caseMD, sk.Path)
			if err != nil {
				return exit(2, fmt.Errorf("benchmark-skill %s: %w", name, err))
			}
			if err := spend.CheckCap(p, c.Float64("spend-cap")); err != nil {
				return exit(2, err)
			}
			out := c.String("out")
			if out == "" {
				out = filepath.Join(".skillgate", p.Suite.Name)
			}
			ctx, finish, stop := interruptible(c.Context)
			defer stop()
			fi, _ := os.Stderr.Stat()
			sum, r, err := runner.Evaluate(ctx, p, runner.Options{
				Out: out, SuiteDir: t.SuiteDir, Jobs: c.Int("jobs"), Cases: ids,
				SpendCapUSD: c.Float64("spend-cap"), Log: os.Stderr, Terminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
				Finish: finish,
			})
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprintf(os.Stderr, "%s\n", runner.DescribeSummary(sum, out, false))
			if r == nil {
				return exit(2, fmt.Errorf("benchmark-skill %s: the run gave no report", name))
			}
			files := map[string][]byte{}
			for _, ext := range []string{".json", ".html"} {
				b, err := os.ReadFile(filepath.Join(out, report.BenchmarkSkillDir, name+ext))
				if err != nil {
					return exit(2, fmt.Errorf("benchmark-skill %s: %w", name, err))
				}
				files[name+ext] = b
			}
			var res report.BenchmarkSkillResults
			if err := json.Unmarshal(files[name+".json"], &res); err != nil {
				return exit(2, fmt.Errorf("benchmark-skill %s: read results: %w", name, err))
			}
			written, err := benchmarkskill.WriteReports(reports, files)
			if err != nil {
				return exit(2, err)
			}
			if r.StandIn != "" {
				fmt.Fprintf(os.Stderr, "note: the agent is a %s\n", r.StandIn)
			}
			fmt.Fprintf(os.Stderr, "Efficacy %s: %d of %d cases pass\n", res.Efficacy, res.Passed, len(res.Cases))
			for _, bc := range res.Cases {
				flag := ""
				if bc.Review {
					flag = ", a loss to review"
				}
				fmt.Fprintf(os.Stderr, "  %s %s: %d wins, %d ties, %d losses%s\n", bc.Efficacy, bc.Case, bc.Wins, bc.Ties, bc.Losses, flag)
			}
			cwd, _ := os.Getwd()
			for _, w := range written {
				if rel, err := filepath.Rel(cwd, w); err == nil && !strings.HasPrefix(rel, "..") {
					w = rel
				}
				fmt.Fprintf(os.Stderr, "wrote %s\n", w)
			}
			switch res.Efficacy {
			case report.EfficacyGreen:
				return nil
			case report.EfficacyRed:
				return exit(1, nil)
			default:
				return exit(2, nil)
			}
		},
	}
}
