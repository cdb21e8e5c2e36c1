package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/urfave/cli/v2"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "scaffold a suite whose first run passes, offline",
		ArgsUsage: "[DIR]",
		Description: `Writes a suite into DIR (default: the current folder) whose first
"skillgate run DIR" passes its policy offline, in seconds: suite.cue, a task
case and a no-change control in cases.cue, a fixture, a .gitignore for run
folders, and the vendored schema under cue.mod for plain cue and editors.

Its agent is a labelled stand-in (a shell script, no model) that opens the
skill when the prompt names it, so the advisory policy's rules pass honestly;
suite.cue says how to put a real agent in its place.

With --skill PATH the suite evaluates your own skill folder where it is (read
from its SKILL.md front matter; never copied); without, it gets a stub skill
in DIR/skills/example. Refuses a folder that already holds CUE files, a stub
beside a skill the folder holds, and a --skill folder without a valid SKILL.md.

With --noise-floor the suite also has a replicate of the forced arm (the same
skill the same way, its own cells), so every run reports its noise floor: how
often a trial's outcome differs between the two, case by case, and how likely
the verdict is to flip between two identical runs.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "skill", Usage: "evaluate the skill folder `PATH` (with its SKILL.md) instead of a stub"},
			&cli.BoolFlag{Name: "noise-floor", Usage: "add a replicate of the forced arm, so every run measures its noise floor"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return exit(2, fmt.Errorf("init takes one suite folder, got %d arguments", c.NArg()))
			}
			dir := c.Args().First()
			if dir == "" {
				dir = "."
			}
			res, err := suite.Scaffold(dir, suite.ScaffoldOptions{Skill: c.String("skill"), RunDir: ".", NoiseFloor: c.Bool("noise-floor")})
			if err != nil {
				return err
			}
			skill := "a stub skill in " + res.SkillPath
			if c.String("skill") != "" {
				skill = fmt.Sprintf("the skill %s at %s", res.Skill, res.SkillPath)
			}
			replicate := ""
			if c.Bool("noise-floor") {
				replicate = ", a replicate of the forced arm for the noise floor"
			}
			fmt.Fprintf(os.Stderr, "wrote suite %s in %s: %s, a stand-in agent (no model), a task case and a no-change control%s; git ignores its run folders (.skillgate/)\n",
				res.Suite, dir, skill, replicate)
			fmt.Fprintf(os.Stderr, "next: skillgate run %s\n", shellQuote(dir))
			return nil
		},
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
