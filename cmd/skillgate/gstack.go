package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/skillgate/skillgate/pipeline/formats/gstack"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner"
	"github.com/skillgate/skillgate/runner/contract"
)

func skillEvalCommand() *cli.Command {
	return &cli.Command{
		Name:  "skill-eval",
		Usage: "gstack's skill-eval call: compare skill folders on a tasks.json",
		Description: `Runs gstack's skill eval contract: every task of --tasks (gstack's tasks.json,
with its tasks.ext.json sidecar and the fixtures beside it) in every arm of
--arms (NAME=DIR for a skill folder, anywhere, since the caller names it, and
none for no skill), --trials times, on --host's CLI (claude or codex) asking
for --model. The suite is built in memory from the tasks file through
skillgate.dev/schema/formats/gstack, exactly as a suite naming tasks.json
reads it, with gstack's policy: a real run calibrates first and stops on a
failed check. <out>/verdict.json is gstack's verdict; raw transcripts are
under <out>/runs/, and skillgate's store and reports beside them.

--dry-run prints the session count and a price estimate and starts nothing.
--spend-cap stops the run before the next session would pass it (INCOMPLETE).
A paid run (a real provider) needs tasks.lock.json beside the tasks file,
matching: --lock writes it (the tasks, sidecar and fixtures digests, the task
IDs and the trials) and starts nothing; commit it. --resume DIR finishes an
INCOMPLETE run in DIR: only cells that never ran, under the same plan, lock
and trials. --tasks-only runs only the tasks named, and the verdict is theirs.

--stand-in (not in gstack's contract) runs offline with labelled stand-ins
for the model and the judge, as skillgate run --stand-in does.

A task with a judge line in tasks.ext.json is judged, blinded (the judge sees
the task and the answer, never the arm), by --host's provider asking for
--judge-model, by default --model; verdict.json's adjudication names it.

--scripted DIR (not in gstack's contract; for tests and demos) answers with
the scripted model of the suite in DIR instead of a provider, and judges with
that suite's judge: offline, free, and labelled a stand-in in every report.

Exit codes: 0 PASS, 1 FAIL (a regression, a safety failure, or WORSE),
2 INCOMPLETE (spend cap reached, infra failure, timeouts, or a refused call),
3 calibration failed.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "arms", Usage: "the arms, `before=DIR,after=DIR,none`"},
			&cli.StringFlag{Name: "tasks", Usage: "gstack's tasks `FILE` (tasks.json)"},
			&cli.StringFlag{Name: "host", Usage: "the agent CLI: `claude` or codex"},
			&cli.StringFlag{Name: "model", Usage: "the model `ID` the CLI asks for"},
			&cli.StringFlag{Name: "judge-model", Usage: "the model `ID` that grades tasks.ext.json's judge lines, blinded (default: --model, on --host's provider)"},
			&cli.IntFlag{Name: "trials", Value: 3, Usage: "trials of every task in every arm, fixed before the run"},
			&cli.Float64Flag{Name: "spend-cap", Usage: "stop before the next session would pass `USD`"},
			&cli.StringFlag{Name: "out", Usage: "the run folder `DIR`: verdict.json, runs/"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the session count and a price estimate; start nothing"},
			&cli.BoolFlag{Name: "calibrate", Usage: "run only the three calibration checks"},
			&cli.StringFlag{Name: "tasks-only", Usage: "run only the tasks `ID,...`"},
			&cli.StringFlag{Name: "resume", Usage: "finish the INCOMPLETE run in `DIR`: only cells that never ran"},
			&cli.BoolFlag{Name: "lock", Usage: "write tasks.lock.json beside the tasks file; start nothing"},
			&cli.BoolFlag{Name: "stand-in", Usage: "run offline with labelled stand-ins for the model and the judge, as skillgate run --stand-in does"},
			&cli.StringFlag{Name: "scripted", Usage: "answer with the scripted model of the suite in `DIR` (offline stand-in, for tests)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 4, Usage: "sessions to run at once"},
		},
		Action: skillEval,
	}
}

func skillEval(c *cli.Context) error {
	if c.NArg() > 0 {
		return exit(2, fmt.Errorf("skill-eval takes flags only, got %q", c.Args().Slice()))
	}
	for _, f := range []string{"arms", "tasks", "host", "model"} {
		if c.String(f) == "" {
			return exit(2, fmt.Errorf("skill-eval: --%s is required (see skillgate skill-eval --help)", f))
		}
	}
	tasks, err := filepath.Abs(c.String("tasks"))
	if err != nil {
		return exit(2, fmt.Errorf("skill-eval: %w", err))
	}
	if _, err := os.Stat(tasks); err != nil {
		return exit(2, fmt.Errorf("skill-eval: read tasks: %w", err))
	}
	arms, err := gstack.ParseArms(c.String("arms"))
	if err != nil {
		return exit(2, err)
	}
	if c.Int("trials") < 1 {
		return exit(2, fmt.Errorf("skill-eval: --trials %d: want at least 1", c.Int("trials")))
	}
	call := gstack.Call{Tasks: tasks, Arms: arms, Host: c.String("host"), Model: c.String("model"), Trials: c.Int("trials"), JudgeModel: c.String("judge-model")}
	if dir := c.String("scripted"); dir != "" {
		s, err := suite.LoadSuite(dir)
		if err != nil {
			return exit(2, fmt.Errorf("skill-eval: --scripted %s: %w", dir, err))
		}
		if s.Agent.Script == nil {
			return exit(2, fmt.Errorf("skill-eval: --scripted %s: the suite's agent has no scripted model", dir))
		}
		if call.Script, err = json.Marshal(s.Agent.Script); err != nil {
			return exit(2, err)
		}
		call.StandIn = s.Agent.StandIn
		if s.Judge != nil {
			if call.Judge, err = json.Marshal(s.Judge); err != nil {
				return exit(2, err)
			}
		}
		if call.StandIn == "" {
			call.StandIn = "scripted stand-in model of " + dir
		}
	}
	if c.Bool("lock") {
		l, err := gstack.MakeLock(c.String("tasks"), call.Trials)
		if err != nil {
			return exit(2, err)
		}
		p, err := gstack.WriteLock(c.String("tasks"), l)
		if err != nil {
			return exit(2, err)
		}
		fmt.Fprintf(os.Stderr, "locked %d tasks and %d trials in %s: commit it before the paid run\n", len(l.TaskIDs), l.Trials, p)
		return nil
	}
	src, err := call.Source()
	if err != nil {
		return exit(2, err)
	}
	s, err := suite.LoadSuiteSource(call.Dir(), call.Root(), src)
	if err != nil {
		return exit(2, err)
	}
	if c.Bool("stand-in") {
		s.UseStandIn()
		if s.CalibrationSkipped {
			fmt.Fprintln(os.Stderr, suite.CalibrationSkippedNote)
		}
	}
	if only := c.String("tasks-only"); only != "" {
		if err := contract.OnlyTasks(s, c.String("tasks"), strings.Split(only, ",")); err != nil {
			return exit(2, err)
		}
	}
	p, err := plan.Compile(s)
	if err != nil {
		return exit(2, err)
	}
	// A paid run measures the locked tasks only; a dry run says whether
	// the lock would let it start.
	refused := contract.SkillEvalRefusals(p, c.String("tasks"), c.IsSet("spend-cap"), c.Float64("spend-cap"))
	if len(refused) > 0 && !c.Bool("dry-run") {
		return exit(2, refused[0])
	}
	out, err := contract.SkillEvalFolder(p, c.String("out"), c.String("resume"), c.Bool("dry-run"))
	if err != nil {
		return exit(2, err)
	}
	calibrate := p.Policy.Calibrate || c.Bool("calibrate")
	if c.Bool("dry-run") {
		cal := 0
		if calibrate {
			if cal, err = runner.CalibrationSessions(p, call.Dir(), nil); err != nil {
				return exit(2, err)
			}
		}
		fmt.Print(describeSkillEval(p, cal, c.Bool("calibrate"), c.Float64("spend-cap")))
		for _, err := range refused {
			fmt.Printf("a paid run would be refused: %v\n", err)
		}
		return nil
	}
	ctx, finish, stop := interruptible(c.Context)
	defer stop()
	fi, _ := os.Stderr.Stat()
	sum, report, err := runner.Evaluate(ctx, p, runner.Options{
		Out: out, SuiteDir: call.Dir(), Jobs: c.Int("jobs"),
		Calibrate: c.Bool("calibrate"), SpendCapUSD: c.Float64("spend-cap"), Log: os.Stderr, Terminal: fi != nil && fi.Mode()&os.ModeCharDevice != 0,
		Finish: finish,
	})
	if err != nil {
		return exit(2, err)
	}
	if sum == nil {
		return nil // --calibrate, and every check passed
	}
	fmt.Fprintf(os.Stderr, "%s\n", runner.DescribeSummary(sum, out, false))
	if report == nil {
		return nil
	}
	fmt.Fprint(os.Stderr, describeVerdict(report, out))
	return exitVerdict(report)
}

// describeSkillEval is --dry-run's output: the sessions and their price.
func describeSkillEval(p *plan.Plan, calibration int, calibrateOnly bool, capUSD float64) string {
	var b strings.Builder
	sessions := len(p.Cells) + calibration
	if calibrateOnly {
		sessions = calibration
		fmt.Fprintf(&b, "skill-eval --calibrate: %s\n", plan.Plural(calibration, "calibration session"))
	} else {
		fmt.Fprintf(&b, "skill-eval: %s × %s × %s = %s", plan.Plural(len(p.Cases), "task"), plan.Plural(len(p.Arms), "arm"), plan.Plural(p.Suite.Trials, "trial"), plan.Plural(len(p.Cells), "session"))
		if calibration > 0 {
			fmt.Fprintf(&b, ", after %s", plan.Plural(calibration, "calibration session"))
		}
		fmt.Fprintf(&b, ": %s\n", plan.Plural(sessions, "session"))
	}
	fmt.Fprintf(&b, "model: %s on %s (%s)\n", p.Agent.Model, p.Agent.Kind, p.Agent.Provider)
	judged := 0
	for _, pc := range p.Cases {
		if len(pc.Rubric) > 0 {
			judged++
		}
	}
	if p.Judge != nil && judged > 0 {
		fmt.Fprintf(&b, "judge: %s (%s), blinded, for %s with a judge line\n", p.Judge.Model, p.Judge.Provider, plan.Plural(judged, "task"))
	}
	if pr := p.Agent.Prices; pr != nil && pr.PerCall != nil {
		fmt.Fprintf(&b, "price estimate: $%.2f at most ($%.2f a session)", float64(sessions)**pr.PerCall, *pr.PerCall)
	} else {
		b.WriteString("price estimate: unknown (skill-eval has no prices for this model)")
	}
	if capUSD > 0 {
		fmt.Fprintf(&b, "; spend cap $%.2f", capUSD)
	}
	b.WriteString("\nnothing started (--dry-run)\n")
	return b.String()
}
