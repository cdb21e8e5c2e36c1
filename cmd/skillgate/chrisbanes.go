package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner"
	"github.com/skillgate/skillgate/runner/judge"
	"github.com/skillgate/skillgate/runner/store"
)

// chrisbanesFormat is the suite field of chrisbanes/skills' files.
const chrisbanesFormat = "chrisbanes"

func regradeCommand() *cli.Command {
	return &cli.Command{
		Name:      "regrade",
		Usage:     "re-apply a run's deterministic checks as the suite has them now, no model call",
		ArgsUsage: "OUT",
		Description: `chrisbanes/skills' regrade: after a validator or an expectations.json
changed, grades the stored rollouts of the run in folder OUT again with the
suite's checks as they are now (the suite in --suite DIR, by default the
run's own suite folder), keeping each cell's original judgement. No agent and
no model is called; run: checks run in network-less containers as in a run.
Nothing stored is changed: the rollouts, packets, judgements and original
grades stay as they were (new grades are stored under their own keys).

Writes OUT/regraded/results.json, scorecard.md and audit-queue.json in their
shapes. A cell whose rollout the suite's change alters (its prompt, fixture,
skills) cannot be regraded: it is named and left out.

Exits 0, or 2 with nothing written when the run or the suite cannot be read.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "suite", Usage: "the suite folder `DIR` as it is now (default: the run's own, from OUT/plan.json)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "cells to grade at once"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exit(2, fmt.Errorf("regrade needs the run folder OUT"))
			}
			out := c.Args().First()
			dir, err := runSuiteDir(out, c.String("suite"))
			if err != nil {
				return exit(2, err)
			}
			p, err := plan.CompileDir(dir)
			if err != nil {
				return exit(2, err)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			g, err := runner.RegradeRun(ctx, out, p, runner.Options{SuiteDir: dir, Jobs: c.Int("jobs"), Log: os.Stderr})
			if err != nil {
				return exit(2, err)
			}
			for _, id := range g.NeedRollout {
				fmt.Fprintf(os.Stderr, "regrade: %s needs a new rollout (what the agent does changed), left out\n", id)
			}
			dest := filepath.Join(out, report.DirChrisbanesRegraded)
			records := report.ChrisbanesRegraded(p, g.Report, g.Before, g.After)
			if err := report.WriteChrisbanes(dest, records, p, g.Verdict.Rules); err != nil {
				return exit(2, err)
			}
			fmt.Fprintf(os.Stderr, "regraded %d cells\n", len(records))
			fmt.Println(filepath.Join(dest, report.FileChrisbanesScorecard))
			return nil
		},
	}
}

func rejudgedReportCommand() *cli.Command {
	return &cli.Command{
		Name:      "rejudged-report",
		Usage:     "build a run's scorecard from its rejudgements",
		ArgsUsage: "OUT",
		Description: `chrisbanes/skills' rejudged-report: once skillgate judge has rejudged the
run in folder OUT, combines each rubric cell's rejudgement with the run's
immutable rollouts and deterministic grades, and writes
OUT/rejudged/results.json, scorecard.md and audit-queue.json. The run's own
reports are never touched.

It fails rather than guess: a packet the plan needs that is not stored, a
packet with no rejudgement, and a packet with several (rejudged by more than
one other judge) are each named, and nothing is written.

Exits 0, or 2 with nothing written.`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exit(2, fmt.Errorf("rejudged-report needs the run folder OUT"))
			}
			out := c.Args().First()
			p, r, ev, err := runner.RejudgedRun(out)
			if err != nil {
				return exit(2, err)
			}
			dest := filepath.Join(out, judge.DirRejudged)
			records := report.ChrisbanesRecords(p, r, ev)
			if err := report.WriteChrisbanes(dest, records, p, r.Verdict.Rules); err != nil {
				return exit(2, err)
			}
			fmt.Fprintf(os.Stderr, "rejudged report of %d cells\n", len(records))
			fmt.Println(filepath.Join(dest, report.FileChrisbanesScorecard))
			return nil
		},
	}
}

// runSuiteDir is the suite folder a command on run folder out reads: dir
// when given, else the run plan's suite folder under the repository that
// holds the current folder.
func runSuiteDir(out, dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	p, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
	if err != nil {
		return "", err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(suite.RepositoryRoot(wd), filepath.FromSlash(p.Suite.Dir)), nil
}

// judgePreview is chrisbanes/skills' judge without --execute: how many of
// the packets the run's plan needs are stored and so how many judge calls
// rejudging makes, as their evaluator prints it (as JSON with asJSON), and
// no call. It previews only the run of a suite reading their files.
func judgePreview(w io.Writer, p *plan.Plan, out string, asJSON bool) (bool, error) {
	if !slices.Contains(p.Formats, chrisbanesFormat) {
		return false, nil
	}
	cases := p.CasesByID()
	st := &store.Store{Dir: out}
	seen := map[string]bool{}
	for _, c := range p.Cells {
		key := c.Grade.Encoded()
		if len(cases[c.Case].Rubric) == 0 || seen[key] {
			continue
		}
		if _, err := os.Stat(st.PacketPath(key)); err == nil {
			seen[key] = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return true, err
		}
	}
	n := len(seen)
	if asJSON {
		fmt.Fprintf(w, "{\n  \"execute\": false,\n  \"judge_calls\": %d,\n  \"packet_count\": %d\n}\n", n, n)
	} else {
		fmt.Fprintf(w, "%d eligible persisted packets; %d planned judge calls\n", n, n)
	}
	return true, nil
}
