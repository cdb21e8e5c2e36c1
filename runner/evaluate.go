package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/skillgate/skillgate/runner/judge"

	"github.com/skillgate/skillgate/runner/readback"
	"github.com/skillgate/skillgate/runner/spend"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/skillgate/skillgate/pipeline"
)

// Evaluate runs the plan's selected cells, grades them, judges them, and
// writes the verdict and reports for the whole plan into the run folder.
// The plan is written first, before anything runs, so whatever stops the
// run later, `skillgate report` can rebuild the reports from what is
// stored. With calibration asked for, the calibration checks run first; a
// failed one stops the run with its verdict, and Calibrate alone returns
// no summary and no report when they pass. Cells not run (filtered out,
// interrupted) count as missing, so a partial run is INCOMPLETE, never a
// pass; so do cells whose judge call failed, which the verdict names with
// the judge's error. With the policy's sequential stopping the cells run in
// rounds (rounds.go), and cells no comparison needs are neither run nor
// missing.
func Evaluate(ctx context.Context, p *plan.Plan, opts Options) (*Summary, *verdict.Report, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if len(p.Agents) > 1 {
		return evaluateAgents(ctx, p, opts)
	}
	out, err := filepath.Abs(opts.Out)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve run folder: %w", err)
	}
	opts.Out = out
	if err := checkFixedTrials(out, p); err != nil {
		return nil, nil, err
	}
	var ahead *readback.PlanAhead // the plan as the report reads it back, decoded while cells run
	if !opts.DryRun {
		if err := writePlan(out, opts.folderPlan(p)); err != nil {
			return nil, nil, err
		}
		ahead = readback.ReadPlanAhead(out)
		if err := recordShard(out, opts.folderPlan(p), opts.Shard); err != nil {
			return nil, nil, err
		}
	}
	// A shard grades, reruns and judges its own cells alone.
	sp := shardPlan(p, opts.Shard)
	// The judges are made first, so a missing credential stops the run
	// before any rollout.
	var cellJudge, adjudicator judge.Judge
	if p.Judge != nil && !opts.DryRun {
		j, closeJudge, err := judge.NewJudge(p, opts.SuiteDir)
		if err != nil {
			return nil, nil, err
		}
		defer closeJudge()
		a, closeAdjudicator, err := judge.NewAdjudicator(p, opts.SuiteDir)
		if err != nil {
			return nil, nil, err
		}
		defer closeAdjudicator()
		cellJudge, adjudicator = j, a
		if err := judge.Check(ctx, p); err != nil {
			return nil, nil, err
		}
	}
	// Checks that cannot measure stop the run before any paid session.
	if len(sp.Cells) > 0 && !opts.Calibrate {
		if _, err := Preflight(ctx, p, opts); err != nil {
			return nil, nil, err
		}
	}
	// A shard with no cell runs nothing, calibration included.
	if (opts.Calibrate || p.Policy.Calibrate) && !opts.DryRun && len(sp.Cells) > 0 {
		cal, err := Calibrate(ctx, p, opts)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprint(opts.Log, DescribeCalibration(cal))
		if opts.Calibrate && cal.Passed() {
			return nil, nil, nil // calibration alone, and it passed
		}
		if !cal.Passed() {
			// A failed check stops everything: the verdict says which.
			r, err := readback.ReportAhead(opts.Out, ahead)
			return &Summary{Planned: len(p.Cells), Statuses: map[string]int{}}, r, err
		}
	}
	// Reused cells are taken, and checked by their sentinels, before the
	// main pass, which runs the cells of a refused reuse (sentinels.go).
	taken, main, err := takeReused(ctx, p, opts)
	if err != nil {
		return nil, nil, err
	}
	sum, err := runRounds(ctx, p, main, func(ctx context.Context, cells []plan.Cell) error {
		if _, err := Grade(ctx, p, cells, opts); err != nil {
			return err
		}
		if cellJudge == nil {
			return nil
		}
		_, _, err := judge.JudgeCells(ctx, sp, cellJudge, adjudicator, opts.judging())
		return err
	})
	taken.apply(sum)
	if err == nil && opts.Reuse != "" && !opts.DryRun && ctx.Err() == nil {
		sum, err = refuseDrifted(ctx, p, opts, sum)
	}
	if err != nil {
		return sum, nil, err
	}
	if opts.DryRun {
		return sum, nil, nil
	}
	cells, err := selectCells(p, opts)
	if err != nil {
		return sum, nil, err
	}
	// Interrupted, the rollouts already stored are still graded, so the report counts
	// them as what they are, not as cells never run.
	gctx := ctx
	if ctx.Err() != nil {
		gctx = opts.Finish
		if gctx == nil {
			gctx = context.WithoutCancel(ctx)
		}
		fmt.Fprintln(opts.Log, "interrupted: grading the stored rollouts and writing the reports (interrupt again to stop now)")
	}
	ph := startPhase(opts, phaseGrading)
	n, err := Grade(gctx, p, cells, ph.logTo(opts))
	ph.end(n, "graded %d cells")
	if err != nil && gctx.Err() == nil {
		return sum, nil, err
	}
	if p.Policy.RerunRed > 0 && ctx.Err() == nil {
		if err := rerunRed(ctx, sp, opts); err != nil && ctx.Err() == nil {
			return sum, nil, err
		}
	}
	if cellJudge != nil && ctx.Err() == nil {
		ph := startPhase(opts, phaseJudging)
		jo := ph.logTo(opts).judging()
		jo.Progress = ph.judged
		n, failed, err := judge.JudgeCells(ctx, sp, cellJudge, adjudicator, jo)
		ph.end(n, "judged %d")
		if failed > 0 {
			fmt.Fprintf(opts.Log, "%d judge calls failed: their cells are not judged, the verdict is INCOMPLETE; run again to ask again\n", failed)
		}
		if folder, lerr := store.FolderSpend(opts.Out); lerr == nil {
			sum.SpentUSD += folder - sum.SpentFolderUSD // the judge calls'
			sum.SpentFolderUSD = folder
		}
		if errors.Is(err, spend.ErrCap) {
			// What the cap left unjudged is missing: the report says INCOMPLETE.
			sum.SpendCapReached = true
		} else if err != nil && ctx.Err() == nil {
			return sum, nil, err
		}
	}
	r, err := readback.ReportAhead(opts.Out, ahead)
	if err == nil && sum.Shard != nil {
		sum.ShareComplete, err = shareComplete(opts.Out, opts.folderPlan(p), opts.Shard)
		sum.ShareComplete = sum.ShareComplete && sum.Complete()
	}
	return sum, r, err
}

// writePlan writes the plan the run folder's reports describe, atomically.
func writePlan(out string, p *plan.Plan) error {
	return pipeline.WriteFile(filepath.Join(out, store.FilePlan), p.Encode())
}

// judging is what the judging of a run takes of its options.
func (o Options) judging() judge.Options {
	return judge.Options{Out: o.Out, SuiteDir: o.SuiteDir, Jobs: o.Jobs, Log: o.Log, SpendCapUSD: o.SpendCapUSD}
}
