package suite

import (
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
)

// checkScriptReach reports the agent's scripted rules that can never
// answer: a rule after one with no conditions, which answers every request
// first, and a rule whose promptMatches matches no prompt the agent can be
// sent: a case's (alone, in the agent's forced-activation template, or a
// seed turn) or a calibration check's. Such a rule would fall through
// without a word at run time.
func checkScriptReach(c *checker, s *Suite) {
	// The first of several agents is s.Agent, checked as the one agent is.
	for i, name := range s.AgentOrder {
		if i > 0 {
			checkScript(c, s.Agents[name].Script, str("agentSet"), str(name))
		}
	}
	sc := s.Agent.Script
	if sc == nil {
		return
	}
	var prompts, names []string
	for _, k := range sortedKeys(s.Skills) {
		if !slices.Contains(names, s.Skills[k].Name) {
			names = append(names, s.Skills[k].Name)
		}
		// The quoted line's start is the skill's own text: any will do.
		prompts = append(prompts, CalibrationSkillPrompt(s.Skills[k].Name, ""))
	}
	slices.Sort(names)
	prompts = append(prompts, CalibrationNonePrompt(names), CalibrationShellPrompt("echo skillgate-calibration-000000000000"))
	for _, id := range s.CaseOrder {
		prompts = append(prompts, casePrompts(s, s.Cases[id])...)
	}
	at := func(i int, more ...cue.Selector) []cue.Selector {
		return append([]cue.Selector{str("agent"), str("script"), str("rules"), cue.Index(i)}, more...)
	}
	for i, r := range sc.Rules {
		if i > 0 && sc.Rules[i-1].When == nil {
			c.add(at(i), "script rule %d can never answer: rule %d before it has no when, so it answers every request", i, i-1)
			return
		}
		if r.When == nil || r.When.PromptMatches == nil || len(prompts) == 0 {
			continue
		}
		re, err := regexp.Compile(*r.When.PromptMatches)
		if err != nil {
			continue // checkScript reports it
		}
		matched := false
		for _, p := range prompts {
			if matched = re.MatchString(p); matched {
				break
			}
		}
		if !matched {
			c.add(at(i, str("when"), str("promptMatches")), "script rule %d can never answer: promptMatches %q matches no prompt the agent is sent (a case's, forced or not, or a calibration check's)", i, *r.When.PromptMatches)
		}
	}
}

// casePrompts are the prompts a case's agent is sent first, one per arm,
// as the plan words them: after the seed conversation (the agent's
// seedPrompt template), in the forced-prompt template where an arm forces
// its skills (or, with targets, the case's).
func casePrompts(s *Suite, cs Case) []string {
	prompt := cs.Prompt
	if len(cs.Seed) > 0 {
		var turns []string
		for _, t := range cs.Seed {
			role := "User"
			if t.Role == "assistant" {
				role = "Assistant"
			}
			turns = append(turns, role+": "+t.Content)
		}
		prompt = strings.NewReplacer("{{seed}}", strings.Join(turns, "\n\n"), "{{prompt}}", cs.Prompt).Replace(s.Agent.SeedPrompt)
	}
	out := []string{prompt}
	for _, name := range s.ArmOrder {
		arm := s.Arms[name]
		named := arm.Skills
		if arm.Targets {
			named = cs.Targets
		}
		if arm.Activation != "forced" || len(named) == 0 {
			continue
		}
		var names []string
		for _, k := range named {
			names = append(names, s.Skills[k].Name)
		}
		out = append(out, strings.NewReplacer("{{skills}}", strings.Join(names, ", "), "{{prompt}}", prompt).Replace(s.Agent.ForcedPrompt))
	}
	return out
}
