package contract

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/formats/benchmarkskill"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/runner/spend"
)

// BenchmarkSkillCases are the cases /benchmark-skill NAME runs of plan p
// (a suite in folder suiteDir, named dir by the user, reading a
// benchmark-skill tree), and the tests/.reports/ folder its reports go to.
// A suite reading no such tree, a skill with no tests and a spend cap that
// cannot be kept (capUSD) are refused before anything runs.
func BenchmarkSkillCases(p *plan.Plan, dir, suiteDir, name string, capUSD float64) (ids []string, reports string, err error) {
	if !slices.Contains(p.Formats, "benchmarkSkill") {
		return nil, "", fmt.Errorf("benchmark-skill %s: the suite in %s reads no benchmark-skill tree (formats.benchmarkSkill)", name, dir)
	}
	var skills []string
	var caseMD string
	for _, pc := range p.Cases {
		skill, _ := report.BenchmarkSkillSkill(pc.ID)
		if !slices.Contains(skills, skill) {
			skills = append(skills, skill)
		}
		if skill == name {
			ids = append(ids, pc.ID)
			if caseMD == "" && len(pc.Sources) > 0 {
				caseMD = pc.Sources[0]
			}
		}
	}
	sk, known := p.Skills[name]
	if len(ids) == 0 || !known {
		return nil, "", fmt.Errorf("benchmark-skill %s: skill %s has no tests in the suite (skills with tests: %s)", name, name, strings.Join(skills, ", "))
	}
	if reports, err = benchmarkskill.ReportsFolder(suiteDir, caseMD, sk.Path); err != nil {
		return nil, "", fmt.Errorf("benchmark-skill %s: %w", name, err)
	}
	if err := spend.CheckCap(p, capUSD); err != nil {
		return nil, "", err
	}
	return ids, reports, nil
}
