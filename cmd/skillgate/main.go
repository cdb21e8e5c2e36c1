// Command skillgate measures whether an agent skill makes a coding agent
// better, and gates a change to that skill on evidence.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline"
)

// exitError carries an exit code and an optional message to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// exit wraps err so that main exits with code after printing it.
func exit(code int, err error) error { return &exitError{code: code, err: err} }

func newApp() *cli.App {
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print skillgate's version"}
	cli.VersionPrinter = printVersion
	app := &cli.App{
		Name:  "skillgate",
		Usage: "prove that an agent skill helps, with evidence",
		Description: `skillgate compiles suites written in CUE into a content-addressed run plan,
runs every cell (case × arm × trial) in a network-less Docker container,
grades the results, and gives a verdict from a gate policy written as data.`,
		Version:              pipeline.Version(),
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		Commands: []*cli.Command{
			vetCommand(),
			planCommand(),
			powerCommand(),
			diffCommand(),
			mutateCommand(),
			initCommand(),
			importCommand(),
			benchmarkSkillCommand(),
			schemaCommand(),
			runCommand(),
			runBenchmarkCommand(),
			reportCommand(),
			mergeCommand(),
			judgeCommand(),
			regradeCommand(),
			rejudgedReportCommand(),
			gateCommand(),
			auditCommand(),
			exportCommand(),
			unpackCommand(),
			skillEvalCommand(),
			gcCommand(),
			cacheCommand(),
			imageCommand(),
			versionCommand(),
		},
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    usageError,
		CommandNotFound: commandNotFound,
	}
	for _, cmd := range app.Commands {
		cmd.HideHelpCommand = true
		cmd.OnUsageError = usageError
	}
	return app
}

// shortLived tunes the garbage collector for a command that evaluates CUE
// and exits within seconds: collecting only past a soft memory limit saves
// a third of vet's time; a suite whose live heap nears the limit gets Go's
// default pacing back (shortLivedHeap). A GOGC or GOMEMLIMIT the user set
// wins.
func shortLived(*cli.Context) error {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		shortLivedHeap(softHeapLimit)
	}
	return nil
}

// usageError reports a command-line mistake in one line on stderr, exit 2,
// without printing the help to stdout, which is for data. An unknown flag
// is named as the user wrote it, with the closest one the command has.
func usageError(c *cli.Context, err error, _ bool) error {
	name, flags := commandOf(c)
	if typo, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		if near := closest(typo, names); near != "" {
			return exit(2, fmt.Errorf("%s: unknown flag %s; did you mean %s?", name, dashed(typo), dashed(near)))
		}
		return exit(2, fmt.Errorf("%s: unknown flag %s (see %s --help)", name, dashed(typo), name))
	}
	return exit(2, fmt.Errorf("%s: %w (see %s --help)", name, err, name))
}

// commandOf is the command a context runs, as the user types it, and its
// flags: the app's own at the top level, whose context names the app.
func commandOf(c *cli.Context) (string, []cli.Flag) {
	name := "skillgate"
	if c.Command == nil || c.Command.Name == "" || c.App != nil && c.Command.Name == c.App.Name {
		if c.App != nil {
			return name, c.App.Flags
		}
		return name, nil
	}
	for _, p := range c.Lineage() {
		if p.Command != nil && p.Command.Name != "" && p.Command != c.Command && (c.App == nil || p.Command.Name != c.App.Name) {
			name += " " + p.Command.Name
		}
	}
	return name + " " + c.Command.Name, c.Command.Flags
}

// commandNotFound reports an unknown command or subcommand, with the
// closest one there is, and exits 2.
func commandNotFound(c *cli.Context, typo string) {
	name, _ := commandOf(c)
	cmds := c.App.Commands
	if name != "skillgate" && c.Command != nil {
		cmds = c.Command.Subcommands
	}
	var names []string
	for _, cmd := range cmds {
		if !cmd.Hidden {
			names = append(names, cmd.Names()...)
		}
	}
	if near := closest(typo, names); near != "" {
		fmt.Fprintf(os.Stderr, "%s: unknown command %q; did you mean %s?\n", name, typo, near)
	} else {
		fmt.Fprintf(os.Stderr, "%s: unknown command %q (see %s --help)\n", name, typo, name)
	}
	os.Exit(2)
}

func main() { os.Exit(run(os.Args)) }

// run executes the CLI and turns errors into one message and an exit code.
func run(args []string) int {
	app := newApp()
	err := app.Run(flagsFirst(app, args))
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		cwd, _ := os.Getwd()
		fmt.Fprint(os.Stderr, suite.PrintError(err, cwd))
	}
	return code
}
