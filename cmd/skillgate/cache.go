package main

import (
	"fmt"
	"os"
	"time"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/reuse"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/urfave/cli/v2"
)

// cacheFlag is the flag of the commands that pin trees from the machine's cache.
var cacheFlag = &cli.StringFlag{Name: "cache", Usage: "the machine's cache folder `DIR` that run folders link verified tree snapshots from, or off to copy them (default: $SKILLGATE_CACHE, else skillgate in the user's cache folder)"}

// cacheDir is the cache folder a command uses: --cache, else the default;
// "" for none. A default folder that cannot be made is passed over with a
// message (the trees are then copied); one named by --cache is an error.
func cacheDir(c *cli.Context) (string, error) {
	if c.IsSet("cache") {
		d := c.String("cache")
		if d == cache.Off || d == "" {
			return "", nil
		}
		if _, err := cache.Open(d); err != nil {
			return "", err
		}
		return d, nil
	}
	d := cache.DefaultDir()
	if d == "" {
		return "", nil
	}
	if _, err := cache.Open(d); err != nil {
		fmt.Fprintf(os.Stderr, "no machine cache (%v): tree snapshots are copied into the run folder\n", err)
		return "", nil
	}
	return d, nil
}

// reuseFlag is --reuse of run and plan.
var reuseFlag = &cli.StringFlag{Name: "reuse", Usage: "take the stored rollouts of the run folder or pack `FROM`, or of the machine's cache (cache: what runs kept with --keep-rollouts), whose keys are the selected cells' exact keys, each verified as merge verifies it, instead of running those cells"}

// needCache refuses --keep-rollouts and --reuse cache without a cache,
// and --keep-rollouts with --replay.
func needCache(c *cli.Context, dir string) error {
	if c.Bool("keep-rollouts") && c.String("replay") != "" {
		return fmt.Errorf("keep rollouts: --replay answers the cells from a recording, not the provider; keep the recorded run's rollouts by running it with --keep-rollouts")
	}
	if dir != "" {
		return nil
	}
	if c.Bool("keep-rollouts") {
		return fmt.Errorf("keep rollouts: there is no machine cache (--cache off, or no cache folder): give --cache DIR")
	}
	if c.String("reuse") == reuse.FromCache {
		return fmt.Errorf("reuse from the machine's cache: there is none (--cache off, or no cache folder): give --cache DIR")
	}
	return nil
}

func cacheCommand() *cli.Command {
	return &cli.Command{
		Name:  "cache",
		Usage: "the machine's cache of verified tree snapshots and kept rollouts that run folders share",
		Description: `The cache holds the skill, fixture, case and Dockerfile folders plans
digest, by digest, verified; run folders link theirs from it, each file
verified again as it is linked (see docs/reuse.md). It also holds the
rollouts runs kept with "run --keep-rollouts", by rollout key, which
"run --reuse cache" takes, each verified as it is taken. Its folder is
--cache, else $SKILLGATE_CACHE, else skillgate in the user's cache folder.`,
		Subcommands: []*cli.Command{{
			Name:  "gc",
			Usage: "bound the cache by age and size",
			Description: `Removes the snapshots, kept rollouts and live folders' stat indexes not
used for longer than --max-age, then the least recently used until the rest fit
in --max-size. One a run is using is kept; run folders keep their own copies of
what is removed, and a folder whose index is removed is hashed whole next time.`,
			Flags: []cli.Flag{
				cacheFlag,
				&cli.StringFlag{Name: "max-size", Value: "10g", Usage: "keep at most `SIZE` of snapshots, rollouts and indexes (k, m, g: powers of 1024; 0: no bound)"},
				&cli.DurationFlag{Name: "max-age", Value: 30 * 24 * time.Hour, Usage: "remove snapshots, rollouts and indexes not used for `AGE` (0: no bound)"},
			},
			Action: func(c *cli.Context) error {
				dir := c.String("cache")
				if dir == "" {
					dir = cache.DefaultDir()
				}
				if dir == "" || dir == cache.Off {
					return exit(2, fmt.Errorf("cache gc: no cache folder: give --cache DIR"))
				}
				size, err := suite.ParseBytes(c.String("max-size"))
				if err != nil {
					return exit(2, fmt.Errorf("cache gc: --max-size: %w", err))
				}
				ca, err := cache.Open(dir)
				if err != nil {
					return err
				}
				res, err := ca.GC(size, c.Duration("max-age"), time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "removed %d snapshots, %d rollouts and %d folder indexes (%.1f MB), kept %d snapshots, %d rollouts and %d folder indexes (%.1f MB)", res.Removed-res.RemovedRollouts-res.RemovedIndexes, res.RemovedRollouts, res.RemovedIndexes, float64(res.RemovedBytes)/1e6, res.Kept-res.KeptRollouts-res.KeptIndexes, res.KeptRollouts, res.KeptIndexes, float64(res.KeptBytes)/1e6)
				if res.Busy > 0 {
					fmt.Fprintf(os.Stderr, "; %d in use by a run, kept", res.Busy)
				}
				fmt.Fprintln(os.Stderr)
				return nil
			},
		}},
	}
}
