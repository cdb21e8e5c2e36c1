package runner

import (
	"context"
	"fmt"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// A plan on several agents runs as each agent's share of it in turn
// (plan.ForAgent): that agent's image, gateway, calibration, cells and
// grading, as if the suite ran on it alone, into the one run folder, whose
// plan and reports are the whole plan's.

// evaluateAgents evaluates a plan on several agents, agent after agent,
// and reports the whole run: the summary adds up every agent's.
func evaluateAgents(ctx context.Context, p *plan.Plan, opts Options) (*Summary, *verdict.Report, error) {
	total := &Summary{Planned: len(p.Cells), Statuses: map[string]int{}}
	var rep *verdict.Report
	for _, name := range p.AgentNames() {
		q := p.ForAgent(name)
		o := opts
		o.whole = p
		fmt.Fprintf(opts.Log, "agent %s (%s): %d cells\n", name, q.Agent.Kind, len(q.Cells))
		sum, r, err := Evaluate(ctx, q, o)
		if sum != nil {
			addSummary(total, sum)
		}
		if r != nil {
			rep = r
		}
		if r != nil && r.Calibration != nil && !r.Calibration.Passed() {
			return total, rep, err // a failed calibration stops the run
		}
		if err != nil || sum == nil || ctx.Err() != nil {
			// A calibration that passed alone, or failed, or an
			// interruption ends the run here, as it would on one agent.
			if sum == nil && err == nil {
				continue
			}
			return total, rep, err
		}
	}
	return total, rep, nil
}

// addSummary adds an agent's share's summary to the run's.
func addSummary(total, s *Summary) {
	total.Selected += s.Selected
	total.Reused += s.Reused
	total.Ran += s.Ran
	total.Taken += s.Taken
	total.Sentinels += s.Sentinels
	total.ReuseRefused = append(total.ReuseRefused, s.ReuseRefused...)
	for k, n := range s.Statuses {
		total.Statuses[k] += n
	}
	total.Interrupted = total.Interrupted || s.Interrupted
	total.SpendCapReached = total.SpendCapReached || s.SpendCapReached
	if total.ProviderStopped == "" {
		total.ProviderStopped = s.ProviderStopped
	}
	total.SpentUSD += s.SpentUSD
	total.SpentFolderUSD = s.SpentFolderUSD
	total.Elapsed += s.Elapsed
	total.Shard = s.Shard
	total.ShareComplete = s.ShareComplete
	total.NotNeeded += s.NotNeeded
}

// folderPlan is the plan the run folder holds: the whole plan of an
// agent's share, else the plan run.
func (o Options) folderPlan(p *plan.Plan) *plan.Plan {
	if o.whole != nil {
		return o.whole
	}
	return p
}
