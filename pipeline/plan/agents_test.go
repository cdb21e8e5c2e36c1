package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// agentSetSuite is BaseSuite on two agents: the one agent it names as
// "echo", and "printf", which runs another command.
func agentSetSuite(t *testing.T, printf string) map[string]string {
	return suitetest.Edit(t, "suite/suite.cue", `agent: agents.command & {command: ["sh", "-c", "echo hi"]}`, `agentSet: {
		echo: agents.command & {command: ["sh", "-c", "echo hi"]}
		printf: agents.command & {command: ["sh", "-c", "`+printf+`"]}
	}`)
}

// A suite on several agents plans each case × arm × trial on each agent:
// an agent's cells carry the keys the suite has on that agent alone, under
// IDs named by the agent, and its share of the plan is that plan again.
func TestAgentSetCells(t *testing.T) {
	one := compileRoot(t, suitetest.WriteSuite(t, suitetest.BaseSuite))
	two := compileRoot(t, suitetest.WriteSuite(t, agentSetSuite(t, "printf hi")))
	if len(two.Agents) != 2 || len(two.Cells) != 2*len(one.Cells) || two.Agent.Digest != one.Agent.Digest {
		t.Fatalf("%d agents, %d cells (one agent: %d)", len(two.Agents), len(two.Cells), len(one.Cells))
	}
	echo := two.ForAgent("echo")
	for i, c := range one.Cells {
		got := echo.Cells[i]
		if got.ID != "echo/"+c.ID || got.Agent != "echo" || got.Rollout != c.Rollout || got.Grade != c.Grade {
			t.Errorf("cell %s on echo: %+v, want the one-agent cell's keys", c.ID, got)
		}
	}
	if !slices.EqualFunc(echo.Arms, one.Arms, func(a, b PlanArm) bool { return a.Digest == b.Digest }) {
		t.Errorf("echo's arms' digests differ from the one-agent plan's")
	}
	rollouts := map[string]bool{}
	for _, c := range two.Cells {
		if rollouts[string(c.Rollout)] {
			t.Errorf("cell %s shares its rollout key with another agent's", c.ID)
		}
		rollouts[string(c.Rollout)] = true
	}
	// A set of one agent is that agent: the same plan, byte for byte.
	f := suitetest.Edit(t, "suite/suite.cue", `agent: agents.command & {command: ["sh", "-c", "echo hi"]}`, `agentSet: echo: agents.command & {command: ["sh", "-c", "echo hi"]}`)
	if single := compileRoot(t, suitetest.WriteSuite(t, f)); string(single.Encode()) != string(one.Encode()) {
		t.Error("a suite on a set of one agent plans differently from the same suite on that agent")
	}
}

// Changing one agent reruns its cells and no other, and diff says why.
func TestAgentSetDiff(t *testing.T) {
	a := compileRoot(t, suitetest.WriteSuite(t, agentSetSuite(t, "printf hi")))
	b := compileRoot(t, suitetest.WriteSuite(t, agentSetSuite(t, "printf bye")))
	d := DiffPlans(a, b)
	if d.Counts[DiffRollout] != len(a.Cells)/2 || d.Counts[DiffUnchanged] != len(a.Cells)/2 {
		t.Fatalf("counts %v, want half the cells to roll out", d.Counts)
	}
	for _, c := range d.Cells {
		printf := strings.HasPrefix(c.ID, "printf/")
		if printf != (c.Class == DiffRollout) {
			t.Errorf("cell %s: %s", c.ID, c.Class)
		}
		if printf && !slices.ContainsFunc(c.Reasons, func(r string) bool { return strings.HasPrefix(r, "agent.command") }) {
			t.Errorf("cell %s: reasons %q, want the agent's command", c.ID, c.Reasons)
		}
	}
}
