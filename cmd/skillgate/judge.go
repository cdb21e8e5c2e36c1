package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/skillgate/skillgate/runner/judge"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/urfave/cli/v2"
)

func judgeCommand() *cli.Command {
	return &cli.Command{
		Name:      "judge",
		Usage:     "rejudge a run's stored blinded packets with another judge",
		ArgsUsage: "OUT",
		Description: `Asks another judge about every blinded packet the run in folder OUT stored
(store/packets), with no rollout, no grading and no Docker. The other judge
is the run's own judge (from OUT/plan.json) with the flags' changes, or,
with --suite, the judge of the suite in DIR (the flags change that one).
Its templates are the run judge's unless the suite gives others.

Everything goes under OUT/rejudged/HEX, HEX the first 12 hex digits of the
other judge's digest: judge.json (which judge), judgements/KEY.json (one
rejudgement per stored packet KEY, and the adjudication of every rubric
cell the other judge disputes, as judge.adjudication says) and the
rejudged verdict.json, report.json, report.md, report.html and junit.xml,
built from the run's rollouts and deterministic grades plus the
rejudgements. The run's own judgements, grades and reports are never
touched. Rejudging again reuses the rejudgements stored and asks only for
the rest.

A run of a suite reading chrisbanes/skills files previews, as their
evaluator does: it prints the eligible packets and judge calls (--json: as
JSON) and calls nothing unless --execute is given; skillgate rejudged-report then builds their
scorecard from the rejudgements.

A command judge runs in the suite folder (--suite DIR, else the current
folder), and a relative program in its command is that folder's.

  skillgate judge .skillgate/demo --provider command --command './judge.sh'
  skillgate judge .skillgate/demo --suite suites/demo-strict-judge

Exits with the rejudged verdict's code (0 PASS, 1 FAIL, 2 INCOMPLETE), or 2
with no report when a packet the plan needs is not stored or a judge call
failed, naming which.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "provider", Usage: "the other judge's provider `P` (anthropic, openai, scripted, command)"},
			&cli.StringFlag{Name: "model", Usage: "the other judge's model `M`"},
			&cli.StringFlag{Name: "command", Usage: "a command judge's program and arguments `'CMD ...'` (split on spaces; implies --provider command; a relative program is the suite folder's)"},
			&cli.StringFlag{Name: "suite", Usage: "take the other judge from the suite folder `DIR` (a command judge runs there; default: the current folder)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "judge calls at once"},
			&cli.BoolFlag{Name: "execute", Usage: "make the judge calls of a chrisbanes suite's run (without it, a preview)"},
			&cli.BoolFlag{Name: "json", Usage: "print a chrisbanes suite's preview as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exit(2, fmt.Errorf("judge needs the run folder OUT"))
			}
			out := c.Args().First()
			if !c.Bool("execute") {
				if run, err := plan.ReadPlan(filepath.Join(out, store.FilePlan)); err == nil {
					if previewed, err := judgePreview(os.Stdout, run, out, c.Bool("json")); err != nil {
						return exit(2, err)
					} else if previewed {
						return nil
					}
				}
			}
			var base suite.Judge
			suiteDir := "."
			if dir := c.String("suite"); dir != "" {
				p, err := plan.CompileDir(dir)
				if err != nil {
					return exit(2, err)
				}
				if p.Judge == nil {
					return exit(2, fmt.Errorf("judge: the suite in %s has no judge", dir))
				}
				base, suiteDir = p.Judge.Judge, dir
			} else {
				p, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
				if err != nil {
					return exit(2, err)
				}
				if p.Judge == nil {
					return exit(2, fmt.Errorf("judge: the run in %s has no judge, so it stored no packets", out))
				}
				base = p.Judge.Judge
			}
			other := overrideJudge(base, c.String("provider"), c.String("model"), strings.Fields(c.String("command")))
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, dir, err := judge.Rejudge(ctx, out, other, judge.RejudgeOptions{SuiteDir: suiteDir, Jobs: c.Int("jobs"), Log: os.Stderr})
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprint(os.Stderr, describeVerdict(r, dir))
			return exitVerdict(r)
		},
	}
}

// overrideJudge is j with the flags' changes. A new provider drops the
// fields only the old one used; --command alone implies provider command.
func overrideJudge(j suite.Judge, provider, model string, command []string) suite.Judge {
	if provider == "" && len(command) > 0 {
		provider = "command"
	}
	if provider != "" && provider != j.Provider {
		j.Provider = provider
		if provider != "scripted" {
			j.Script = nil
		}
		if provider != "command" {
			j.Command = nil
		}
		if provider != "anthropic" && provider != "openai" {
			j.Upstream, j.CredentialEnv, j.UpstreamEnv, j.UpstreamDefault, j.Auth, j.Headers = "", "", "", "", "", nil
		}
	}
	if model != "" {
		j.Model = model
	}
	if len(command) > 0 {
		j.Command = command
	}
	return j
}
