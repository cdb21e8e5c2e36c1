package main

import (
	"fmt"
	"os"

	"github.com/skillgate/skillgate/runner/docker"

	"github.com/urfave/cli/v2"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove skillgate's containers and cell images from the Docker engine",
		Description: `Removes every container skillgate started that is still there and every
image it built for cells (labelled dev.skillgate.image=cell). With --all it
removes every image it built: the sandbox, agent, environment and Debian
images too. Stored results are never touched.`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "remove the sandbox, agent, environment and Debian images too"}},
		Action: func(c *cli.Context) error {
			e, err := docker.NewEngine(c.Context)
			if err != nil {
				return err
			}
			defer e.Close()
			n, err := e.Sweep(c.Context, docker.LabelRun)
			if err != nil {
				return err
			}
			label := docker.LabelImage + "=cell"
			if c.Bool("all") {
				label = docker.LabelImage
			}
			m, err := e.RemoveImages(c.Context, label)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "removed %d containers and %d images\n", n, m)
			return nil
		},
	}
}
