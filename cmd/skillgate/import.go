package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/skillgate/skillgate/pipeline/formats"

	"github.com/urfave/cli/v2"
)

func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "write a suite that reads another system's own files",
		ArgsUsage: "FORMAT PATH",
		Description: `Writes into DIR a small suite that names the files at PATH in FORMAT's own
shape, so they stay the source of truth: vet checks them with positions in
those files, plan and diff see every edit to them, and nothing is copied that
could drift. FORMAT is one of: ` + strings.Join(formats.Names(), ", ") + `.

Refuses a DIR that already holds a suite.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the suite into folder `DIR`", Required: true},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exit(2, fmt.Errorf("import takes FORMAT and PATH, got %d arguments", c.NArg()))
			}
			f, err := formats.Lookup(c.Args().Get(0))
			if err != nil {
				return exit(2, fmt.Errorf("import: %w", err))
			}
			out := c.String("output")
			files, err := f.Import(c.Args().Get(1), out)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote a %s suite in %s (%s) reading %s\n", f.Name, out, strings.Join(files, ", "), c.Args().Get(1))
			fmt.Fprintf(os.Stderr, "next: skillgate vet %s\n", shellQuote(out))
			return nil
		},
	}
}
