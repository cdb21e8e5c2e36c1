package main

import (
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/urfave/cli/v2"
)

func vetCommand() *cli.Command {
	return &cli.Command{
		Name:      "vet",
		Usage:     "validate suites; silent on success",
		ArgsUsage: "[DIR...]",
		Description: `Loads each suite folder (default: the current folder) as a CUE package,
unifies it with #Suite, validates it concretely, then checks what CUE cannot:
skill and fixture folders exist inside the repository, every SKILL.md has a
name and a description, arms and routing expectations name defined skills,
regular expressions compile and case IDs are unique across files.
Every problem is printed with its positions; nothing is printed on success.
Exits 0 when every suite is valid, 1 otherwise.`,
		Before: shortLived,
		Action: func(c *cli.Context) error {
			dirs := c.Args().Slice()
			if len(dirs) == 0 {
				dirs = []string{"."}
			}
			return suite.VetSuites(dirs)
		},
	}
}
