package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// Portability is the verdict of a suite on several agents on each agent
// and across them: does the skill's uplift hold on every agent?
type Portability struct {
	// Agents holds each agent's figures, in the suite's order.
	Agents []PortabilityAgent `json:"agents"`
	// Heterogeneity tests whether the uplift differs between the agents,
	// over the cases every agent has paired trials of.
	Heterogeneity *inference.Heterogeneity `json:"heterogeneity,omitempty"`
}

// PortabilityAgent is one agent's figures: its arms' pass rates, the
// uplift of the treatment arm over the baseline arm with its paired
// inference, how its skill arms' cells showed the skill activated, and
// its own verdict (the policy's rules on its cells alone).
type PortabilityAgent struct {
	Agent     string            `json:"agent"`
	Kind      string            `json:"kind"`
	Model     string            `json:"model,omitempty"`
	Baseline  string            `json:"baseline"`
	Treatment string            `json:"treatment"`
	PassRates map[string]Metric `json:"passRates"`
	// Uplift is the treatment's pass rate minus the baseline's on the
	// uplift rule's cases, paired on (case, trial), the case the unit.
	Uplift *Inference `json:"uplift,omitempty"`
	// Activation counts each skill arm's valid cells by the strongest
	// evidence of a skill activation they show ("none": no activation).
	Activation map[string]map[string]int `json:"activation"`
	Verdict    string                    `json:"verdict"`
}

// portabilityArms are the arms an uplift is read between, and the cases
// it reads: the policy's uplift rule's, else the first arm without skills
// and the first with.
func portabilityArms(p *plan.Plan) Comparison {
	for _, c := range Comparisons(p.Policy) {
		if c.Rule == "uplift" {
			return c
		}
	}
	c := Comparison{Rule: "uplift"}
	for _, a := range p.Arms {
		switch {
		case len(a.Skills) == 0 && !a.Targets && c.Baseline == "":
			c.Baseline = a.Name
		case (len(a.Skills) > 0 || a.Targets) && c.Candidate == "":
			c.Candidate = a.Name
		}
	}
	return c
}

// buildAgentsReport is the report of a plan on several agents: each
// agent's verdict is the policy's on its own cells, as if the suite ran on
// it alone; the run's is the worst of them (FAIL, then INCOMPLETE), with
// each reason naming its agent, and the portability rule's. Arms and cases
// show every agent's cells together.
func buildAgentsReport(p *plan.Plan, results []grade.CellResult, pairwise []grade.PairwiseResult) *Report {
	cells := alignResults(p, results)
	rep := reportHead(p, cells, pairwise)
	byAgent := map[string][]grade.CellResult{}
	for i, c := range p.Cells {
		byAgent[c.Agent] = append(byAgent[c.Agent], cells[i])
	}
	cmp := portabilityArms(p)
	port := &Portability{}
	var groups [][]inference.Pair
	var rules []RuleOutcome
	var incomplete []string
	resumable := false
	for _, name := range p.AgentNames() {
		q := p.ForAgent(name)
		sub := BuildJudgedReport(q, byAgent[name], nil)
		row, pairs := portabilityRow(q, name, byAgent[name], sub, cmp)
		port.Agents = append(port.Agents, row)
		groups = append(groups, pairs)
		resumable = resumable || sub.Verdict.Resumable
		if sub.Verdict.Verdict == VerdictIncomplete {
			// What made it incomplete; its rules' reasons come with them.
			for _, r := range sub.Verdict.Reasons {
				if !slices.ContainsFunc(sub.Verdict.Rules, func(o RuleOutcome) bool { return slices.Contains(o.Reasons, r) }) {
					incomplete = append(incomplete, name+": "+r)
				}
			}
		}
		for _, o := range sub.Verdict.Rules {
			o.Detail = "agent " + name + ": " + o.Detail
			o.Reasons = prefixed(name, o.Reasons)
			o.Warnings = prefixed(name, o.Warnings)
			rules = append(rules, o)
		}
	}
	if h, err := inference.TestHeterogeneity(groups, string(p.Digest)); err == nil && h.N > 0 {
		port.Heterogeneity = &h
	}
	if r := p.Policy.Portability; r != nil && r.Enabled && r.RequireUpliftOnEvery {
		rules = append(rules, upliftOnEvery(r.RuleBase, r.MinPoints, port.Agents))
	}
	rep.Verdict = decideVerdict(incomplete, rules)
	// An agent's rule not measured is among its reasons, named.
	rep.Verdict.Reasons = slices.DeleteFunc(rep.Verdict.Reasons, func(r string) bool {
		return strings.HasPrefix(r, "NOT-MEASURED ") && r != "NOT-MEASURED portability"
	})
	rep.Verdict.Resumable = resumable && rep.Verdict.Verdict == VerdictIncomplete
	rep.Portability = port
	return rep
}

// portabilityRow is one agent's figures from its own cells and report,
// and the paired trials its uplift reads.
func portabilityRow(q *plan.Plan, name string, cells []grade.CellResult, sub *Report, cmp Comparison) (PortabilityAgent, []inference.Pair) {
	row := PortabilityAgent{Agent: name, Kind: q.Agent.Kind, Model: q.Agent.Model, Baseline: cmp.Baseline, Treatment: cmp.Candidate,
		PassRates: map[string]Metric{}, Activation: map[string]map[string]int{}, Verdict: sub.Verdict.Verdict}
	in := &policyInput{p: q, cells: cells, cases: caseIndex(q)}
	for _, a := range q.Arms {
		var t passCounter
		for _, tr := range in.armTrials(a.Name, cmp.Keeps) {
			t.n++
			if tr.Passed {
				t.pass++
			}
		}
		t.set(row.PassRates, a.Name)
		if len(a.Skills) > 0 || a.Targets {
			row.Activation[a.Name] = activation(cells, a.Name)
		}
	}
	pairs := pairTrials(in.armTrials(cmp.Baseline, cmp.Keeps), in.armTrials(cmp.Candidate, cmp.Keeps))
	alpha := significanceAlpha(q.Policy)
	if inf := compare(cmp, pairs, alpha, detectPower(q.Policy), string(q.Digest)+" "+name, true); inf != nil && inf.N > 0 {
		row.Uplift = inf
	}
	return row, pairs
}

// activation counts an arm's valid cells by the strongest evidence level
// of the skill activations each shows.
func activation(cells []grade.CellResult, arm string) map[string]int {
	out := map[string]int{}
	for _, r := range cells {
		if r.Arm != arm || !r.Valid() {
			continue
		}
		level, best := "none", len(evidenceRank)
		for _, e := range r.Telemetry.Skills {
			if rank, ok := evidenceRank[e.Evidence]; ok && rank < best {
				level, best = e.Evidence, rank
			}
		}
		out[level]++
	}
	return out
}

// upliftOnEvery is the portability rule: every agent's uplift estimate is
// above minPoints percentage points; the reason names each agent that
// fails, and an agent with no paired trials is not measured.
func upliftOnEvery(base suite.RuleBase, minPoints float64, agents []PortabilityAgent) RuleOutcome {
	o := ruleOutcome("portability", base)
	var details []string
	for _, a := range agents {
		if a.Uplift == nil {
			o.notMeasured(fmt.Sprintf("agent %s has no paired trials of %s and %s", a.Agent, a.Treatment, a.Baseline))
			return o
		}
		up := a.Uplift.Estimate
		details = append(details, fmt.Sprintf("%s %+.1f points", a.Agent, 100*up))
		if !exceeds(100*up, minPoints) {
			o.fail(fmt.Sprintf("NO-UPLIFT-ON %s: %s %s vs %s %s, uplift %+.1f points, the policy asks more than %g on every agent",
				a.Agent, a.Treatment, rateText(a.PassRates, a.Treatment), a.Baseline, rateText(a.PassRates, a.Baseline), 100*up, minPoints))
		}
	}
	o.Detail = "uplift on every agent: " + joinDetails(details)
	return o
}

func rateText(m map[string]Metric, arm string) string {
	if r, ok := m[arm]; ok {
		return percent(r.Value)
	}
	return "n/a"
}

func prefixed(agent string, texts []string) []string {
	if texts == nil {
		return nil
	}
	out := slices.Clone(texts)
	for i := range out {
		out[i] = agent + ": " + out[i]
	}
	return out
}
