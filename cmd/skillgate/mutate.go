package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/mutate"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/runner"
)

func mutateCommand() *cli.Command {
	return &cli.Command{
		Name:      "mutate",
		Usage:     "break the suite's skills on purpose and measure whether its cases notice",
		ArgsUsage: "[DIR]",
		Description: `Derives mutants from each skill the suite's arms install: copies of the
skill with one part broken (each top-level section of SKILL.md deleted in
turn, each reference file removed, the body emptied, the description
blanked, swapped with another skill's or cut to the agent's budget, a
one-line rule inverted), each a whole skill folder named by what was done.
The suite's mutants field chooses the operators and adds hand-written
mutants (folders).

Each mutant runs as a copy of the arms that install its skill (content
mutants in the forced arms, description mutants in the automatic ones, as
mutants.arms says), beside those arms, on the suite's cases. A mutant is
killed when its arm passes less often than the skill's, the paired,
case-clustered 95% interval of the difference above 0; the kill rate is
the share killed. A surviving mutant is a part of the skill the cases do
not measure: "dead weight" when its arm did as well as the skill's, else
"survived" (some loss, within the noise). The ablation table gives, per
section of SKILL.md, the pass rate lost without it.

With the suite's policy.sequential the cells run in rounds and each mutant
stops once its anytime-valid test kills it (the skill's arm better, its
e-value at 1/α) or can no longer: its outcome is then that test's, and
the cells no mutant needs are never run (see docs/mutants.md).

The run folder (default .skillgate/SUITE-mutants, inside the repository)
holds the mutants' folders and an ordinary run: a second mutate resumes it,
and cells whose inputs did not change are never run again. With --dry-run
it lists the mutants with their diffs from the skill and what would run.

Exit codes: 0 PASS, 1 FAIL (the policy's adequacy rule: kill rate below
minKillRate), 2 INCOMPLETE or bad input.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "run folder `DIR` inside the repository (default: .skillgate/SUITE-mutants)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "cells to run at once"},
			&cli.StringSliceFlag{Name: "operator", Usage: "apply only operator `OP` (repeatable; default: the suite's mutants.operators)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "list the mutants with their diffs and what would run; start nothing"},
			&cli.BoolFlag{Name: "stand-in", Usage: "run offline with labelled stand-ins for the agent's model and the judge, as run --stand-in"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return exit(2, fmt.Errorf("mutate takes one suite folder, got %d arguments", c.NArg()))
			}
			dir := c.Args().First()
			if dir == "" {
				dir = "."
			}
			s, err := suite.LoadSuite(dir)
			if err != nil {
				return exit(2, err)
			}
			if c.Bool("stand-in") {
				s.UseStandIn()
			}
			ops, err := mutantOperators(s, c.StringSlice("operator"))
			if err != nil {
				return exit(2, err)
			}
			skills, ms, err := deriveMutants(s, ops)
			if err != nil {
				return exit(2, err)
			}
			out := c.String("out")
			if out == "" {
				out = defaultMutantsFolder(s)
			}
			if out, err = filepath.Abs(out); err != nil {
				return exit(2, fmt.Errorf("resolve run folder: %w", err))
			}
			if !suite.Within(s.Root, out) {
				return exit(2, fmt.Errorf("mutate: run folder %s is outside the repository %s: the mutants are skill folders the plan reads from the repository; give --out inside it", out, s.Root))
			}
			if c.Bool("dry-run") {
				p, err := plannedMutants(s, ms, out)
				if err != nil {
					return exit(2, err)
				}
				describeMutants(os.Stdout, s, skills, ms)
				fmt.Fprintf(os.Stdout, "\nplan %s: %s", p.Digest, p.Summary())
				fmt.Fprint(os.Stdout, verdict.SequentialPlanLine(p))
				return nil
			}
			p, err := mutantPlan(s, ms, out)
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprintf(os.Stderr, "%d mutants of %s in %d arms: %d cells\n", len(ms), strings.Join(skillKeys(skills), ", "), len(p.Mutants), len(p.Cells))
			ctx, finish, stop := interruptible(c.Context)
			defer stop()
			fi, _ := os.Stderr.Stat()
			sum, rep, err := runner.Evaluate(ctx, p, runner.Options{
				Out: out, SuiteDir: s.Dir, Jobs: c.Int("jobs"), Log: os.Stderr,
				Terminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0, Finish: finish,
			})
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprintf(os.Stderr, "%s\n", runner.DescribeSummary(sum, out, false))
			if rep == nil {
				return nil
			}
			fmt.Fprint(os.Stderr, report.AdequacyText(rep.Verdict.Adequacy))
			fmt.Fprint(os.Stderr, describeVerdict(rep, out))
			return exitVerdict(rep)
		},
	}
}

// mutantPlan writes each mutant's folder under out/mutants/SKILL/ID and
// compiles the plan of their run.
func mutantPlan(s *suite.Suite, ms []mutate.Mutant, out string) (*plan.Plan, error) {
	dirs := map[string]string{}
	for _, m := range ms {
		d := filepath.Join(out, "mutants", m.Skill, m.ID)
		if err := mutate.Write(m, d); err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(s.Dir, d)
		if err != nil {
			return nil, fmt.Errorf("mutate: %w", err)
		}
		dirs[mutate.SkillKey(m)] = filepath.ToSlash(rel)
	}
	return mutate.Plan(s, ms, dirs, nil)
}

// mutantOperators are the operators a mutate applies: those named on the
// command line, checked, else the suite's.
func mutantOperators(s *suite.Suite, named []string) ([]string, error) {
	if len(named) == 0 {
		return s.Mutants.Operators, nil
	}
	for _, op := range named {
		if !slices.Contains(mutate.Operators, op) {
			return nil, fmt.Errorf("mutate: unknown operator %q; want one of %s", op, strings.Join(mutate.Operators, ", "))
		}
	}
	return named, nil
}

// deriveMutants derives the mutants of every skill an arm installs (the
// router aside), then adds the suite's hand-written ones.
func deriveMutants(s *suite.Suite, ops []string) (map[string]mutate.Skill, []mutate.Mutant, error) {
	p, err := plan.Compile(s)
	if err != nil {
		return nil, nil, err
	}
	skills := map[string]mutate.Skill{}
	others := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(s.Skills)) {
		dir, err := s.Resolve(s.Skills[key].Path)
		if err != nil {
			return nil, nil, fmt.Errorf("mutate: skill %s: %w", key, err)
		}
		sk, err := mutate.ReadSkill(key, dir, p.Skills[key].Tree)
		if err != nil {
			return nil, nil, err
		}
		skills[key] = sk
		others[key] = mutate.Description(sk)
	}
	var ms []mutate.Mutant
	for _, key := range slices.Sorted(maps.Keys(skills)) {
		if key == s.Router || !installed(s, key) {
			continue
		}
		d, err := mutate.Derive(skills[key], mutate.Options{Operators: ops, Others: others, Budgets: map[string]int{s.Agent.Kind: s.Mutants.DescriptionBudget}})
		if err != nil {
			return nil, nil, err
		}
		ms = append(ms, d...)
	}
	for _, id := range slices.Sorted(maps.Keys(s.Mutants.Folders)) {
		f := s.Mutants.Folders[id]
		if _, ok := skills[f.Skill]; !ok {
			return nil, nil, fmt.Errorf("mutate: mutants.folders.%s: the suite has no skill %s", id, f.Skill)
		}
		dir, err := s.Resolve(f.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("mutate: mutants.folders.%s: %w", id, err)
		}
		m, err := mutate.ReadFolder(id, f.Skill, dir)
		if err != nil {
			return nil, nil, err
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, nil, fmt.Errorf("mutate: no mutant: no arm installs a skill the operators %s change (and mutants.folders is empty)", strings.Join(ops, ", "))
	}
	return skills, ms, nil
}

// installed says whether an arm of s installs skill key.
func installed(s *suite.Suite, key string) bool {
	for _, a := range s.Arms {
		if slices.Contains(a.Skills, key) {
			return true
		}
	}
	return false
}

// describeMutants lists the mutants, the arms each would run in, the
// cells a run would plan, and each mutant's diff from its skill.
func describeMutants(w io.Writer, s *suite.Suite, skills map[string]mutate.Skill, ms []mutate.Mutant) {
	width := 0
	for _, m := range ms {
		width = max(width, len(m.ID))
	}
	sources := map[string]bool{}
	copies := 0
	for _, m := range ms {
		arms := mutate.SourceArms(s, m)
		for _, a := range arms {
			sources[a] = true
		}
		copies += len(arms)
		fmt.Fprintf(w, "%s %-*s  %s  %s  (arms %s)\n", plan.Short(m.Tree.Digest), width, m.ID, m.Skill, m.What, strings.Join(arms, ", "))
	}
	fmt.Fprintf(w, "%d mutants: %d mutant arms beside %s of the skill's (the baseline is not rerun)\n", len(ms), copies, plan.Plural(len(sources), "arm"))
	for _, m := range ms {
		fmt.Fprintf(w, "\n== %s (%s)\n%s", m.ID, m.What, mutate.Diff(skills[m.Skill], m))
	}
}

// skillKeys are the keys of skills, sorted.
func skillKeys(skills map[string]mutate.Skill) []string { return slices.Sorted(maps.Keys(skills)) }
