package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "scaffold a new suite that passes vet at once",
		ArgsUsage: "[DIR]",
		Description: `Writes a suite into DIR (default: the current folder): suite.cue, one case in
cases.cue, a fixture folder, a skill stub, and the vendored schema under
cue.mod for plain cue and editors. Refuses a folder that already holds CUE
files.`,
		Action: func(c *cli.Context) error {
			dir := c.Args().First()
			if dir == "" {
				dir = "."
			}
			files, err := pipeline.Scaffold(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote suite %s in %s (%d files); next: skillgate vet %s && skillgate plan %s\n",
				pipeline.SuiteName(dir), dir, len(files), dir, dir)
			return nil
		},
	}
}
