package plan

import "strings"

// Prompt is what the agent of an arm is asked: the case's prompt, after its
// seed conversation (the agent's seedPrompt template), wrapped by the
// agent's forced-prompt template when the arm forces its skills (an arm
// with targets, as CaseArm applies it to pc, forces the case's). Everything
// it reads is in the cell's rollout key (the case, the agent's digest, the
// arm's, which holds the forced prompt only where it applies), so equal
// keys ask the agent the same.
func Prompt(p *Plan, pc PlanCase, arm PlanArm) string {
	prompt := pc.Prompt
	if len(pc.Seed) > 0 {
		var turns []string
		for _, t := range pc.Seed {
			role := "User"
			if t.Role == "assistant" {
				role = "Assistant"
			}
			turns = append(turns, role+": "+t.Content)
		}
		prompt = strings.NewReplacer("{{seed}}", strings.Join(turns, "\n\n"), "{{prompt}}", pc.Prompt).Replace(p.Agent.SeedPrompt)
	}
	named := arm.Skills
	if arm.Targets {
		named = arm.Forced // what CaseArm gave it: the case's targets
	}
	if arm.Activation != "forced" || len(named) == 0 {
		return prompt
	}
	var names []string
	for _, k := range named {
		names = append(names, p.Skills[k].Name)
	}
	r := strings.NewReplacer("{{skills}}", strings.Join(names, ", "), "{{prompt}}", prompt)
	return r.Replace(p.Agent.ForcedPrompt)
}
