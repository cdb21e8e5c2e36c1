package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/skillgate/skillgate/runner/checks"

	"github.com/skillgate/skillgate/runner/internal/bounded"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// ErrCalibrationIncomplete: a calibration cell did not run to a verdict
// (Docker or skillgate failed it, the run was interrupted or the spend cap
// was reached); run again to retry it. The run is INCOMPLETE, not failed.
var ErrCalibrationIncomplete = errors.New("calibration incomplete")

// Calibrate runs the calibration checks of p's agent in p's arms (those of
// opts.Arms, when given; other filters do not apply) and
// records their outcome in the run folder (calibration.json):
//
//   - skill, in every arm installing skills: the agent, asked by the
//     skill's name, quotes the line of its SKILL.md that starts with given
//     words, a line only this arm's copy of the skill holds;
//   - none, in every arm with no skills: the agent says it has no skill of
//     the suite's names (answering SKILLGATE-NO, not SKILLGATE-YES);
//   - shell, once (in the first arm without skills, else the first arm):
//     the agent runs an echo command and reports its output.
//
// Calibration cells run like plan cells (same agent, limits, images,
// gateway and store) in empty workspaces, under their own keys: they are
// never plan cells, and a stored calibration is reused, not rerun. A
// failed check is not an error: the caller stops the run with
// pipeline.CalibrationVerdict. The error wraps ErrCalibrationIncomplete
// when a calibration cell could not give an answer. With opts.DryRun
// nothing starts and the result is nil.
func Calibrate(ctx context.Context, p *plan.Plan, opts Options) (*verdict.Calibration, error) {
	if opts.Jobs < 1 {
		opts.Jobs = 1
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	cells, err := checks.CalibrationCells(p, opts.SuiteDir, opts.Arms)
	if err != nil {
		return nil, err
	}
	out, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := useCache(st, opts); err != nil {
		return nil, err
	}
	cal := &verdict.Calibration{Checks: []verdict.CalibrationCheck{}}
	var todo []checks.CalCell
	for _, c := range cells {
		ro, ok, err := st.Rollout(c.Cell.Rollout)
		if err != nil {
			return nil, err
		}
		if ok && ro.Status != store.StatusInvalid {
			cal.Reused++
			continue
		}
		todo = append(todo, c)
	}
	fmt.Fprintf(opts.Log, "calibration: %d checks, %d stored, %d to run\n", len(cells), cal.Reused, len(todo))
	if opts.DryRun {
		return nil, nil
	}
	if len(todo) > 0 {
		if err := runCalibration(ctx, p, opts, out, st, todo, cal); err != nil {
			return nil, err
		}
	}
	var incomplete []string
	agent := "" // named only in a plan on several agents
	if len(opts.folderPlan(p).Agents) > 0 {
		agent = p.Agent.Name
	}
	for _, c := range cells {
		ch := verdict.CalibrationCheck{Agent: agent, Arm: c.Arm.Name, Check: c.Check, Cell: c.Cell.ID, Rollout: c.Cell.Rollout, Status: grade.StatusMissing}
		ro, ok, err := st.Rollout(c.Cell.Rollout)
		if err != nil {
			return nil, err
		}
		switch {
		case !ok:
			ch.Detail = c.Asked + ": not run"
			incomplete = append(incomplete, c.Cell.ID+" was not run")
		case ro.Status == store.StatusInvalid:
			ch.Status, ch.Detail = ro.Status, c.Asked+": invalid: "+ro.Error
			incomplete = append(incomplete, c.Cell.ID+" is invalid: "+ro.Error)
		case ro.Status != store.StatusCompleted:
			ch.Status, ch.Answer = ro.Status, ro.Answer
			ch.Detail = fmt.Sprintf("%s: the agent ended %s (exit %d)", c.Asked, ro.Status, ro.ExitCode)
		default:
			ch.Status, ch.Answer = ro.Status, ro.Answer
			var why string
			ch.Passed, why = c.Grade(ro.Answer)
			ch.Detail = c.Asked + ": " + why
		}
		cal.Checks = append(cal.Checks, ch)
	}
	cal.Tally()
	if len(incomplete) > 0 {
		return cal, fmt.Errorf("%w: %s; run again to retry", ErrCalibrationIncomplete, strings.Join(incomplete, "; "))
	}
	// The folder's record keeps every agent's checks: this share's
	// replace its agent's own.
	if err := store.WriteCalibration(out, opts.folderPlan(p), cal); err != nil {
		return nil, err
	}
	return cal, nil
}

// DescribeCalibration renders a calibration for people.
func DescribeCalibration(cal *verdict.Calibration) string {
	var b strings.Builder
	state := "passed"
	if !cal.Passed() {
		state = "FAILED"
	}
	fmt.Fprintf(&b, "calibration %s (%d checks: %d ran, %d reused)\n", state, len(cal.Checks), cal.Ran, cal.Reused)
	for _, ch := range cal.Checks {
		mark := "ok  "
		if !ch.Passed {
			mark = "FAIL"
		}
		arm := ch.Arm
		if ch.Agent != "" {
			arm += " of agent " + ch.Agent
		}
		fmt.Fprintf(&b, "  %s %s in arm %s: %s\n", mark, ch.Check, arm, ch.Detail)
	}
	return b.String()
}

// runCalibration runs the calibration cells with Run's machinery.
func runCalibration(ctx context.Context, p *plan.Plan, opts Options, out string, st *store.Store, todo []checks.CalCell, cal *verdict.Calibration) error {
	in := newInputs(p, opts.SuiteDir, st)
	for _, c := range todo {
		if err := in.add(c.Case, c.Arm); err != nil {
			return err
		}
	}
	if err := in.pin(); err != nil {
		return err
	}
	budget, err := spend.Open(out, p, opts.SpendCapUSD)
	if err != nil {
		return err
	}
	r, stop, err := startCellRunner(ctx, p, opts, out, st, budget)
	if err != nil {
		return err
	}
	defer func() {
		stop()
		_, cal.SpentUSD = budget.Totals()
	}()
	prog := newProgress(opts.Log, opts.Terminal, len(todo))
	var mu sync.Mutex
	var fatal error
	var done []ranCell
	// The cell runner finds a cell's case by its ID, and the skill check of
	// each arm has its own prompt under one ID (arms before and after quote
	// their own copies of one skill): each round runs at most one cell of
	// an ID, so no cell is given another arm's prompt.
	for _, round := range calibrationRounds(todo) {
		for _, c := range round {
			r.Cases[c.Case.ID] = c.Case
			r.Arms[c.Arm.Name] = c.Arm
		}
		bounded.ForEach(ctx, opts.Jobs, round, func(c checks.CalCell) {
			ro, err := r.runAdmitted(ctx, c.Cell, store.SpendCalibration, prog.started)
			if errors.Is(err, spend.ErrCap) {
				return // not run: reported as incomplete
			}
			mu.Lock()
			if err != nil && ctx.Err() == nil && fatal == nil {
				fatal = err
			} else if err == nil && ctx.Err() == nil {
				cal.Ran++
				done = append(done, ranCell{c.Cell, c.Case, c.Arm, ro.Status})
			}
			mu.Unlock()
			if ro != nil && ctx.Err() == nil {
				prog.finished(c.Cell.ID, ro)
			}
		})
	}
	prog.close()
	if _, err := in.invalidateChanged(done, opts.Log); err != nil && fatal == nil {
		fatal = err
	}
	if ctx.Err() != nil {
		r.Sweep(ctx)
		return ctx.Err()
	}
	return fatal
}

// calibrationRounds splits cells into rounds in which no case ID is
// repeated, in order: the n-th cell of an ID runs in round n.
func calibrationRounds(cells []checks.CalCell) [][]checks.CalCell {
	var rounds [][]checks.CalCell
	seen := map[string]int{}
	for _, c := range cells {
		n := seen[c.Case.ID]
		seen[c.Case.ID] = n + 1
		if n == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[n] = append(rounds[n], c)
	}
	return rounds
}

// CalibrationSessions counts the sessions Calibrate starts for the plan
// before a run (arms: only those, when named), for a dry run that tells
// what a real run costs.
func CalibrationSessions(p *plan.Plan, suiteDir string, arms []string) (int, error) {
	cells, err := checks.CalibrationCells(p, suiteDir, arms)
	return len(cells), err
}
