package plan

import (
	"fmt"
	"strings"
)

// PlanSummary counts what a plan will do.
type PlanSummary struct {
	Cases      int `json:"cases"`
	Arms       int `json:"arms"`
	Trials     int `json:"trials"`
	Cells      int `json:"cells"`
	AgentCalls int `json:"agentCalls"`
	JudgeCalls int `json:"judgeCalls"`
	// CostUSD is estimated only from the suite's own perCall prices.
	CostUSD *float64 `json:"costUSD,omitempty"`
	// Replicates say each replicate arm and the arm it repeats, as
	// "REPLICATE of ARM": what the run measures its noise floor on.
	Replicates []string `json:"replicates,omitempty"`
	// Agents counts the agents of a plan on several.
	Agents int `json:"agents,omitempty"`
}

// Summary counts the plan's cells and model calls and, when the suite gives
// per-call prices, estimates their cost.
func (p *Plan) Summary() PlanSummary {
	s := PlanSummary{Cases: len(p.Cases), Arms: len(p.Arms), Trials: p.Suite.Trials, Cells: len(p.Cells), AgentCalls: len(p.Cells)}
	for _, a := range p.Arms {
		if a.ReplicateOf != "" {
			s.Replicates = append(s.Replicates, a.Name+" of "+a.ReplicateOf)
		}
	}
	if p.Judge != nil {
		if p.Judge.Mode == "pairwise" {
			per := len(p.Judge.Pairs)
			if p.Judge.Swap {
				per *= 2
			}
			s.JudgeCalls = len(p.Cases) * p.Suite.Trials * per
		} else {
			for _, c := range p.Cases {
				if len(c.Rubric) > 0 {
					s.JudgeCalls += len(p.Arms) * p.Suite.Trials
				}
			}
		}
	}
	if len(p.Agents) > 1 {
		s.Agents = len(p.Agents)
		s.JudgeCalls *= s.Agents
	}
	var cost float64
	priced := false
	if pr := p.Agent.Prices; pr != nil && pr.PerCall != nil {
		cost += float64(s.AgentCalls) * *pr.PerCall
		priced = true
	}
	if p.Judge != nil && p.Judge.Prices != nil && p.Judge.Prices.PerCall != nil {
		cost += float64(s.JudgeCalls) * *p.Judge.Prices.PerCall
		priced = true
	}
	if priced {
		s.CostUSD = &cost
	}
	return s
}

// String renders the summary for people.
func (s PlanSummary) String() string {
	var b strings.Builder
	agents := ""
	if s.Agents > 1 {
		agents = " × " + Plural(s.Agents, "agent")
	}
	fmt.Fprintf(&b, "%s × %s × %s%s = %s\n", Plural(s.Cases, "case"), Plural(s.Arms, "arm"), Plural(s.Trials, "trial"), agents, Plural(s.Cells, "cell"))
	if len(s.Replicates) > 0 {
		fmt.Fprintf(&b, "replicate arms (own cells and keys, for the noise floor): %s\n", strings.Join(s.Replicates, ", "))
	}
	fmt.Fprintf(&b, "model calls: %d agent sessions, %d judge calls\n", s.AgentCalls, s.JudgeCalls)
	if s.CostUSD != nil {
		fmt.Fprintf(&b, "estimated cost: $%.2f (from the suite's perCall prices)\n", *s.CostUSD)
	} else {
		b.WriteString("estimated cost: unknown (set agent.prices.perCall and judge.prices.perCall to estimate)\n")
	}
	return b.String()
}

// plural writes a count with its noun.
func Plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
