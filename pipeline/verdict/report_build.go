package verdict

import (
	"github.com/skillgate/skillgate/pipeline"
	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// trialOutcome is a cell's result as the case × arm grid shows it.
func trialOutcome(r grade.CellResult) TrialOutcome {
	var failed []string
	for _, ch := range r.Checks {
		if !ch.Passed {
			failed = append(failed, ch.Name)
		}
	}
	return TrialOutcome{Cell: r.Cell, Trial: r.Trial, Status: r.Status, Passed: r.Passed, Score: r.Score, Rollout: r.Rollout, Failed: failed, USD: r.Cost.USD, Model: r.Telemetry.Model}
}

// BuildReport builds a run's report from its plan and one result per plan
// cell (status missing for a cell with no rollout), with no pairwise
// judgement. The caller sets StandIn.
func BuildReport(p *plan.Plan, results []grade.CellResult) *Report {
	return BuildJudgedReport(p, results, nil)
}

// BuildJudgedReport is BuildReport with the judge's pairwise judgements,
// which the efficacy and judgeAgreement rules read.
func BuildJudgedReport(p *plan.Plan, results []grade.CellResult, pairwise []grade.PairwiseResult) *Report {
	if len(p.Agents) > 1 {
		return buildAgentsReport(p, results, pairwise)
	}
	cells := alignResults(p, results)
	rep := reportHead(p, cells, pairwise)
	rep.Verdict = EvaluatePolicy(p, cells, rep.Arms, pairwise)
	return rep
}

// reportHead is a report of the plan's cells, one result each, but for
// its verdict.
func reportHead(p *plan.Plan, cells []grade.CellResult, pairwise []grade.PairwiseResult) *Report {
	rep := &Report{
		Suite:   p.Suite.Name,
		Plan:    p.Digest,
		Harness: pipeline.Version(),
		CaseSet: plan.CaseSetDigest(p.Cases),
		Agent: AgentIdentity{
			Kind:     p.Agent.Kind,
			Image:    p.Agent.Image,
			Model:    p.Agent.Model,
			Provider: p.Agent.Provider,
			Host:     upstreamHost(p.Agent.Upstream),
			Digest:   p.Agent.Digest,
			Prices:   p.Agent.Prices,
		},
		Observed: emptyObserved(),
		Policy:   p.Policy.Name,
		Formats:  p.Formats,
		Trials:   p.Suite.Trials,
		Pairwise: pairwise,
	}
	if p.Judge != nil {
		rep.Judge = &JudgeIdentity{Provider: p.Judge.Provider, Model: p.Judge.Model, Host: upstreamHost(p.Judge.Upstream), Mode: p.Judge.Mode, Digest: p.Judge.Digest}
	}
	rep.Arms = buildArmReports(p, cells)
	byCase := map[string]map[string][]TrialOutcome{}
	for _, r := range cells {
		arms := byCase[r.Case]
		if arms == nil {
			arms = map[string][]TrialOutcome{}
			byCase[r.Case] = arms
		}
		arms[r.Arm] = append(arms[r.Arm], trialOutcome(r))
	}
	for _, pc := range p.Cases {
		trials := byCase[pc.ID]
		if trials == nil {
			trials = map[string][]TrialOutcome{}
		}
		rep.Cases = append(rep.Cases, CaseReport{
			ID: pc.ID, Digest: plan.CaseDigest(pc), Description: pc.Description, Kind: pc.Kind, Split: pc.Split,
			Safety: pc.Safety, Weight: pc.Weight, Trials: trials,
		})
	}
	return rep
}
