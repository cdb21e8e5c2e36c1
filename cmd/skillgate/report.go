package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/runner"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "rebuild a run's verdict and reports from stored results",
		ArgsUsage: "OUT",
		Description: `Rebuilds verdict.json, report.json, report.md, report.html and junit.xml in
the run folder OUT from its plan and stored results alone: no Docker, no
model. The same results always give byte-identical reports.

Exits with the verdict's code: 0 PASS, 1 FAIL, 2 INCOMPLETE, 3 calibration
failed.`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exit(2, fmt.Errorf("report needs the run folder OUT"))
			}
			r, err := runner.Report(c.Args().First())
			if err != nil {
				return exit(2, err)
			}
			fmt.Fprint(os.Stderr, describeVerdict(r, c.Args().First()))
			return exitVerdict(r)
		},
	}
}
