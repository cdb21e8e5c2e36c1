package mutate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// describes says an operator breaks the description, which decides
// whether the skill is picked, rather than what the skill says once read.
func describes(op string) bool {
	return op == BlankDescription || op == SwapDescription || op == CutDescription
}

// SourceArms are the arms of s whose copies run mutant m: the arms that
// install its skill with the activation s.Mutants.Arms gives its kind,
// else every arm that installs it.
func SourceArms(s *suite.Suite, m Mutant) []string {
	want := s.Mutants.Arms.Content
	if describes(m.Operator) {
		want = s.Mutants.Arms.Description
	}
	var installs, match []string
	for _, name := range s.ArmOrder {
		a := s.Arms[name]
		if !slices.Contains(a.Skills, m.Skill) {
			continue
		}
		installs = append(installs, name)
		if a.Activation == want {
			match = append(match, name)
		}
	}
	if len(match) == 0 {
		return installs
	}
	return match
}

// SkillKey is the suite key a mutant is installed from: SKILL.ID.
func SkillKey(m Mutant) string { return m.Skill + "." + m.ID }

// Plan compiles the plan of a mutate run: the arms the mutants copy, and
// for each mutant a copy of each of its source arms (ARM.ID) installing
// the mutant under its skill's name instead of the skill. dirs gives each
// mutant's folder relative to the suite folder, by SkillKey. The policy
// keeps its inference levels, its adequacy rule and its sequential
// stopping (each mutant then stops once told apart from the skill, or
// once it can no longer be) and drops the rest: they are about the
// suite's own arms, which a mutate run does not all run. selected are the calibration-only cases to plan, as
// plan.CompileCases takes them.
func Plan(s *suite.Suite, ms []Mutant, dirs map[string]string, selected []string) (*plan.Plan, error) {
	m2 := *s
	m2.Skills = maps.Clone(s.Skills)
	m2.Arms = map[string]suite.Arm{}
	m2.ArmOrder = nil
	m2.Policy = suite.Policy{Name: "mutants", Inference: s.Policy.Inference, Adequacy: s.Policy.Adequacy, TimeoutsIncomplete: s.Policy.TimeoutsIncomplete, Sequential: s.Policy.Sequential}
	var arms []plan.MutantArm
	var copies []string
	for _, m := range ms {
		src := SourceArms(s, m)
		if len(src) == 0 {
			return nil, fmt.Errorf("plan mutants: no arm installs skill %s of mutant %s", m.Skill, m.ID)
		}
		key := SkillKey(m)
		dir, ok := dirs[key]
		if !ok {
			return nil, fmt.Errorf("plan mutants: mutant %s has no folder", key)
		}
		if _, taken := s.Skills[key]; taken {
			return nil, fmt.Errorf("plan mutants: the suite already has a skill %s", key)
		}
		m2.Skills[key] = suite.Skill{Path: dir, Name: s.Skills[m.Skill].Name}
		for _, name := range src {
			if _, ok := m2.Arms[name]; !ok {
				m2.Arms[name] = s.Arms[name]
				m2.ArmOrder = append(m2.ArmOrder, name)
			}
			arm := s.Arms[name]
			arm.Skills = slices.Clone(arm.Skills)
			arm.Skills[slices.Index(arm.Skills, m.Skill)] = key
			arm.Description = fmt.Sprintf("arm %s with mutant %s: %s", name, m.ID, m.What)
			copyName := name + "." + m.ID
			if _, taken := s.Arms[copyName]; taken {
				return nil, fmt.Errorf("plan mutants: the suite already has an arm %s", copyName)
			}
			m2.Arms[copyName] = arm
			copies = append(copies, copyName)
			arms = append(arms, plan.MutantArm{Arm: copyName, Against: name, Mutant: m.ID, Skill: m.Skill, Operator: m.Operator, What: m.What, Section: m.Section})
		}
	}
	m2.ArmOrder = append(m2.ArmOrder, copies...)
	p, err := plan.CompileCases(&m2, selected)
	if err != nil {
		return nil, err
	}
	p.Mutants = arms
	p.Digest = p.ComputeDigest()
	return p, nil
}
