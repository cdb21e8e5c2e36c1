package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/runner"
	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/urfave/cli/v2"
)

// imageCommand is `skillgate image`: the agents' images.
func imageCommand() *cli.Command {
	// --version is a flag of image too, so `image --version V build KIND` works; build
	// reads it from either.
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
		Usage: "build the Docker images of the agents, push a suite's to a registry",
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
skillgate/AGENT:VERSION and skillgate/AGENT:VERSION-DIGEST. A Node.js agent
(pi) is its npm tree installed once with npm ci from the lockfile skillgate
pins (cached the same way) and the host's node binary with its libraries; its
version is the lockfile's.

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
		}, imagePushCommand()},
	}
}

// imagePushCommand is `skillgate image push`: the images a suite's Pods start from, in a
// registry the cluster pulls from.
func imagePushCommand() *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "push the images a suite's cells start from on Kubernetes to a registry",
		ArgsUsage: "REGISTRY [DIR|PLAN]",
		Description: `Pushes to REGISTRY (HOST[:PORT][/PATH], such as registry.example.com/team/skillgate
or 127.0.0.1:5000/skillgate) every image the selected cells of the suite folder
or plan file start from as Pods: the agent's image in each environment the
cells and their run: checks use, built first when the Docker engine lacks it,
as a run builds it. A cell's own content is not pushed: it streams into its
Pods. Each image goes to REGISTRY/NAME (NAME the last part of its local
repository, so skillgate/claude-code:2.1.332 goes to REGISTRY/claude-code),
tagged with its image ID. "skillgate run --backend kubernetes --registry
REGISTRY" then names each by the digest of its manifest, so the nodes pull
exactly the local engine's build; a build not pushed since it changed is
refused there, naming this command.

The Docker engine pushes, with the credentials of the auths entry for the
registry's host in $DOCKER_CONFIG/config.json or ~/.docker/config.json (what
docker login writes without a credential store); credential helpers
(credsStore, credHelpers) are not supported, and a registry whose
credentials they keep is refused, saying so. A registry on 127.0.0.0/8 is
pushed to over plain HTTP (the engine's default insecure registry).

Prints the engine's progress on stderr and, on stdout, one line per image:
LOCAL → REGISTRY/NAME@sha256:DIGEST.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "run folder `DIR` whose store receives the environments' Dockerfile folders (default: .skillgate/SUITE)"},
			&cli.StringSliceFlag{Name: "case", Usage: "only the images of case `ID` (repeatable)"},
			&cli.StringSliceFlag{Name: "arm", Usage: "only the images of arm `NAME` (repeatable)"},
			&cli.StringFlag{Name: "split", Usage: "only the images of cases of split `S`"},
			&cli.StringFlag{Name: "shard", Usage: "only the images of the `I/N`-th share of the plan's cells"},
			&cli.StringFlag{Name: "suite", Usage: "with a plan file: the suite folder `DIR` it was compiled from"},
		},
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return exit(2, fmt.Errorf("image push takes a registry and one suite folder or plan file, got %d arguments", c.NArg()))
			}
			registry := c.Args().Get(0)
			if err := docker.CheckRegistry(registry); err != nil {
				return exit(2, err)
			}
			target := c.Args().Get(1)
			if target == "" {
				target = "."
			}
			t, err := plan.ResolveTarget(target, c.String("suite"), c.StringSlice("case"))
			if err != nil {
				return exit(2, err)
			}
			var shard runner.Shard
			if c.IsSet("shard") {
				if shard, err = runner.ParseShard(c.String("shard")); err != nil {
					return exit(2, err)
				}
			}
			if _, err := runner.Select(t.Plan, c.StringSlice("case"), c.StringSlice("arm"), c.String("split")); err != nil {
				return exit(2, err)
			}
			out := c.String("out")
			if out == "" {
				out = filepath.Join(".skillgate", t.Plan.Suite.Name)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			pushed, err := runner.PushImages(ctx, t.Plan, runner.Options{
				Out: out, SuiteDir: t.SuiteDir,
				Cases: c.StringSlice("case"), Arms: c.StringSlice("arm"), Split: c.String("split"), Shard: shard,
				Log: os.Stderr,
			}, registry)
			for _, p := range pushed {
				fmt.Printf("%s → %s\n", p.Local, p.Ref)
			}
			return err
		},
	}
}
