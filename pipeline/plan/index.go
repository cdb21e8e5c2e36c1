package plan

// CasesByID indexes the plan's cases by their IDs.
func (p *Plan) CasesByID() map[string]PlanCase {
	m := make(map[string]PlanCase, len(p.Cases))
	for _, c := range p.Cases {
		m[c.ID] = c
	}
	return m
}

// ArmsByName indexes the plan's arms by their names.
func (p *Plan) ArmsByName() map[string]PlanArm {
	m := make(map[string]PlanArm, len(p.Arms))
	for _, a := range p.Arms {
		m[a.Name] = a
	}
	return m
}
