// Command skillgate measures whether an agent skill makes a coding agent
// better, and gates a change to that skill on evidence.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

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
			diffCommand(),
			initCommand(),
			schemaCommand(),
			runCommand(),
			reportCommand(),
			judgeCommand(),
			gateCommand(),
			auditCommand(),
			gcCommand(),
			imageCommand(),
			versionCommand(),
		},
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageError,
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(os.Stderr, "skillgate: unknown command %q; see skillgate --help\n", name)
			os.Exit(2)
		},
	}
	for _, cmd := range app.Commands {
		cmd.HideHelpCommand = true
		cmd.OnUsageError = usageError
	}
	return app
}

// shortLived tunes the garbage collector for a command that evaluates CUE
// and exits within seconds: collecting only past a soft memory limit saves
// a third of vet's time. A GOGC or GOMEMLIMIT the user set wins.
func shortLived(*cli.Context) error {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(1 << 30)
	}
	return nil
}

// usageError reports a command-line mistake in one line on stderr, exit 2,
// without printing the help to stdout, which is for data.
func usageError(c *cli.Context, err error, _ bool) error {
	name := "skillgate"
	if c.Command != nil && c.Command.Name != "" {
		name += " " + c.Command.Name
	}
	return exit(2, fmt.Errorf("%s: %w (see %s --help)", name, err, name))
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
		fmt.Fprint(os.Stderr, pipeline.PrintError(err, cwd))
	}
	return code
}
