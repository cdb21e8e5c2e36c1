package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/runner/store"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "pack a run folder into one file another machine can report, gate, regrade or replay",
		ArgsUsage: "OUT",
		Description: `Packs the run folder OUT — its plan, its store (rollouts, tree snapshots,
grades, judgements, every recorded model exchange, secrets already scrubbed)
and its reports — into a gzip-compressed tar, with a manifest listing each
file's digest and the pack's digest over them, printed on stdout. On
another machine, 'skillgate unpack' unpacks it, checked against the
manifest; 'report', 'gate' and 'regrade' then read it as they read the
original, and 'run --replay' runs its cells again with no model and no key.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the pack to `FILE` (such as run.tar.gz)", Required: true},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return exit(2, errors.New("export needs the run folder OUT"))
			}
			file := c.String("output")
			tmp := file + ".tmp"
			f, err := os.Create(tmp)
			if err != nil {
				return exit(2, fmt.Errorf("export: %w", err))
			}
			m, err := store.Export(c.Args().First(), f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Rename(tmp, file)
			}
			if err != nil {
				os.Remove(tmp)
				return exit(2, err)
			}
			fmt.Printf("%s\n", m.Digest)
			fmt.Fprintf(os.Stderr, "packed %d files of %s into %s (pack %s)\n", len(m.Files), c.Args().First(), file, m.Digest)
			return nil
		},
	}
}

func unpackCommand() *cli.Command {
	return &cli.Command{
		Name:      "unpack",
		Usage:     "unpack a run folder packed by export, checked against its manifest",
		ArgsUsage: "FILE OUT",
		Description: `Unpacks the pack FILE into the new run folder OUT, refusing a pack whose
files do not match its manifest or whose manifest does not match its
digest, and prints the pack's digest on stdout.`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return exit(2, errors.New("unpack needs the pack FILE and a new run folder OUT"))
			}
			f, err := os.Open(c.Args().Get(0))
			if err != nil {
				return exit(2, fmt.Errorf("unpack pack: %w", err))
			}
			defer f.Close()
			m, err := store.Unpack(f, c.Args().Get(1))
			if err != nil {
				return exit(2, err)
			}
			fmt.Printf("%s\n", m.Digest)
			return nil
		},
	}
}
