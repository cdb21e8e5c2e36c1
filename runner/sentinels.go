package runner

import (
	"context"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"

	"github.com/skillgate/skillgate/runner/readback"
	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// Drift sentinels of run --reuse (policy.reuse): before the reused cells
// count, a planned sample of them, per agent and model asked, runs again
// under keys of its own (plan.SentinelCell) and is graded by the same
// assertions. A group whose sentinels were answered by another model
// version or agent version, or whose stored outcomes and fresh ones
// differ by the paired test at the policy's level, has its reuse refused:
// its reused cells are made invalid with the reason, taken out of
// reused.json, and run in the main pass that follows.

// reusePhase is what taking and checking the reused cells did before the
// main pass.
type reusePhase struct {
	taken, sentinels, refused int
	why                       []string
}

// apply counts the phase in the main pass's summary.
func (ph *reusePhase) apply(sum *Summary) {
	if ph == nil || sum == nil {
		return
	}
	sum.Taken, sum.Sentinels = max(0, ph.taken-ph.refused), ph.sentinels
	sum.ReuseRefused = append(sum.ReuseRefused, ph.why...)
}

// sentinelGroup is one agent and model's reused cells and their sample.
type sentinelGroup struct {
	model  string
	reused []plan.Cell
	sample []plan.Cell
}

// agentLabel names the plan's agent in the sentinels' lines.
func agentLabel(p *plan.Plan) string {
	if p.Agent.Name != "" {
		return p.Agent.Name
	}
	return p.Agent.Kind
}

// sentinelSeed seeds a group's draw: the plan digest, the agent, the model.
func sentinelSeed(p *plan.Plan, model string) string {
	return p.Digest.String() + "/" + agentLabel(p) + "/" + model
}

// logDrySentinels says, in a dry run, how many sentinel cells would run
// before the taken cells count (one group: the agent's model), and what
// they cost when they ran: what the sentinels take back from the saving.
func logDrySentinels(w io.Writer, p *plan.Plan, cells []plan.Cell, res *reuse.Result) int {
	pol := suite.ReuseOf(p.Policy)
	if pol.Sentinels == 0 {
		fmt.Fprintf(w, "reuse sentinels off (policy.reuse.sentinels: 0): the reused cells would not be checked for drift by outcome\n")
		return 0
	}
	keys := map[digest.Digest]bool{}
	for _, t := range res.Taken {
		keys[t.Key] = true
	}
	var pool []plan.Cell
	for _, c := range cells {
		if keys[c.Rollout] {
			pool = append(pool, c)
		}
	}
	sample := plan.SentinelSample(pool, pol.Sentinels, pol.Arms, sentinelSeed(p, p.Agent.Model))
	var cost reuse.Cost
	for _, c := range sample {
		cost.USD += res.Costs[c.Rollout].USD
		cost.Seconds += res.Costs[c.Rollout].Seconds
	}
	spent := fmt.Sprintf("%.0f s of cells", cost.Seconds)
	if cost.USD > 0 {
		spent = fmt.Sprintf("$%.4f and %s", cost.USD, spent)
	}
	fmt.Fprintf(w, "would run %d reused cells again as drift sentinels (policy.reuse: %d per agent and model, at α %g) before the reused cells count, costing about %s as they cost when they ran\n", len(sample), pol.Sentinels, pol.Alpha, spent)
	return len(sample)
}

// drySentinels is the dry run's summary of the sentinels.
func drySentinels(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", after %d of them run again as drift sentinels", n)
}

// takeReused takes the reused cells (reuseFrom), runs and grades their
// sentinels, and refuses the groups that drifted; nil without --reuse or
// in a dry run (Run then counts what it would take). The main pass runs
// with main: it takes nothing more.
func takeReused(ctx context.Context, p *plan.Plan, opts Options) (ph *reusePhase, main Options, err error) {
	if opts.Reuse == "" || opts.DryRun {
		return nil, opts, nil
	}
	main = opts
	main.Reuse = ""
	ph, err = checkReused(ctx, p, opts)
	return ph, main, err
}

// checkReused is takeReused's work.
func checkReused(ctx context.Context, p *plan.Plan, opts Options) (*reusePhase, error) {
	cells, err := selectCells(p, opts)
	if err != nil {
		return nil, err
	}
	_, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return nil, err
	}
	ph := &reusePhase{}
	ph.taken, _, err = reuseFrom(st, p, cells, opts)
	if err != nil {
		unlock()
		return nil, err
	}
	groups, err := reusedGroups(p, st, cells)
	unlock()
	if err != nil || len(groups) == 0 {
		return ph, err
	}
	pol := suite.ReuseOf(p.Policy)
	if pol.Sentinels == 0 {
		var recs []verdict.SentinelGroup
		for _, g := range groups {
			rec := verdict.SentinelGroup{Agent: agentLabel(p), Model: g.model, Reused: len(g.reused), Alpha: pol.Alpha, Decision: verdict.SentinelsOff,
				Reason: fmt.Sprintf("off (policy.reuse.sentinels: 0): the %d reused cells are not checked for drift by outcome", len(g.reused))}
			fmt.Fprintln(opts.Log, rec.Line())
			recs = append(recs, rec)
		}
		return ph, readback.WriteReuseSentinels(opts.Out, recs)
	}
	var sentinels, sampled []plan.Cell
	for _, g := range groups {
		g.sample = plan.SentinelSample(g.reused, pol.Sentinels, pol.Arms, sentinelSeed(p, g.model))
		sampled = append(sampled, g.sample...)
		for _, c := range g.sample {
			sentinels = append(sentinels, plan.SentinelCell(c))
		}
	}
	fmt.Fprintf(opts.Log, "reuse sentinels: %d reused cells run again (policy.reuse: %d per agent and model, at α %g) before they count\n", len(sentinels), pol.Sentinels, pol.Alpha)
	q := *p
	q.Cells = sentinels
	o := opts
	o.Cases, o.Arms, o.Split, o.Shard, o.Reuse, o.only = nil, nil, "", Shard{}, "", nil
	sum, err := Run(ctx, &q, o)
	if sum != nil {
		ph.sentinels = sum.Ran
	}
	if err != nil || ctx.Err() != nil {
		return ph, err
	}
	if _, err := Grade(ctx, &q, sentinels, o); err != nil || ctx.Err() != nil {
		return ph, err
	}
	r := *p
	r.Cells = sampled
	if _, err := Grade(ctx, &r, sampled, o); err != nil || ctx.Err() != nil {
		return ph, err
	}
	return ph, decideSentinels(p, opts, groups, pol, ph)
}

// reusedGroups are the selected cells whose rollouts were taken (the
// ledger) and are valid, by the model their rollouts asked for.
func reusedGroups(p *plan.Plan, st *store.Store, cells []plan.Cell) ([]*sentinelGroup, error) {
	ledger, err := reuse.Ledger(st.Dir)
	if err != nil || len(ledger) == 0 {
		return nil, err
	}
	by := map[string]*sentinelGroup{}
	seen := map[digest.Digest]bool{}
	for _, c := range cells {
		if _, ok := ledger[c.Rollout]; !ok || seen[c.Rollout] {
			continue
		}
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil {
			return nil, err
		}
		if !ok || ro.Status == store.StatusInvalid {
			continue
		}
		seen[c.Rollout] = true
		m, _ := identityOf(ro)
		if by[m] == nil {
			by[m] = &sentinelGroup{model: m}
		}
		by[m].reused = append(by[m].reused, c)
	}
	var out []*sentinelGroup
	for _, m := range sortedKeys(by) {
		out = append(out, by[m])
	}
	return out, nil
}

// decideSentinels compares each group's sentinels with its reused cells,
// refuses the groups that drifted and records every group.
func decideSentinels(p *plan.Plan, opts Options, groups []*sentinelGroup, pol suite.Reuse, ph *reusePhase) error {
	_, st, unlock, err := openRunFolder(opts.Out)
	if err != nil {
		return err
	}
	defer unlock()
	var recs []verdict.SentinelGroup
	refused := map[digest.Digest]bool{}
	for _, g := range groups {
		rec, err := judgeGroup(p, st, g, pol)
		if err != nil {
			return err
		}
		if rec.Decision == verdict.SentinelsRefused {
			keys := map[digest.Digest]bool{}
			for _, c := range g.reused {
				keys[c.Rollout] = true
			}
			for k := range keys {
				if err := st.Invalidate(k, "reuse refused by its drift sentinels: "+rec.Reason, nil); err != nil {
					return err
				}
				refused[k] = true
			}
			rec.Again = len(keys)
			ph.refused += len(keys)
			ph.why = append(ph.why, fmt.Sprintf("model %s (agent %s), by its sentinels: %s", g.model, rec.Agent, rec.Reason))
		}
		fmt.Fprintln(opts.Log, rec.Line())
		recs = append(recs, rec)
	}
	if len(refused) > 0 {
		if err := reuse.Forget(st, refused); err != nil {
			return err
		}
	}
	return readback.WriteReuseSentinels(opts.Out, recs)
}

// judgeGroup decides one group: another answering model or agent version
// in its sentinels refuses without a test; else the paired test of the
// stored outcomes (baseline) against the sentinels' (candidate) refuses
// when p < alpha.
func judgeGroup(p *plan.Plan, st *store.Store, g *sentinelGroup, pol suite.Reuse) (verdict.SentinelGroup, error) {
	rec := verdict.SentinelGroup{Agent: agentLabel(p), Model: g.model, Reused: len(g.reused), Planned: pol.Sentinels, Alpha: pol.Alpha, Cells: []verdict.SentinelPair{}, Decision: verdict.SentinelsKept}
	fresh := newIdentities()
	var twins []*store.Rollout // the sampled reused rollouts, as the sentinels' identities' baseline
	var pairs []inference.Pair
	trial := map[string]int{}
	q := plan.Plan{}
	for _, c := range g.sample {
		q.Cells = append(q.Cells, c, plan.SentinelCell(c))
	}
	results, err := store.Results(&q, st) // one walk of the store's links, not one per cell
	if err != nil {
		return rec, err
	}
	for i, c := range g.sample {
		s := q.Cells[2*i+1]
		stored, now := outcomeOf(results[2*i]), outcomeOf(results[2*i+1])
		if ro, ok, err := st.Rollout(s.Rollout); err != nil {
			return rec, err
		} else if ok && ro.Status != store.StatusInvalid {
			fresh.add(ro)
		}
		if ro, ok, err := st.Rollout(c.Rollout); err != nil {
			return rec, err
		} else if ok {
			twins = append(twins, ro)
		}
		rec.Cells = append(rec.Cells, verdict.SentinelPair{Cell: c.ID, Sentinel: s.ID, Stored: stored, Fresh: now})
		if stored == nil || now == nil {
			continue
		}
		trial[c.Case]++
		pairs = append(pairs, inference.Pair{Case: c.Case, Trial: trial[c.Case], Baseline: *stored, Candidate: *now})
		rec.Paired++
		rec.StoredPassed += b2i(*stored)
		rec.FreshPassed += b2i(*now)
	}
	res, err := inference.Compare(pairs, p.Digest.String())
	if err != nil {
		return rec, fmt.Errorf("compare reuse sentinels: %w", err)
	}
	least, err := inference.Extreme(pairs, p.Digest.String())
	if err != nil {
		return rec, fmt.Errorf("compare reuse sentinels: %w", err)
	}
	rec.Method, rec.P, rec.SmallestP = res.Method, res.P, least.P
	test := fmt.Sprintf("%s p=%.2g", inference.ShortMethod(res.Method), res.P)
	switch drift := fresh.driftFrom(g.model, twins, "in the sentinels"); {
	case drift != "":
		rec.Decision, rec.Reason = verdict.SentinelsRefused, drift
	case rec.Paired == 0:
		rec.Reason = "no sentinel and its reused cell both graded valid: not checked by outcome"
	case res.P < pol.Alpha:
		rec.Decision, rec.Reason = verdict.SentinelsRefused, fmt.Sprintf("%s < %g", test, pol.Alpha)
	case least.P >= pol.Alpha:
		rec.Reason = fmt.Sprintf("%s; with %d cases no outcome could refuse at %g (smallest p %.2g): not checked by outcome", test, res.N, pol.Alpha, least.P)
	default:
		rec.Reason = fmt.Sprintf("%s ≥ %g", test, pol.Alpha)
	}
	return rec, nil
}

// outcomeOf is a cell's graded pass, nil when it has no valid result.
func outcomeOf(r grade.CellResult) *bool {
	if !r.Valid() {
		return nil
	}
	passed := r.Passed
	return &passed
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
