package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/urfave/cli/v2"
)

// imageCommand is `skillgate image`: the agents' images.
func imageCommand() *cli.Command {
	// flagsFirst moves a subcommand's flags before the subcommand's name, so --version is
	// a flag of image too; build reads it from either.
	kinds := agent.ImageKinds()
	var pinned []string
	for _, k := range kinds {
		pinned = append(pinned, k+" "+agent.Version(k))
	}
	version := func() cli.Flag {
		return &cli.StringFlag{Name: "version", Usage: "the agent CLI's exact npm `VERSION` (default: the pinned one)"}
	}
	return &cli.Command{
		Name:  "image",
		Usage: "build the Docker images of the agents",
		Flags: []cli.Flag{version()},
		Subcommands: []*cli.Command{{
			Name:      "build",
			Usage:     "build an agent's image from its official npm package",
			ArgsUsage: strings.Join(kinds, "|"),
			Description: fmt.Sprintf(`Fetches the agent CLI's npm package and its linux-x64 native binary with
npm pack (cached under the user cache folder, skillgate/npm), and builds an
image FROM scratch with networking off: the binary, the host's static busybox
and bash (apt-get install busybox-static bash-static), the C.utf8 locale and
the user agent (uid 1000). Prints the image reference on stdout; it is tagged
skillgate/AGENT:VERSION and skillgate/AGENT:VERSION-DIGEST.

Pinned versions: %s.`, strings.Join(pinned, ", ")),
			Flags:           []cli.Flag{version()},
			HideHelpCommand: true,
			OnUsageError:    usageError,
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return exit(2, fmt.Errorf("image build takes one agent, %s", strings.Join(kinds, " or ")))
				}
				kind := c.Args().First()
				if agent.Version(kind) == "" {
					return exit(2, fmt.Errorf("image build: unknown agent %q (want %s)", kind, strings.Join(kinds, " or ")))
				}
				ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
				defer stop()
				e, err := docker.NewEngine(ctx)
				if err != nil {
					return err
				}
				defer e.Close()
				version := ""
				for _, cc := range c.Lineage() {
					if cc.IsSet("version") {
						version = cc.String("version")
						break
					}
				}
				ref, err := agent.BuildImage(ctx, e, kind, version, os.Stderr)
				if err != nil {
					return err
				}
				fmt.Println(ref)
				return nil
			},
		}},
	}
}
