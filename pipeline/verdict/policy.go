package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// Severities of policy rules.
const (
	SeverityFail = "fail"
	SeverityWarn = "warn"
)

// ruleTolerance absorbs floating-point rounding when a figure is compared with
// a threshold, so that a figure exactly at its threshold (10 points of
// uplift, 80% retention, 0.85 recall) counts as at it. Rates here are
// ratios of small integers: a real difference is many orders larger.
const ruleTolerance = 1e-9

// atLeast reports whether a ≥ b up to rounding.
func atLeast(a, b float64) bool { return a >= b-ruleTolerance }

// exceeds reports whether a > b beyond rounding.
func exceeds(a, b float64) bool { return a > b+ruleTolerance }

// percent renders a rate as a percentage.
func percent(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// ruleOutcome starts a met rule outcome.
func ruleOutcome(rule string, base suite.RuleBase) RuleOutcome {
	return RuleOutcome{Rule: rule, Severity: base.Severity, Met: true, Reasons: []string{}}
}

// fail marks the outcome not met for a reason.
func (o *RuleOutcome) fail(reason string) {
	o.Met = false
	o.Reasons = append(o.Reasons, reason)
	o.Findings = append(o.Findings, Finding{Reason: reason})
}

// because says the last reason as a sentence, with the cells behind it.
func (o *RuleOutcome) because(text string, cells []string) {
	if n := len(o.Findings); n > 0 {
		o.Findings[n-1].Text, o.Findings[n-1].Cells = text, cells
	}
}

// notMeasured makes the outcome neither met nor failed: the run's results
// cannot evaluate it.
func (o *RuleOutcome) notMeasured(why string) {
	o.Met, o.NotMeasured, o.Detail = false, why, "not measured: "+why
}

// failedCells are the IDs of the arm's valid cells that did not pass, over
// the cases keep accepts (all when nil).
func (in *policyInput) failedCells(arm string, keep func(*plan.PlanCase) bool) []string {
	return in.cellsWhere(arm, keep, func(r grade.CellResult) bool { return r.Valid() && !r.Passed })
}

// cellsWhere are the IDs of the arm's cells (every arm's when arm is "")
// over the cases keep accepts that match.
func (in *policyInput) cellsWhere(arm string, keep func(*plan.PlanCase) bool, match func(grade.CellResult) bool) []string {
	var out []string
	for _, r := range in.cells {
		if arm != "" && r.Arm != arm {
			continue
		}
		if pc := in.cases[r.Case]; pc == nil || (keep != nil && !keep(pc)) {
			continue
		}
		if match(r) {
			out = append(out, r.Cell)
		}
	}
	return out
}

// ofCase accepts one case.
func ofCase(id string) func(*plan.PlanCase) bool {
	return func(pc *plan.PlanCase) bool { return pc.ID == id }
}

// joinDetails joins detail parts for people.
func joinDetails(parts []string) string { return strings.Join(parts, "; ") }

// policyInput is what rules read: the plan, its cells aligned with the
// plan's cells, the arms' reports and the pairwise judgements.
type policyInput struct {
	p        *plan.Plan
	cells    []grade.CellResult
	arms     map[string]*ArmReport
	planArms map[string]*plan.PlanArm
	cases    map[string]*plan.PlanCase
	pairwise []grade.PairwiseResult
	// reruns are the same-tree reruns of red panels (rerunRed).
	reruns reruns
	// red collects the panels the regression and safety rules fail.
	red []plan.Panel
	// panels caches passes and valid trials by case and arm.
	panels map[[2]string]passCounter
	// resampled: the cells are a resampled run of the noise floor's,
	// decided for its verdict alone.
	resampled bool
}

func newPolicyInput(p *plan.Plan, cells []grade.CellResult, arms []ArmReport, pairwise []grade.PairwiseResult, rs reruns) *policyInput {
	if arms == nil {
		arms = buildArmReports(p, cells)
	}
	in := &policyInput{p: p, cells: cells, arms: map[string]*ArmReport{}, planArms: map[string]*plan.PlanArm{}, cases: caseIndex(p), pairwise: pairwise, reruns: rs}
	for i := range arms {
		in.arms[arms[i].Name] = &arms[i]
	}
	for i := range p.Arms {
		in.planArms[p.Arms[i].Name] = &p.Arms[i]
	}
	return in
}

// has reports whether the plan has the arm and the arm has a valid cell;
// a rule cannot be evaluated on an arm without one.
func (in *policyInput) has(arm string) bool {
	if in.planArms[arm] == nil {
		return false
	}
	for _, r := range in.cells {
		if r.Arm == arm && r.Valid() {
			return true
		}
	}
	return false
}

// missing fails the outcome for each arm the plan lacks (the policy names an
// arm the suite does not have), or marks it not measured when the arm has no
// valid cell in this run's results, and reports whether any was missing.
func (in *policyInput) missing(o *RuleOutcome, tag string, arms ...string) bool {
	var gone, empty []string
	for _, a := range arms {
		switch {
		case slices.Contains(gone, a) || slices.Contains(empty, a):
		case in.planArms[a] == nil:
			gone = append(gone, a)
			o.fail(tag + " missing arm " + a)
			o.because(fmt.Sprintf("The policy's %s rule compares arm %s, which the suite does not have.", o.Rule, a), nil)
		case !in.has(a):
			empty = append(empty, a)
		}
	}
	switch {
	case len(gone) > 0:
		o.Detail = "no arm " + strings.Join(gone, ", ") + " in the suite: the rule cannot be evaluated"
	case len(empty) > 0:
		o.notMeasured("no valid cell in arm " + strings.Join(empty, ", ") + " (filtered out, not run yet, or invalid)")
	}
	return len(gone) > 0 || len(empty) > 0
}

// tally counts passes and valid trials of an arm over the cases keep
// accepts (all cases when keep is nil).
func (in *policyInput) tally(arm string, keep func(*plan.PlanCase) bool) passCounter {
	var c passCounter
	for _, r := range in.cells {
		if r.Arm != arm || !r.Valid() {
			continue
		}
		pc := in.cases[r.Case]
		if pc == nil || (keep != nil && !keep(pc)) {
			continue
		}
		c.add(r.Passed)
	}
	return c
}

// panel counts one case's passes and valid trials in an arm.
func (in *policyInput) panel(caseID, arm string) passCounter {
	if in.panels == nil {
		in.panels = map[[2]string]passCounter{}
		for _, r := range in.cells {
			if r.Valid() {
				c := in.panels[[2]string{r.Case, r.Arm}]
				c.add(r.Passed)
				in.panels[[2]string{r.Case, r.Arm}] = c
			}
		}
	}
	return in.panels[[2]string{caseID, arm}]
}

// share is the passCounter's pass rate; 0 without trials.
func (c passCounter) share() float64 {
	if c.n == 0 {
		return 0
	}
	return float64(c.pass) / float64(c.n)
}

// ofKinds accepts cases whose kind is listed.
func ofKinds(kinds []string) func(*plan.PlanCase) bool {
	return func(pc *plan.PlanCase) bool { return slices.Contains(kinds, pc.Kind) }
}

// EvaluatePolicy evaluates every enabled rule of the plan's policy, in the
// field order of #Policy, over one result per plan cell (a cell with no
// result counts as missing) and decides the verdict. arms are the arms'
// reports (computed when nil); pairwise are the judge's pairwise
// judgements, for efficacy and judgeAgreement.
func EvaluatePolicy(p *plan.Plan, results []grade.CellResult, arms []ArmReport, pairwise []grade.PairwiseResult) Verdict {
	return evaluatePolicy(p, results, arms, pairwise, nil)
}

// evaluatePolicy is EvaluatePolicy with the reruns of red panels.
func evaluatePolicy(p *plan.Plan, results []grade.CellResult, arms []ArmReport, pairwise []grade.PairwiseResult, rs reruns) Verdict {
	return evaluateRun(p, results, arms, pairwise, rs, false)
}

// evaluateRun is evaluatePolicy; resampled decides a resampled run of the
// noise floor's, which measures no noise floor of its own.
func evaluateRun(p *plan.Plan, results []grade.CellResult, arms []ArmReport, pairwise []grade.PairwiseResult, rs reruns, resampled bool) Verdict {
	cells := alignResults(p, results)
	in := newPolicyInput(p, cells, arms, pairwise, rs)
	in.resampled = resampled
	pol := p.Policy
	var rules []RuleOutcome
	if r := pol.Regression; r != nil && r.Enabled {
		rules = append(rules, in.regression(r))
	}
	if r := pol.Safety; r != nil && r.Enabled {
		rules = append(rules, in.safety(r))
	}
	if r := pol.Uncovered; r != nil && r.Enabled {
		rules = append(rules, in.uncovered(r))
	}
	if r := pol.Worse; r != nil && r.Enabled {
		rules = append(rules, in.worse(r))
	}
	if r := pol.OpenedSkill; r != nil && r.Enabled {
		rules = append(rules, in.openedSkill(r))
	}
	if r := pol.Uplift; r != nil && r.Enabled {
		rules = append(rules, in.uplift(r))
	}
	if r := pol.Retention; r != nil && r.Enabled {
		rules = append(rules, in.retention(r))
	}
	if r := pol.Routing; r != nil && r.Enabled {
		rules = append(rules, in.routing(r))
	}
	if r := pol.Restraint; r != nil && r.Enabled {
		rules = append(rules, in.restraint(r))
	}
	if r := pol.Forbidden; r != nil && r.Enabled {
		rules = append(rules, in.forbidden(r))
	}
	if r := pol.InvalidRun; r != nil && r.Enabled {
		rules = append(rules, in.invalidRun(r))
	}
	if r := pol.NonRegression; r != nil && r.Enabled {
		rules = append(rules, in.nonRegression(r))
	}
	if r := pol.Improvement; r != nil && r.Enabled {
		rules = append(rules, in.improvement(r))
	}
	if r := pol.RunKeys; r != nil && r.Enabled {
		rules = append(rules, in.runKeys(r))
	}
	if r := pol.SkillSize; r != nil && r.Enabled {
		rules = append(rules, in.skillSize(r))
	}
	if r := pol.Efficacy; r != nil && r.Enabled {
		rules = append(rules, in.efficacy(r))
	}
	if r := pol.PassAtK; r != nil && r.Enabled {
		rules = append(rules, in.passAtK(r))
	}
	if r := pol.JudgeAgreement; r != nil && r.Enabled {
		rules = append(rules, in.judgeAgreement(r))
	}
	in.attachInference(rules)
	if r := pol.Significance; r != nil && r.Enabled {
		rules = append(rules, significance(r, rules))
	}
	// Adequacy gates a mutate run alone: a plan of `run` has no mutants.
	var adequacy *Adequacy
	if !resampled {
		adequacy = in.adequacy()
	}
	if r := pol.Adequacy; r != nil && r.Enabled && adequacy != nil {
		rules = append(rules, adequacyRule(r, adequacy))
	}
	var noise *NoiseFloor
	if !resampled && in.hasReplicates() {
		noise = in.noiseFloor()
	}
	if r := pol.NoiseFloor; r != nil && r.Enabled && !resampled {
		rules = append(rules, noiseFloorRule(r, noise))
	}
	var missing, invalid, stuck int
	for _, r := range cells {
		switch r.Status {
		case grade.StatusMissing:
			missing++
		case grade.StatusInvalid:
			invalid++
		}
	}
	for _, r := range cells {
		if r.Status == grade.StatusInvalid && r.Error == timeoutIncomplete {
			stuck++ // a stored timeout: a rerun reuses it, so it never completes
		}
	}
	var incomplete []string
	if missing > 0 {
		incomplete = append(incomplete, fmt.Sprintf("INCOMPLETE %d cells not run", missing))
	}
	if invalid > 0 {
		incomplete = append(incomplete, fmt.Sprintf("INVALID %d cells", invalid))
	}
	v := decideVerdict(incomplete, rules)
	v.Resumable = v.Verdict == VerdictIncomplete && stuck == 0
	v.Adequacy = adequacy
	v.NoiseFloor = noise
	return v
}

// reportingRules are the rules whose reasons, at severity warn, are listed
// among the verdict's reasons (and in its NotFailing) rather than its
// warnings: gstack's policy reports an uncovered case as a reason of the
// verdict that never fails it.
var reportingRules = []string{"uncovered"}

// decideVerdict turns rule outcomes into a verdict: INCOMPLETE when incomplete
// lists reasons, else FAIL when a fail-severity rule is not met, else PASS.
func decideVerdict(incomplete []string, rules []RuleOutcome) Verdict {
	v := Verdict{Reasons: append([]string{}, incomplete...), Warnings: []string{}, Rules: rules}
	if v.Rules == nil {
		v.Rules = []RuleOutcome{}
	}
	failed := false
	var unmeasured, reported []string
	for i := range rules {
		r := &rules[i]
		for j := range r.Findings {
			if r.Findings[j].Text == "" {
				r.Findings[j].Text = r.Detail
			}
		}
		if r.NotMeasured != "" {
			if r.Severity != SeverityWarn {
				unmeasured = append(unmeasured, "NOT-MEASURED "+r.Rule)
			}
			continue
		}
		if !r.Met {
			if r.Severity == SeverityWarn && slices.Contains(reportingRules, r.Rule) {
				reported = append(reported, r.Reasons...)
			} else if r.Severity == SeverityWarn {
				v.Warnings = append(v.Warnings, r.Reasons...)
			} else {
				failed = true
				v.Reasons = append(v.Reasons, r.Reasons...)
			}
		}
		v.Warnings = append(v.Warnings, r.Warnings...)
	}
	v.Reasons = append(append(v.Reasons, unmeasured...), reported...)
	v.NotFailing = reported
	switch {
	case len(incomplete) > 0 || len(unmeasured) > 0:
		v.Verdict = VerdictIncomplete
	case failed:
		v.Verdict = VerdictFail
	default:
		v.Verdict = VerdictPass
	}
	v.ExitCode = ExitCode(v.Verdict)
	return v
}
