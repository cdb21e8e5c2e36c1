package plan

import (
	"fmt"
	"slices"

	"github.com/skillgate/skillgate/pipeline/suite"

	"github.com/opencontainers/go-digest"
)

// A suite on several agents (its `agentSet`) plans every case × arm × trial
// on each agent: the agent is a dimension of the plan. Each agent's cells
// are the cells the suite would plan on that agent alone, with the same
// rollout and grade keys, so changing one agent reruns only its cells,
// and a run folder of the suite on one of its agents is reused as it is.
// Their IDs are the agent's name before the cell's own ID.

// AgentCellID names a cell of a plan on several agents.
func AgentCellID(agent, id string) string { return agent + "/" + id }

// compileAgents plans the suite on each of its agents and puts the cells
// together, agent by agent in the suite's order; the plan's agent is the
// first, its arms and cases as planned on it.
func compileAgents(s *suite.Suite, selected []string) (*Plan, error) {
	var out *Plan
	for _, name := range s.AgentOrder {
		one := *s
		one.Agent, one.Agents, one.AgentOrder = s.Agents[name], nil, nil
		p, err := CompileCases(&one, selected)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		if out == nil {
			q := *p
			q.Cells = make([]Cell, 0, len(p.Cells)*len(s.AgentOrder))
			out = &q
		}
		a := p.Agent
		a.Name = name
		out.Agents = append(out.Agents, a)
		for _, c := range p.Cells {
			c.Agent, c.ID = name, AgentCellID(name, c.ID)
			out.Cells = append(out.Cells, c)
		}
	}
	out.Digest = out.ComputeDigest()
	return out, nil
}

// AgentNames are the names of a plan's agents: one "" for a plan on one
// agent.
func (p *Plan) AgentNames() []string {
	if len(p.Agents) == 0 {
		return []string{""}
	}
	out := make([]string, len(p.Agents))
	for i, a := range p.Agents {
		out[i] = a.Name
	}
	return out
}

// ForAgent is the plan as one of its agents runs it: that agent, its
// cells only, and the arms' and cases' digests as planned on it. Its
// digest is the whole plan's, the run folder's. A plan on one agent is
// returned as it is, whatever the name.
func (p *Plan) ForAgent(name string) *Plan {
	i := slices.IndexFunc(p.Agents, func(a PlanAgent) bool { return a.Name == name })
	if len(p.Agents) == 0 || i < 0 {
		return p
	}
	q := *p
	q.Agent, q.Agents = p.Agents[i], nil
	q.Cells = nil
	for _, c := range p.Cells {
		if c.Agent == name {
			q.Cells = append(q.Cells, c)
		}
	}
	q.Arms = slices.Clone(p.Arms)
	for j := range q.Arms {
		q.Arms[j].Digest = armDigest(&q, q.Arms[j], nil)
	}
	q.Cases = slices.Clone(p.Cases)
	for j := range q.Cases {
		q.Cases[j].RolloutDigest = caseRolloutDigest(q.Cases[j], q.Agent.Agent, q.Limits.Limits)
	}
	return &q
}

// caseRolloutDigest digests a case's rollout inputs (prompt, seed, fixture,
// overlay, replies, environment, setup, sampling) for agent a: its resume
// command and session flags count for a case with replies.
func caseRolloutDigest(pc PlanCase, a suite.Agent, lim suite.Limits) digest.Digest {
	c := pc.Case
	// Fields a case gained after results were stored enter its keys
	// only when set, so the keys of a case without them stand.
	var resume, session []string
	if len(c.Replies) > 0 {
		resume, session = a.Resume, a.SessionArgs
	}
	return DigestJSON(struct {
		Prompt      string        `json:"prompt"`
		Seed        []suite.Turn  `json:"seed"`
		Fixture     digest.Digest `json:"fixture"`
		Overlay     digest.Digest `json:"overlay,omitempty"`
		Replies     []string      `json:"replies,omitempty"`
		Resume      []string      `json:"resume,omitempty"`
		Session     []string      `json:"session,omitempty"`
		Environment digest.Digest `json:"environment,omitempty"`
		Setup       *setupKey     `json:"setup,omitempty"`
		// Sampling overrides enter the key only when set, so keys
		// of cases without them stay as they were.
		Temperature *float64 `json:"temperature,omitempty"`
		Effort      string   `json:"effort,omitempty"`
	}{c.Prompt, c.Seed, pc.FixtureDigest, pc.OverlayDigest, c.Replies, resume, session, pc.EnvironmentDigest, setupOf(pc, lim), c.Temperature, c.Effort})
}
