package suite

import (
	"encoding/json"
	"testing"
)

// The stand-in replaces a real agent and judge, keeps a suite's own scripts,
// and its judge answers each rubric with one result per criterion: the rule
// of the longest rubric first, found by the packet's last criterion index.
func TestStandInSuite(t *testing.T) {
	s := &Suite{
		Agent: Agent{Provider: "anthropic", CredentialEnv: "ANTHROPIC_API_KEY", Upstream: "https://api.anthropic.com"},
		Judge: &Judge{Provider: "anthropic", Mode: "rubric"},
		Cases: map[string]Case{"a": {Rubric: []string{"x"}}, "b": {Rubric: []string{"x", "y", "z"}}, "c": {}},
	}
	s.UseStandIn()
	if s.Agent.Provider != "scripted" || s.Agent.Script == nil || s.Agent.StandIn != StandInLabel || s.Agent.CredentialEnv != "" || s.Agent.Upstream != "" {
		t.Fatalf("agent %+v", s.Agent)
	}
	if s.Judge.Provider != "scripted" || s.Judge.Script == nil || *s.Judge.Prices.PerCall != 0 {
		t.Fatalf("judge %+v", s.Judge)
	}
	rules := s.Judge.Script.Rules
	if len(rules) != 3 {
		t.Fatalf("%d judge rules, want 3 (rubrics of 3 and 1 criteria, then pairwise)", len(rules))
	}
	for i, want := range []struct {
		marker   string
		criteria int
	}{{`"index": 2,`, 3}, {`"index": 0,`, 1}} {
		r := rules[i]
		if r.When == nil || r.When.Contains == nil || *r.When.Contains != want.marker {
			t.Errorf("rule %d: when %+v, want contains %q", i, r.When, want.marker)
			continue
		}
		var reply struct {
			Criteria []struct {
				Criterion int  `json:"criterion"`
				Pass      bool `json:"pass"`
			} `json:"criteria"`
		}
		if err := json.Unmarshal([]byte(*r.Reply[0].Text), &reply); err != nil || len(reply.Criteria) != want.criteria {
			t.Errorf("rule %d: reply %s (%v), want %d criteria", i, *r.Reply[0].Text, err, want.criteria)
		}
	}
	if w := rules[2]; w.When != nil || *w.Reply[0].Text == "" {
		t.Errorf("last rule %+v, want the pairwise tie for any request", w)
	}

	// A suite already on the scripted model keeps its script; it is labelled all the same.
	own := &Script{Model: "own"}
	s = &Suite{Agent: Agent{Provider: "scripted", Script: own}, Judge: &Judge{Provider: "scripted", Script: own}}
	s.UseStandIn()
	if s.Agent.Script != own || s.Judge.Script != own || s.Agent.StandIn != StandInLabel {
		t.Errorf("a scripted suite's own scripts were replaced: %+v", s.Agent)
	}
}
