package main

import (
	"fmt"
	"os"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/schema"
)

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:      "schema",
		Usage:     "vendor the schema into a suite's cue.mod for plain cue and editors",
		ArgsUsage: "[DIR]",
		Description: fmt.Sprintf(`Writes the schema and presets this skillgate embeds into
DIR/cue.mod/pkg/%s (default DIR: the current folder), and a
cue.mod/module.cue if there is none, so that plain "cue vet", "cue eval" and
editors resolve the suite's imports offline. skillgate itself needs none of
this: it always serves its own embedded schema.`, schema.ImportPath),
		Action: func(c *cli.Context) error {
			dir := c.Args().First()
			if dir == "" {
				dir = "."
			}
			files, err := suite.WriteSchema(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %d files under %s\n", len(files), dir)
			return nil
		},
	}
}
