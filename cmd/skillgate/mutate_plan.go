package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillgate/skillgate/pipeline/mutate"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// plannedMutants compiles the plan a mutate run into the run folder out
// would run, without writing there: the mutants' folders are written
// where nothing keeps them, and the plan then names them where the run
// writes them (out/mutants/SKILL/ID), so its digest is the run's.
func plannedMutants(s *suite.Suite, ms []mutate.Mutant, out string) (*plan.Plan, error) {
	tmp, err := os.MkdirTemp(s.Root, ".skillgate-mutants-")
	if err != nil {
		return nil, fmt.Errorf("plan mutants: %w", err)
	}
	defer os.RemoveAll(tmp)
	p, err := mutantPlan(s, ms, tmp)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		key := mutate.SkillKey(m)
		rel, err := filepath.Rel(s.Dir, filepath.Join(out, "mutants", m.Skill, m.ID))
		if err != nil {
			return nil, fmt.Errorf("plan mutants: %w", err)
		}
		sk := p.Skills[key]
		sk.Path = filepath.ToSlash(rel)
		p.Skills[key] = sk
	}
	p.Digest = p.ComputeDigest()
	return p, nil
}

// defaultMutantsFolder is a mutate run's folder when --out is not given,
// resolved from the current folder.
func defaultMutantsFolder(s *suite.Suite) string {
	return filepath.Join(".skillgate", s.Name+"-mutants")
}

// mutantPlanOf is the mutate plan of target at git revision rev ("" for
// the working tree): a plan file as it is (a mutate run's plan.json), or
// a suite folder's mutants, by the suite's own operators, planned for
// the default run folder at the repository's root.
func mutantPlanOf(target, rev string) (*plan.Plan, error) {
	compile := func(s *suite.Suite) (*plan.Plan, error) {
		_, ms, err := deriveMutants(s, s.Mutants.Operators)
		if err != nil {
			return nil, err
		}
		return plannedMutants(s, ms, filepath.Join(s.Root, defaultMutantsFolder(s)))
	}
	if rev != "" {
		return plan.AtRevision(target, rev, compile)
	}
	st, err := os.Stat(target)
	if err != nil {
		return nil, fmt.Errorf("read target: %w", err)
	}
	if !st.IsDir() {
		return plan.ReadPlan(target)
	}
	s, err := suite.LoadSuite(target)
	if err != nil {
		return nil, err
	}
	return compile(s)
}
