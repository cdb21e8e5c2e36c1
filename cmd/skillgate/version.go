package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline"
)

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print skillgate's version",
		Description: `Prints the version of this skillgate: its module version, else the VCS
revision it was built from ("+dirty" when the work tree had changes), else
"(devel)". Every rollout records it, and verdict.json names it as
harness_version.`,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exit(2, fmt.Errorf("version takes no arguments"))
			}
			printVersion(c)
			return nil
		},
	}
}

// printVersion writes "skillgate VERSION" to stdout, for the command and
// for --version alike.
func printVersion(c *cli.Context) {
	fmt.Fprintf(c.App.Writer, "skillgate %s\n", pipeline.Version())
}
