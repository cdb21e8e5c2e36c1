package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// Outcomes of comparing a validation Δ with a pinned baseline's, in
// run-benchmark's words.
const (
	DeltaImproved   = "IMPROVED"
	DeltaRegression = "REGRESSION"
	DeltaStable     = "STABLE"
)

// CompareDelta compares a validation Δ with a pinned baseline's: a change
// of at most stableWithin, within the rules' tolerance, is STABLE; above it
// IMPROVED, below it REGRESSION.
func CompareDelta(baseline, current, stableWithin float64) string {
	switch {
	case exceeds(current, baseline+stableWithin):
		return DeltaImproved
	case exceeds(baseline-stableWithin, current):
		return DeltaRegression
	}
	return DeltaStable
}

// SkillVerdict is one skill's verdict where a source system gates each
// skill's cases on their own (run-benchmark exits per definition): the
// policy's passAtK rule over those cases alone, read from report r's trial
// outcomes, and, when a pinned baseline was compared with (comparison is
// one of CompareDelta's outcomes, "" when none), a regression from it. A
// case with no valid trial in the rule's with or without arm keeps the
// verdict INCOMPLETE, as the source's pending scenario does.
func SkillVerdict(p *plan.Plan, r *Report, cases []string, comparison string) Verdict {
	sub := *p
	sub.Cases = slices.DeleteFunc(slices.Clone(p.Cases), func(pc plan.PlanCase) bool { return !slices.Contains(cases, pc.ID) })
	sub.Cells = slices.DeleteFunc(slices.Clone(p.Cells), func(c plan.Cell) bool { return !slices.Contains(cases, c.Case) })
	var results []grade.CellResult
	for _, cr := range r.Cases {
		if !slices.Contains(cases, cr.ID) {
			continue
		}
		for arm, trials := range cr.Trials {
			for _, t := range trials {
				results = append(results, grade.CellResult{Cell: t.Cell, Case: cr.ID, Arm: arm, Trial: t.Trial, Status: t.Status, Passed: t.Passed})
			}
		}
	}
	in := newPolicyInput(&sub, alignResults(&sub, results), nil, nil, nil)
	var rules []RuleOutcome
	var pending []string
	if rule := p.Policy.PassAtK; rule != nil && rule.Enabled {
		rules = append(rules, in.passAtK(rule))
		for _, pc := range sub.Cases {
			with, without := in.panel(pc.ID, rule.With), in.panel(pc.ID, rule.Without)
			if with.n == 0 || without.n == 0 {
				pending = append(pending, pc.ID)
			}
		}
	}
	if comparison == DeltaRegression {
		o := RuleOutcome{Rule: "baseline", Severity: SeverityFail, Reasons: []string{}}
		o.fail("BASELINE-REGRESSION")
		o.Detail = "the validation Δ fell below the pinned baseline's"
		rules = append(rules, o)
	}
	var incomplete []string
	if len(pending) > 0 {
		incomplete = append(incomplete, fmt.Sprintf("PENDING %s", strings.Join(pending, " ")))
	}
	return decideVerdict(incomplete, rules)
}
