package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/skillgate/skillgate/runner/cache"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/kube"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/runner"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a suite's cells in network-less containers",
		ArgsUsage: "[DIR|PLAN]",
		Description: `Runs every cell (case × arm × trial) of a suite folder, or of a plan file
written by "skillgate plan" (exactly that plan: it refuses, saying which input,
when the suite no longer matches it), one hardened Docker container per cell
with the network disabled (with --backend kubernetes, one hardened Pod per
cell instead: see docs/kubernetes.md).

Rollouts are stored in the run folder by their rollout key, so a run resumes
by default: cells already stored never start again, and a later plan reuses
every cell whose inputs did not change. Ctrl-C stops starting cells, removes
running containers and keeps what is stored.

Each cell is graded (assertions, then allowed writes and routing), and the
gate policy gives a verdict with reasons; reports are written into the run
folder: verdict.json, report.json, report.md, report.html and junit.xml.

A real provider's key is checked before the first cell (GET /v1/models); a
refused key or an unreachable provider stops the run at once. Transient
provider errors (429, 529, 5xx, a reset connection) are retried by the
gateway (limits.retry) before the agent sees them; a provider fault the
cell never recovered from makes it invalid, and invalid cells rerun.

With --shard I/N it runs the I-th of N shares of the plan's cells, as one
job of a CI matrix does; every machine computes the same shares from the plan
alone. The run folder is an ordinary one whose reports say INCOMPLETE, naming
the shard; "skillgate merge" unions the shards' folders into the plan's
verdict. A shard exits 0 once every cell of its share has a valid result, 2
while one has not, 3 when calibration failed.

Every model exchange of every cell is recorded in the run folder
(store/exchanges: each request and response, streamed bodies as received,
secrets scrubbed). --replay DIR answers the cells from the run folder DIR's
recording instead of the provider, with no network and no credential: the
agent CLIs run again in their containers, each request matched by its
content to one its cell recorded; a request that matches none makes its cell
invalid, saying where it departs. Without a suite folder or plan, --replay
runs DIR's own plan from DIR's own snapshots of the skills and fixtures, into
DIR-replay unless --out says.

With --stand-in it runs a suite folder, imported or not, offline: no key, no
network, nothing paid. skillgate's scripted model answers for the agent (the
suite's own script when its agent is already scripted) and a stand-in judge
for the judge, while the agent CLI, the containers, the checks and the
verdict are the real ones; every report and verdict.json say it is a
stand-in run. The run folder defaults to .skillgate/SUITE-stand-in.

Before the first cell, every run: check runs once on each case's untouched
workspace (and on its reference solution, when the case names one): a check
that cannot run there (exit 126 or 127: a missing tool or interpreter), or
that fails on a reference, stops the run, naming it; a task case whose checks
all pass untouched is reported. During the run, a check that cannot run
makes its cell invalid, never failed.

Exit codes: 0 PASS, 1 FAIL, 2 INCOMPLETE (interrupted, filtered, spend cap
reached, or a cell invalid because Docker, skillgate or the provider
failed), 3 calibration failed.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "run folder `DIR` (default: .skillgate/SUITE)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "cells to run at once (agents mostly wait on the model, so this may exceed the cores)"},
			&cli.StringSliceFlag{Name: "case", Usage: "run only case `ID` (repeatable); a calibration-only case runs only when named here"},
			&cli.StringSliceFlag{Name: "arm", Usage: "run only arm `NAME` (repeatable)"},
			&cli.StringFlag{Name: "split", Usage: "run only cases of split `S`"},
			&cli.StringFlag{Name: "shard", Usage: "run only the `I/N`-th share of the plan's cells (I from 1 to N), into a run folder that skillgate merge joins with the others"},
			&cli.StringFlag{Name: "suite", Usage: "with a plan file: the suite folder `DIR` it was compiled from"},
			&cli.Float64Flag{Name: "spend-cap", Usage: "start a cell or judge call only while its worst case fits under `USD` spent in the run folder over all runs (needs agent.prices); a started cell always finishes, and a later run with a higher cap resumes"},
			&cli.BoolFlag{Name: "calibrate", Usage: "run only the calibration checks: the agent quotes a line only its arm's skill copy holds, says it has no skill in a no-skill arm, runs a shell command (exit 3 when one fails)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would run and start nothing"},
			&cli.BoolFlag{Name: "stand-in", Usage: "run offline with labelled stand-ins for the agent's model and the judge (no key, no network, nothing paid): see the pipeline work on your own files"},
			&cli.StringFlag{Name: "replay", Usage: "answer the cells from the recorded run folder `DIR`, offline (without a suite or plan: DIR's own plan and inputs)"},
			cacheFlag,
			reuseFlag,
			&cli.BoolFlag{Name: "keep-rollouts", Usage: "also keep each valid rollout this run makes in the machine's cache, sealed and verified, for --reuse cache in any run folder (off by default)"},
			&cli.StringFlag{Name: "backend", Value: "docker", Usage: "where cells and checks run: `docker` (containers of the local engine) or kubernetes (Pods of the cluster kubectl names)"},
			&cli.StringFlag{Name: "kubeconfig", Usage: "with --backend kubernetes: the kubeconfig `FILE` (default: $KUBECONFIG, then ~/.kube/config)"},
			&cli.StringFlag{Name: "context", Usage: "with --backend kubernetes: the kubeconfig's context `NAME` (default: its current context)"},
			&cli.StringFlag{Name: "namespace", Usage: "with --backend kubernetes: the `NAMESPACE` of the Pods (default: the context's, else default)"},
			&cli.BoolFlag{Name: "host-path", Usage: "with --backend kubernetes: mount the gateway's and the cases' folders from this machine by hostPath, for a cluster whose one node is this machine (default: stream them into each Pod and relay the gateway through the API, so Pods run on any node)"},
			&cli.StringFlag{Name: "registry", Usage: "with --backend kubernetes: the `REGISTRY` the nodes pull the agent images from, pushed there by skillgate image push; Pods name them by digest (default: none, the images are loaded into the nodes)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return exit(2, fmt.Errorf("run takes one suite folder or plan file, got %d arguments", c.NArg()))
			}
			replay := c.String("replay")
			cacheDir, err := cacheDir(c)
			if err != nil {
				return exit(2, err)
			}
			if cacheDir != "" {
				// The plan hashes the suite's folders through the cache's
				// stat index of each.
				plan.SetLiveHasher(cache.LiveHasher(cacheDir))
				defer plan.SetLiveHasher(nil)
			}
			t, treesFrom, err := runTarget(c)
			if err != nil {
				return exit(2, err)
			}
			var shard runner.Shard
			if c.IsSet("shard") {
				if shard, err = runner.ParseShard(c.String("shard")); err != nil {
					return exit(2, err)
				}
			}
			// Before any engine or provider is asked: a cap that cannot be
			// kept refuses the run at once.
			if err := spend.CheckCap(t.Plan, c.Float64("spend-cap")); err != nil {
				return exit(2, err)
			}
			kube, err := kubernetesConfig(c)
			if err != nil {
				return exit(2, err)
			}
			out := runFolder(c, t.Plan)
			if err := needCache(c, cacheDir); err != nil {
				return exit(2, err)
			}
			ctx, finish, stop := interruptible(c.Context)
			defer stop()
			fi, _ := os.Stderr.Stat()
			sum, report, err := runner.Evaluate(ctx, t.Plan, runner.Options{
				Out: out, SuiteDir: t.SuiteDir, Jobs: c.Int("jobs"),
				Cases: c.StringSlice("case"), Arms: c.StringSlice("arm"), Split: c.String("split"), Shard: shard,
				DryRun: c.Bool("dry-run"), Calibrate: c.Bool("calibrate"), SpendCapUSD: c.Float64("spend-cap"), Log: os.Stderr, Terminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
				Finish: finish, Kubernetes: kube,
				Replay: replay, TreesFrom: treesFrom, Cache: cacheDir, Reuse: c.String("reuse"), KeepRollouts: c.Bool("keep-rollouts"),
			})
			if err != nil {
				return exit(2, err)
			}
			if sum == nil {
				return nil // --calibrate, and every check passed
			}
			fmt.Fprintf(os.Stderr, "%s\n", runner.DescribeSummary(sum, out, c.Bool("dry-run")))
			if report == nil {
				return nil
			}
			fmt.Fprint(os.Stderr, describeVerdict(report, out))
			if sum.Shard != nil && report.Verdict.Verdict != verdict.VerdictCalibration {
				// A shard's report is INCOMPLETE by nature: its exit says
				// whether it did its share.
				if sum.ShareComplete {
					return nil
				}
				return exit(2, nil)
			}
			return exitVerdict(report)
		},
	}
}

// runTarget is what a run runs: the suite folder or plan file named, or,
// with --replay and neither, the recorded folder's own plan, whose skill
// and fixture trees are then read from it (treesFrom).
func runTarget(c *cli.Context) (t *plan.Target, treesFrom string, err error) {
	target, replay := c.Args().First(), c.String("replay")
	if replay != "" && target == "" {
		p, err := plan.ReadPlan(filepath.Join(replay, store.FilePlan))
		if err != nil {
			return nil, "", fmt.Errorf("replay %s: %w", replay, err)
		}
		return &plan.Target{Plan: p}, replay, nil
	}
	if target == "" {
		target = "."
	}
	switch {
	case c.Bool("stand-in") && replay != "":
		return nil, "", fmt.Errorf("run: --stand-in and --replay both answer for the model: choose one")
	case c.Bool("stand-in"):
		t, err = resolveStandIn(target, c.StringSlice("case"))
	default:
		t, err = plan.ResolveTarget(target, c.String("suite"), c.StringSlice("case"))
	}
	return t, "", err
}

// runFolder is the run folder: --out, else beside the replayed folder,
// else .skillgate/SUITE (SUITE-stand-in for a stand-in run).
func runFolder(c *cli.Context, p *plan.Plan) string {
	switch {
	case c.String("out") != "":
		return c.String("out")
	case c.String("replay") != "":
		return filepath.Clean(c.String("replay")) + "-replay"
	case c.Bool("stand-in"):
		return filepath.Join(".skillgate", p.Suite.Name+"-stand-in")
	default:
		return filepath.Join(".skillgate", p.Suite.Name)
	}
}

// interruptible is a run's two contexts: the first interrupt (Ctrl-C, SIGTERM) cancels
// run, so no cell starts and running ones are removed; the second cancels finish too, so
// the grading of what is stored stops as well.
func interruptible(parent context.Context) (run, finish context.Context, stop func()) {
	run, cancelRun := context.WithCancel(parent)
	finish, cancelFinish := context.WithCancel(context.WithoutCancel(parent))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for _, cancel := range []context.CancelFunc{cancelRun, cancelFinish} {
			select {
			case <-sigs:
				cancel()
			case <-done:
				return
			}
		}
	}()
	return run, finish, func() {
		signal.Stop(sigs)
		close(done)
		cancelRun()
		cancelFinish()
	}
}

// kubernetesConfig is the cluster --backend names, nil for Docker.
func kubernetesConfig(c *cli.Context) (*kube.Config, error) {
	switch b := c.String("backend"); b {
	case "docker":
		for _, f := range []string{"kubeconfig", "context", "namespace", "host-path", "registry"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("choose backend: --%s is for --backend kubernetes", f)
			}
		}
		return nil, nil
	case "kubernetes":
		if r := c.String("registry"); r != "" {
			if err := docker.CheckRegistry(r); err != nil {
				return nil, err
			}
		}
		return &kube.Config{Kubeconfig: c.String("kubeconfig"), Context: c.String("context"), Namespace: c.String("namespace"), Registry: c.String("registry"), HostPath: c.Bool("host-path")}, nil
	default:
		return nil, fmt.Errorf("choose backend: --backend %q: want docker or kubernetes", b)
	}
}

// resolveStandIn compiles the suite folder dir for a stand-in run and says
// when that skips the policy's calibration.
func resolveStandIn(dir string, cases []string) (*plan.Target, error) {
	t, err := plan.ResolveStandIn(dir, cases)
	if err == nil && t.CalibrationSkipped {
		fmt.Fprintln(os.Stderr, suite.CalibrationSkippedNote)
	}
	return t, err
}
