package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// redPanels evaluates the rules that allow a rerun and lists the panels they fail.
func (in *policyInput) redPanels() []plan.Panel {
	in.red = nil
	if r := in.p.Policy.Regression; r != nil && r.Enabled {
		in.regression(r)
	}
	if r := in.p.Policy.Safety; r != nil && r.Enabled {
		in.safety(r)
	}
	return in.red
}

// rerunPasses decides a failing panel with its same-tree reruns: flaky when a complete
// rerun of it passes; tried is how many reruns were read.
func (in *policyInput) rerunPasses(pn plan.Panel, passes func(passCounter) bool) (flaky bool, tried int) {
	for n := 1; n <= in.p.Policy.RerunRed; n++ {
		c, ok := in.reruns.panel(pn, n)
		if !ok {
			break
		}
		tried = n
		if passes(c) {
			return true, n
		}
	}
	return false, tried
}

// failPanel fails the outcome for a red panel, or, when a rerun passed, warns FLAKY.
func (in *policyInput) failPanel(o *RuleOutcome, tag string, pn plan.Panel, passes func(passCounter) bool) string {
	flaky, tried := in.rerunPasses(pn, passes)
	if flaky {
		o.Warnings = append(o.Warnings, "FLAKY "+pn.Case)
		o.Flags = append(o.Flags, fmt.Sprintf("%s failed in %s, then passed its rerun %d: flaky", pn.Case, pn.Arm, tried))
		return fmt.Sprintf(", rerun %d passed: FLAKY", tried)
	}
	o.fail(tag + " " + pn.Case)
	in.red = append(in.red, pn)
	if tried > 0 {
		return fmt.Sprintf(", and %d same-tree rerun(s) failed too", tried)
	}
	return ""
}

// regression: per case, before passing (≥ minPasses) and after not.
func (in *policyInput) regression(r *suite.Regression) RuleOutcome {
	o := ruleOutcome("regression", r.RuleBase)
	if in.missing(&o, "REGRESSION", r.Before, r.After) {
		return o
	}
	var parts []string
	for _, pc := range in.p.Cases {
		b, a := in.panel(pc.ID, r.Before), in.panel(pc.ID, r.After)
		if b.pass >= r.MinPasses && a.pass < r.MinPasses {
			more := in.failPanel(&o, "REGRESSION", plan.Panel{Case: pc.ID, Arm: r.After}, func(c passCounter) bool { return c.pass >= r.MinPasses })
			parts = append(parts, fmt.Sprintf("%s: %s %d/%d, %s %d/%d%s", pc.ID, r.Before, b.pass, b.n, r.After, a.pass, a.n, more))
			if !o.Met && o.Findings[len(o.Findings)-1].Text == "" {
				o.because(fmt.Sprintf("Case %s passed in %s (%d of %d trials) but not in %s (%d of %d)%s.", pc.ID, r.Before, b.pass, b.n, r.After, a.pass, a.n, more),
					in.failedCells(r.After, ofCase(pc.ID)))
			}
		}
	}
	if o.Met {
		o.Detail = fmt.Sprintf("no case that passed %s (at least %d trials) fails %s", r.Before, r.MinPasses, r.After)
	} else {
		o.Detail = joinDetails(parts) + fmt.Sprintf(" (a panel passes with at least %d passing trials)", r.MinPasses)
	}
	return o
}

// safety: any failed trial of a safety case in the arm.
func (in *policyInput) safety(r *suite.SafetyRule) RuleOutcome {
	o := ruleOutcome("safety", r.RuleBase)
	if in.missing(&o, "SAFETY", r.Arm) {
		return o
	}
	var parts []string
	cases := 0
	for _, pc := range in.p.Cases {
		if !pc.Safety {
			continue
		}
		cases++
		c := in.panel(pc.ID, r.Arm)
		if c.pass < c.n {
			more := in.failPanel(&o, "SAFETY", plan.Panel{Case: pc.ID, Arm: r.Arm}, func(c passCounter) bool { return c.pass == c.n && c.n > 0 })
			parts = append(parts, fmt.Sprintf("%s: %d of %d trials failed in %s%s", pc.ID, c.n-c.pass, c.n, r.Arm, more))
			if !o.Met && o.Findings[len(o.Findings)-1].Text == "" {
				o.because(fmt.Sprintf("Safety case %s failed %d of %d trials in %s%s; any failed trial of a safety case fails the gate.", pc.ID, c.n-c.pass, c.n, r.Arm, more),
					in.failedCells(r.Arm, ofCase(pc.ID)))
			}
		}
	}
	switch {
	case cases == 0:
		o.Detail = "no safety case"
	case o.Met:
		o.Detail = fmt.Sprintf("every trial of %d safety cases passed in %s", cases, r.Arm)
	default:
		o.Detail = joinDetails(parts)
	}
	return o
}

// uncovered: a case every arm fails. A case some arm never ran (a run
// filtered by --case or --arm) is not called uncovered: the arm not run
// might cover it.
func (in *policyInput) uncovered(r *suite.Uncovered) RuleOutcome {
	o := ruleOutcome("uncovered", r.RuleBase)
	for _, pc := range in.p.Cases {
		if !in.everyArmRan(pc.ID) {
			continue
		}
		covered := false
		for _, a := range in.p.Arms {
			if in.panel(pc.ID, a.Name).pass >= r.MinPasses {
				covered = true
				break
			}
		}
		if !covered {
			o.fail("UNCOVERED " + pc.ID)
			o.because(fmt.Sprintf("No arm passes case %s (at least %d trials): the case measures nothing about the skill.", pc.ID, r.MinPasses),
				in.failedCells("", ofCase(pc.ID)))
		}
	}
	if o.Met {
		o.Detail = fmt.Sprintf("every case passes (at least %d trials) in some arm", r.MinPasses)
	} else {
		o.Detail = fmt.Sprintf("no arm passes %s (at least %d trials)", plan.Plural(len(o.Reasons), "case"), r.MinPasses)
	}
	return o
}

// everyArmRan says whether every arm of the plan has a cell of the case
// that ran (valid or not): one a filtered run never started has none.
func (in *policyInput) everyArmRan(caseID string) bool {
	ran := map[string]bool{}
	for _, res := range in.cells {
		if res.Case == caseID && res.Status != grade.StatusMissing {
			ran[res.Arm] = true
		}
	}
	for _, a := range in.p.Arms {
		if !ran[a.Name] {
			return false
		}
	}
	return true
}

// armRan says whether any cell of the arm ran (valid or not).
func (in *policyInput) armRan(arm string) bool {
	return slices.ContainsFunc(in.cells, func(res grade.CellResult) bool {
		return res.Arm == arm && res.Status != grade.StatusMissing
	})
}

// worse: after's overall pass rate below before's by more than
// standardErrors standard errors of the difference.
func (in *policyInput) worse(r *suite.Worse) RuleOutcome {
	o := ruleOutcome("worse", r.RuleBase)
	if in.missing(&o, "WORSE", r.Before, r.After) {
		return o
	}
	b, a := in.tally(r.Before, nil), in.tally(r.After, nil)
	p1, p2 := b.share(), a.share()
	se := math.Sqrt(p1*(1-p1)/float64(b.n) + p2*(1-p2)/float64(a.n))
	drop := p1 - p2
	if exceeds(drop, r.StandardErrors*se) {
		o.fail("WORSE")
		o.because(fmt.Sprintf("%s passes %s of its trials (%d/%d), %s %s (%d/%d): a drop of %.1f points, more than %g standard errors (%.1f points).",
			r.After, percent(p2), a.pass, a.n, r.Before, percent(p1), b.pass, b.n, 100*drop, r.StandardErrors, 100*r.StandardErrors*se),
			in.failedCells(r.After, nil))
	}
	o.Detail = fmt.Sprintf("%s %s (%d/%d), %s %s (%d/%d): drop %.1f points, %g SE = %.1f points",
		r.Before, percent(p1), b.pass, b.n, r.After, percent(p2), a.pass, a.n, 100*drop, r.StandardErrors, 100*r.StandardErrors*se)
	return o
}

// openedSkill: each arm that installs skills opens one in at least
// minRate of its valid runs.
func (in *policyInput) openedSkill(r *suite.OpenedSkill) RuleOutcome {
	o := ruleOutcome("openedSkill", r.RuleBase)
	var parts []string
	for _, a := range in.p.Arms {
		if len(plan.ArmSkills(in.p, a)) == 0 || !in.armRan(a.Name) {
			continue
		}
		var c passCounter
		for _, res := range in.cells {
			if res.Arm == a.Name && res.Valid() {
				c.add(res.Telemetry.OpenedSkill)
			}
		}
		if c.n == 0 {
			o.fail("SKILL-NOT-OPENED " + a.Name)
			o.because(fmt.Sprintf("Arm %s has no valid run to tell whether it opens its skill.", a.Name), nil)
			parts = append(parts, a.Name+": no valid run")
			continue
		}
		if !atLeast(c.share(), r.MinRate) {
			o.fail("SKILL-NOT-OPENED " + a.Name)
			o.because(fmt.Sprintf("Arm %s opened a skill in %d of %d runs (%s, min %s): its scores measure the agent's own knowledge more than the skill.", a.Name, c.pass, c.n, percent(c.share()), percent(r.MinRate)),
				in.cellsWhere(a.Name, nil, func(r grade.CellResult) bool { return r.Valid() && !r.Telemetry.OpenedSkill }))
		}
		parts = append(parts, fmt.Sprintf("%s: %d/%d runs opened a skill (%s, min %s)", a.Name, c.pass, c.n, percent(c.share()), percent(r.MinRate)))
	}
	if len(parts) == 0 {
		o.Detail = "no arm installs a skill"
	} else {
		o.Detail = joinDetails(parts)
	}
	return o
}
