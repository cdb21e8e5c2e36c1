package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// checkFixedTrials refuses, under a policy with fixedTrials, a plan whose trial count
// differs from that of the results the run folder already holds: a trial added after a
// result was seen would let the results choose their own sample.
func checkFixedTrials(out string, p *plan.Plan) error {
	if !p.Policy.FixedTrials && p.Policy.Sequential == nil {
		return nil // sequential stopping fixes the trials too: they bound its rounds
	}
	prev, err := plan.ReadPlan(filepath.Join(out, store.FilePlan))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check trials: %w", err)
	}
	if prev.Suite.Trials == p.Suite.Trials {
		return nil
	}
	st := &store.Store{Dir: out}
	held := 0
	for _, c := range prev.Cells {
		_, graded, err := st.Grade(c.Grade)
		if err != nil {
			return fmt.Errorf("check trials: %w", err)
		}
		_, rolled, err := st.Rollout(c.Rollout)
		if err != nil {
			return fmt.Errorf("check trials: %w", err)
		}
		if graded || rolled {
			held++
		}
	}
	if held == 0 {
		return nil
	}
	why := "fixedTrials"
	if !p.Policy.FixedTrials {
		why = "sequential: the trials bound its rounds"
	}
	return fmt.Errorf("check trials: run folder %s holds %d results of %d trials per case (plan %s); this plan asks for %d. The policy fixes trials before the run (%s): run it into a fresh --out, or set trials back to %d",
		out, held, prev.Suite.Trials, prev.Digest.Encoded()[:12], p.Suite.Trials, why, prev.Suite.Trials)
}

// rerunRed reruns, once per number up to the policy's rerunRed, the panels the regression
// and safety rules fail (whose first trials all ran): the same inputs in new cells, run
// and graded like the plan's own, so both outcomes are stored.
func rerunRed(ctx context.Context, p *plan.Plan, opts Options) error {
	st := &store.Store{Dir: opts.Out}
	for n := 1; n <= p.Policy.RerunRed && ctx.Err() == nil; n++ {
		results, err := store.Results(p, st)
		if err != nil {
			return err
		}
		cells, reruns, err := readback.StoredReruns(p, st)
		if err != nil {
			return err
		}
		var todo []plan.Cell
		var names []string
		for _, pn := range verdict.RedPanels(p, results, cells, reruns, n) {
			if !panelComplete(p, results, pn) {
				continue // an incomplete panel is INCOMPLETE, not red
			}
			todo = append(todo, plan.PanelCells(p, pn, n)...)
			names = append(names, pn.Case+"/"+pn.Arm)
		}
		if len(todo) == 0 {
			return nil
		}
		fmt.Fprintf(opts.logger(), "rerun %d of red panels (same inputs, rerunRed): %v\n", n, names)
		q := *p
		q.Cells = todo
		o := opts
		o.Cases, o.Arms, o.Split, o.Shard = nil, nil, "", Shard{} // p holds the reruns alone
		if _, err := Run(ctx, &q, o); err != nil {
			return err
		}
		if _, err := Grade(ctx, &q, todo, o); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// panelComplete reports whether every cell of a panel has a valid result.
func panelComplete(p *plan.Plan, results []grade.CellResult, pn plan.Panel) bool {
	for i, c := range p.Cells {
		if c.Case == pn.Case && c.Arm == pn.Arm && !results[i].Valid() {
			return false
		}
	}
	return true
}
