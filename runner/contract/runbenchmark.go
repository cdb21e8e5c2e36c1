package contract

import (
	"fmt"
	"slices"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
)

// RunBenchmarkSkills are the definitions run-benchmark runs of plan p (a
// suite in folder dir reading run-benchmark's definitions): the named
// skills', or with all every definition's. Exactly one of skills and all is
// given; a skill without a definition, and a suite with none, are refused.
func RunBenchmarkSkills(p *plan.Plan, dir string, skills []string, all bool) ([]report.RunBenchmarkDefinition, error) {
	if all == (len(skills) > 0) {
		return nil, fmt.Errorf("run-benchmark takes a SKILL or --all")
	}
	defs := report.RunBenchmarkDefinitions(p)
	if all {
		if len(defs) == 0 {
			return nil, fmt.Errorf("run-benchmark: suite %s reads no benchmark definition", dir)
		}
		return defs, nil
	}
	var out []report.RunBenchmarkDefinition
	for _, s := range skills {
		i := slices.IndexFunc(defs, func(d report.RunBenchmarkDefinition) bool { return d.Skill == s })
		if i < 0 {
			return nil, fmt.Errorf("run-benchmark: no benchmark definition for skill %q in suite %s", s, dir)
		}
		out = append(out, defs[i])
	}
	return out, nil
}
