package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
	"github.com/skillgate/skillgate/runner/store"
)

// Regraded is a run's cells graded again by RegradeRun: their evidence
// under the run's own plan (Before, the original grades and judgements)
// and under the suite as it is now (After, the new deterministic checks,
// not judged), and the cells that could not be regraded because what the
// agent does in them changed.
type Regraded struct {
	Run    *plan.Plan
	Report *verdict.Report
	Before *report.Evidence
	After  *report.Evidence
	// Verdict is the regraded cells' own: each one's new deterministic
	// grade with its original judgement, the cells not regraded missing.
	Verdict verdict.Verdict
	// NeedRollout names the run's cells whose rollout key differs under p:
	// regrading cannot stand for a new rollout.
	NeedRollout []string
}

// RegradeRun re-applies the deterministic checks of plan p (compiled from
// the suite as it is now) to the run in folder out: no agent and no model
// is called, and no stored record is changed. The new grades are stored
// under their own grade keys beside the original ones, which stay as they
// were, as do the rollouts, packets and judgements.
func RegradeRun(ctx context.Context, out string, p *plan.Plan, opts Options) (*Regraded, error) {
	run, r, results, err := readback.BuildRun(out)
	if err != nil {
		return nil, err
	}
	st := &store.Store{Dir: out}
	before, err := readback.CellEvidence(run, st, results)
	if err != nil {
		return nil, err
	}
	was := map[string]plan.Cell{}
	for _, c := range run.Cells {
		was[c.ID] = c
	}
	g := &Regraded{Run: run, Report: r, Before: before}
	var todo []plan.Cell
	for _, c := range p.Cells {
		o, ok := was[c.ID]
		switch {
		case !ok:
		case o.Rollout != c.Rollout:
			g.NeedRollout = append(g.NeedRollout, c.ID)
		default:
			todo = append(todo, c)
		}
	}
	opts.Out = out
	if _, err := Grade(ctx, p, todo, opts); err != nil {
		return nil, fmt.Errorf("regrade %s: %w", out, err)
	}
	now, err := store.Results(p, st)
	if err != nil {
		return nil, err
	}
	judged := map[string]grade.CellResult{}
	for _, res := range results {
		judged[res.Cell] = res
	}
	cases := p.CasesByID()
	var kept []grade.CellResult
	decided := make([]grade.CellResult, len(p.Cells))
	for i, c := range p.Cells {
		decided[i] = now[i]
		if !slices.ContainsFunc(todo, func(t plan.Cell) bool { return t.ID == c.ID }) {
			decided[i].Status = grade.StatusMissing
			continue
		}
		kept = append(kept, now[i])
		if j := judged[c.ID].Judge; j != nil {
			decided[i] = grade.ApplyRubric(now[i], cases[c.Case], *j)
		}
	}
	if g.After, err = readback.CellEvidence(p, st, kept); err != nil {
		return nil, err
	}
	g.Verdict = verdict.BuildReport(p, decided).Verdict
	return g, nil
}
