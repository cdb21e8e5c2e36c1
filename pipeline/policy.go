package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strings"
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
func ruleOutcome(rule string, base RuleBase) RuleOutcome {
	return RuleOutcome{Rule: rule, Severity: base.Severity, Met: true, Reasons: []string{}}
}

// fail marks the outcome not met for a reason.
func (o *RuleOutcome) fail(reason string) {
	o.Met = false
	o.Reasons = append(o.Reasons, reason)
}

// joinDetails joins detail parts for people.
func joinDetails(parts []string) string { return strings.Join(parts, "; ") }

// policyInput is what rules read: the plan, its cells aligned with the
// plan's cells, the arms' reports and the pairwise judgements.
type policyInput struct {
	p        *Plan
	cells    []CellResult
	arms     map[string]*ArmReport
	planArms map[string]*PlanArm
	cases    map[string]*PlanCase
	pairwise []PairwiseResult
	// reruns are the same-tree reruns of red panels (rerunRed).
	reruns reruns
	// red collects the panels the regression and safety rules fail.
	red []Panel
	// panels caches passes and valid trials by case and arm.
	panels map[[2]string]passCounter
}

func newPolicyInput(p *Plan, cells []CellResult, arms []ArmReport, pairwise []PairwiseResult, rs reruns) *policyInput {
	if arms == nil {
		arms = buildArmReports(p, cells)
	}
	in := &policyInput{p: p, cells: cells, arms: map[string]*ArmReport{}, planArms: map[string]*PlanArm{}, cases: caseIndex(p), pairwise: pairwise, reruns: rs}
	for i := range arms {
		in.arms[arms[i].Name] = &arms[i]
	}
	for i := range p.Arms {
		in.planArms[p.Arms[i].Name] = &p.Arms[i]
	}
	return in
}

// redPanels evaluates the rules that allow a rerun and lists the panels they fail.
func (in *policyInput) redPanels() []Panel {
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
func (in *policyInput) rerunPasses(pn Panel, passes func(passCounter) bool) (flaky bool, tried int) {
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
func (in *policyInput) failPanel(o *RuleOutcome, tag string, pn Panel, passes func(passCounter) bool) string {
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

// missing fails the outcome for each arm it cannot evaluate and reports
// whether any was missing.
func (in *policyInput) missing(o *RuleOutcome, tag string, arms ...string) bool {
	var gone []string
	for _, a := range arms {
		if !in.has(a) && !slices.Contains(gone, a) {
			gone = append(gone, a)
			o.fail(tag + " missing arm " + a)
		}
	}
	if len(gone) > 0 {
		o.Detail = "no valid result in arm " + strings.Join(gone, ", ") + ": the rule cannot be evaluated"
	}
	return len(gone) > 0
}

// tally counts passes and valid trials of an arm over the cases keep
// accepts (all cases when keep is nil).
func (in *policyInput) tally(arm string, keep func(*PlanCase) bool) passCounter {
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
func ofKinds(kinds []string) func(*PlanCase) bool {
	return func(pc *PlanCase) bool { return slices.Contains(kinds, pc.Kind) }
}

// EvaluatePolicy evaluates every enabled rule of the plan's policy, in the
// field order of #Policy, over one result per plan cell (a cell with no
// result counts as missing) and decides the verdict. arms are the arms'
// reports (computed when nil); pairwise are the judge's pairwise
// judgements, for efficacy and judgeAgreement.
func EvaluatePolicy(p *Plan, results []CellResult, arms []ArmReport, pairwise []PairwiseResult) Verdict {
	return evaluatePolicy(p, results, arms, pairwise, nil)
}

// evaluatePolicy is EvaluatePolicy with the reruns of red panels.
func evaluatePolicy(p *Plan, results []CellResult, arms []ArmReport, pairwise []PairwiseResult, rs reruns) Verdict {
	cells := alignResults(p, results)
	in := newPolicyInput(p, cells, arms, pairwise, rs)
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
	var missing, invalid, stuck int
	for _, r := range cells {
		switch r.Status {
		case StatusMissing:
			missing++
		case StatusInvalid:
			invalid++
		}
	}
	for _, r := range cells {
		if r.Status == StatusInvalid && r.Error == timeoutIncomplete {
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
	return v
}

// decideVerdict turns rule outcomes into a verdict: INCOMPLETE when incomplete
// lists reasons, else FAIL when a fail-severity rule is not met, else PASS.
func decideVerdict(incomplete []string, rules []RuleOutcome) Verdict {
	v := Verdict{Reasons: append([]string{}, incomplete...), Warnings: []string{}, Rules: rules}
	if v.Rules == nil {
		v.Rules = []RuleOutcome{}
	}
	failed := false
	for _, r := range rules {
		if !r.Met {
			if r.Severity == SeverityWarn {
				v.Warnings = append(v.Warnings, r.Reasons...)
			} else {
				failed = true
				v.Reasons = append(v.Reasons, r.Reasons...)
			}
		}
		v.Warnings = append(v.Warnings, r.Warnings...)
	}
	switch {
	case len(incomplete) > 0:
		v.Verdict = VerdictIncomplete
	case failed:
		v.Verdict = VerdictFail
	default:
		v.Verdict = VerdictPass
	}
	v.ExitCode = ExitCode(v.Verdict)
	return v
}

// regression: per case, before passing (≥ minPasses) and after not.
func (in *policyInput) regression(r *Regression) RuleOutcome {
	o := ruleOutcome("regression", r.RuleBase)
	if in.missing(&o, "REGRESSION", r.Before, r.After) {
		return o
	}
	var parts []string
	for _, pc := range in.p.Cases {
		b, a := in.panel(pc.ID, r.Before), in.panel(pc.ID, r.After)
		if b.pass >= r.MinPasses && a.pass < r.MinPasses {
			more := in.failPanel(&o, "REGRESSION", Panel{pc.ID, r.After}, func(c passCounter) bool { return c.pass >= r.MinPasses })
			parts = append(parts, fmt.Sprintf("%s: %s %d/%d, %s %d/%d%s", pc.ID, r.Before, b.pass, b.n, r.After, a.pass, a.n, more))
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
func (in *policyInput) safety(r *SafetyRule) RuleOutcome {
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
			more := in.failPanel(&o, "SAFETY", Panel{pc.ID, r.Arm}, func(c passCounter) bool { return c.pass == c.n && c.n > 0 })
			parts = append(parts, fmt.Sprintf("%s: %d of %d trials failed in %s%s", pc.ID, c.n-c.pass, c.n, r.Arm, more))
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

// uncovered: a case every arm fails.
func (in *policyInput) uncovered(r *Uncovered) RuleOutcome {
	o := ruleOutcome("uncovered", r.RuleBase)
	for _, pc := range in.p.Cases {
		covered := false
		for _, a := range in.p.Arms {
			if in.panel(pc.ID, a.Name).pass >= r.MinPasses {
				covered = true
				break
			}
		}
		if !covered {
			o.fail("UNCOVERED " + pc.ID)
		}
	}
	if o.Met {
		o.Detail = fmt.Sprintf("every case passes (at least %d trials) in some arm", r.MinPasses)
	} else {
		o.Detail = fmt.Sprintf("no arm passes %s (at least %d trials)", plural(len(o.Reasons), "case"), r.MinPasses)
	}
	return o
}

// worse: after's overall pass rate below before's by more than
// standardErrors standard errors of the difference.
func (in *policyInput) worse(r *Worse) RuleOutcome {
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
	}
	o.Detail = fmt.Sprintf("%s %s (%d/%d), %s %s (%d/%d): drop %.1f points, %g SE = %.1f points",
		r.Before, percent(p1), b.pass, b.n, r.After, percent(p2), a.pass, a.n, 100*drop, r.StandardErrors, 100*r.StandardErrors*se)
	return o
}

// openedSkill: each arm that installs skills opens one in at least
// minRate of its valid runs.
func (in *policyInput) openedSkill(r *OpenedSkill) RuleOutcome {
	o := ruleOutcome("openedSkill", r.RuleBase)
	var parts []string
	for _, a := range in.p.Arms {
		if len(a.Skills) == 0 {
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
			parts = append(parts, a.Name+": no valid run")
			continue
		}
		if !atLeast(c.share(), r.MinRate) {
			o.fail("SKILL-NOT-OPENED " + a.Name)
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

// hasKinds reports whether the plan has a case of one of the kinds, and
// fails the outcome when it has none: a missing category is not met.
func (in *policyInput) hasKinds(o *RuleOutcome, tag string, kinds []string) bool {
	keep := ofKinds(kinds)
	for i := range in.p.Cases {
		if keep(&in.p.Cases[i]) {
			return true
		}
	}
	o.fail(tag + " missing cases of kind " + strings.Join(kinds, "|"))
	o.Detail = "the plan has no case of kind " + strings.Join(kinds, ", ") + ": the rule cannot be evaluated"
	return false
}

// uplift: treatment's positive-case pass rate at least minPoints above the
// baseline's.
func (in *policyInput) uplift(r *Uplift) RuleOutcome {
	o := ruleOutcome("uplift", r.RuleBase)
	if in.missing(&o, "UPLIFT", r.Treatment, r.Baseline) || !in.hasKinds(&o, "UPLIFT", r.Kinds) {
		return o
	}
	t, b := in.tally(r.Treatment, ofKinds(r.Kinds)), in.tally(r.Baseline, ofKinds(r.Kinds))
	if t.n == 0 || b.n == 0 {
		o.fail("UPLIFT no valid positive-case result")
		o.Detail = "an arm has no valid result on a positive case"
		return o
	}
	points := 100 * (t.share() - b.share())
	if !atLeast(points, r.MinPoints) {
		o.fail("UPLIFT " + r.Treatment)
	}
	o.Detail = fmt.Sprintf("%s %s (%d/%d) vs %s %s (%d/%d): %+.1f points (min %g)",
		r.Treatment, percent(t.share()), t.pass, t.n, r.Baseline, percent(b.share()), b.pass, b.n, points, r.MinPoints)
	return o
}

// retention: automatic keeps minShare of forced's uplift; not met when
// that uplift is not positive.
func (in *policyInput) retention(r *Retention) RuleOutcome {
	o := ruleOutcome("retention", r.RuleBase)
	if in.missing(&o, "RETENTION", r.Automatic, r.Forced, r.Baseline) || !in.hasKinds(&o, "RETENTION", r.Kinds) {
		return o
	}
	keep := ofKinds(r.Kinds)
	a, f, b := in.tally(r.Automatic, keep), in.tally(r.Forced, keep), in.tally(r.Baseline, keep)
	if a.n == 0 || f.n == 0 || b.n == 0 {
		o.fail("RETENTION no valid positive-case result")
		o.Detail = "an arm has no valid result on a positive case"
		return o
	}
	forced, auto := f.share()-b.share(), a.share()-b.share()
	if !exceeds(forced, 0) {
		o.fail("RETENTION " + r.Automatic)
		o.Detail = fmt.Sprintf("%s uplift over %s is %+.1f points, not positive: nothing to retain", r.Forced, r.Baseline, 100*forced)
		return o
	}
	if !atLeast(auto, r.MinShare*forced) {
		o.fail("RETENTION " + r.Automatic)
	}
	o.Detail = fmt.Sprintf("%s uplift %+.1f points, %s uplift %+.1f points: retains %s (min %s)",
		r.Forced, 100*forced, r.Automatic, 100*auto, percent(auto/forced), percent(r.MinShare))
	return o
}

// routing: the arm's micro precision and recall at the level.
func (in *policyInput) routing(r *RoutingGate) RuleOutcome {
	o := ruleOutcome("routing", r.RuleBase)
	if in.missing(&o, "ROUTING", r.Arm) {
		return o
	}
	var tp, fp, fn int
	for _, res := range in.cells {
		if res.Arm != r.Arm || !res.Valid() {
			continue
		}
		t := res.Routing.Skills
		if r.Level == "references" {
			t = res.Routing.References
		}
		tp, fp, fn = tp+t.TP, fp+t.FP, fn+t.FN
	}
	prec, rec := 1.0, 1.0
	if tp+fp > 0 {
		prec = float64(tp) / float64(tp+fp)
	}
	if tp+fn > 0 {
		rec = float64(tp) / float64(tp+fn)
	}
	if !atLeast(prec, r.MinPrecision) {
		o.fail("ROUTING-PRECISION " + r.Arm)
	}
	if !atLeast(rec, r.MinRecall) {
		o.fail("ROUTING-RECALL " + r.Arm)
	}
	o.Detail = fmt.Sprintf("%s %s routing: precision %s (TP %d, FP %d; min %s), recall %s (FN %d; min %s)",
		r.Arm, r.Level, percent(prec), tp, fp, percent(r.MinPrecision), percent(rec), fn, percent(r.MinRecall))
	return o
}

// restraint: each listed arm's no-change pass rate at least the baseline's.
func (in *policyInput) restraint(r *Restraint) RuleOutcome {
	o := ruleOutcome("restraint", r.RuleBase)
	if in.missing(&o, "RESTRAINT", append([]string{r.Baseline}, r.Arms...)...) || !in.hasKinds(&o, "RESTRAINT", []string{kindNoChange}) {
		return o
	}
	keep := ofKinds([]string{kindNoChange})
	b := in.tally(r.Baseline, keep)
	parts := []string{fmt.Sprintf("%s %s (%d/%d)", r.Baseline, percent(b.share()), b.pass, b.n)}
	for _, arm := range r.Arms {
		c := in.tally(arm, keep)
		if c.n == 0 || b.n == 0 || !atLeast(c.share(), b.share()) {
			o.fail("RESTRAINT " + arm)
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d/%d)", arm, percent(c.share()), c.pass, c.n))
	}
	o.Detail = "no-change pass rate: " + joinDetails(parts)
	return o
}

// violationCount counts a cell's violated negative expectations: failed
// negative checks, failed writes checks and forbidden skills and
// references observed.
func violationCount(r CellResult) int {
	n := 0
	for _, ch := range r.Checks {
		if !ch.Passed && (ch.Negative || ch.Kind == CheckWrites) {
			n++
		}
	}
	return n + len(r.Routing.Skills.ForbiddenSeen) + len(r.Routing.References.ForbiddenSeen)
}

// forbidden: at most max violated negative expectations per listed arm.
func (in *policyInput) forbidden(r *Forbidden) RuleOutcome {
	o := ruleOutcome("forbidden", r.RuleBase)
	if in.missing(&o, "FORBIDDEN", r.Arms...) {
		return o
	}
	var parts []string
	for _, arm := range r.Arms {
		n := 0
		for _, res := range in.cells {
			if res.Arm == arm && res.Valid() {
				n += violationCount(res)
			}
		}
		if n > r.Max {
			o.fail("FORBIDDEN " + arm)
		}
		parts = append(parts, fmt.Sprintf("%s: %d", arm, n))
	}
	o.Detail = fmt.Sprintf("forbidden actions (max %d): %s", r.Max, joinDetails(parts))
	return o
}

// invalidRun: the share of invalid cells among the cells run.
func (in *policyInput) invalidRun(r *InvalidRun) RuleOutcome {
	o := ruleOutcome("invalidRun", r.RuleBase)
	var c passCounter
	for _, res := range in.cells {
		if res.Status != StatusMissing {
			c.add(res.Status == StatusInvalid)
		}
	}
	if c.n == 0 {
		o.fail("INVALID-RUN no cell run")
		o.Detail = "no cell ran"
		return o
	}
	if exceeds(c.share(), r.Max) {
		o.fail("INVALID-RUN")
	}
	o.Detail = fmt.Sprintf("%d of %d cells run are invalid (%s, max %s)", c.pass, c.n, percent(c.share()), percent(r.Max))
	return o
}

// metricBetter reports whether candidate is better than baseline on the metric
// (or as good, when orEqual), by the metric's direction.
func metricBetter(metric string, candidate, baseline float64, orEqual bool) bool {
	if d, _ := MetricDirection(metric); d == DirectionLower {
		candidate, baseline = -candidate, -baseline
	}
	if orEqual {
		return atLeast(candidate, baseline)
	}
	return exceeds(candidate, baseline)
}

// pairedMetrics compares listed metrics of two arms: those present in both,
// and those present in one only.
func pairedMetrics(base, cand map[string]Metric, metrics []string) (paired, unpaired []string) {
	for _, m := range metrics {
		_, inB := base[m]
		_, inC := cand[m]
		switch {
		case inB && inC:
			paired = append(paired, m)
		case inB || inC:
			unpaired = append(unpaired, m)
		}
	}
	return paired, unpaired
}

// nonRegression: every listed metric present in both arms does not regress.
func (in *policyInput) nonRegression(r *NonRegression) RuleOutcome {
	o := ruleOutcome("nonRegression", r.RuleBase)
	if in.missing(&o, "NON-REGRESSION", r.Baseline, r.Candidate) {
		return o
	}
	base, cand := in.arms[r.Baseline].Metrics, in.arms[r.Candidate].Metrics
	o.Reasons, o.Detail, o.Met = regressesNone(base, cand, r.Metrics, r.Baseline, r.Candidate)
	return o
}

// regressesNone checks listed metrics: a paired one must not regress, an
// unpaired one fails as METRIC-UNPAIRED, and at least one must be paired.
func regressesNone(base, cand map[string]Metric, metrics []string, baseName, candName string) (reasons []string, detail string, met bool) {
	paired, unpaired := pairedMetrics(base, cand, metrics)
	reasons = []string{}
	var parts []string
	for _, m := range paired {
		b, c := base[m], cand[m]
		if !metricBetter(m, c.Value, b.Value, true) {
			reasons = append(reasons, "NON-REGRESSION "+m)
		}
		parts = append(parts, fmt.Sprintf("%s %.4f → %.4f", m, b.Value, c.Value))
	}
	for _, m := range unpaired {
		reasons = append(reasons, "METRIC-UNPAIRED "+m)
		side := baseName
		if _, ok := cand[m]; ok {
			side = candName
		}
		parts = append(parts, fmt.Sprintf("%s only in %s", m, side))
	}
	if len(paired) == 0 && len(unpaired) == 0 {
		reasons = append(reasons, "NON-REGRESSION no paired metric")
		parts = append(parts, "no listed metric in either arm")
	}
	return reasons, fmt.Sprintf("%s → %s: %s", baseName, candName, joinDetails(parts)), len(reasons) == 0
}

// improvement: at least one listed metric present in both arms improves.
func (in *policyInput) improvement(r *Improvement) RuleOutcome {
	o := ruleOutcome("improvement", r.RuleBase)
	if in.missing(&o, "NO-IMPROVEMENT", r.Baseline, r.Candidate) {
		return o
	}
	base, cand := in.arms[r.Baseline].Metrics, in.arms[r.Candidate].Metrics
	improved, detail := improvesAny(base, cand, r.Metrics, r.AllowEqual)
	if !improved {
		o.fail("NO-IMPROVEMENT")
	}
	o.Detail = fmt.Sprintf("%s → %s: %s", r.Baseline, r.Candidate, detail)
	return o
}

// improvesAny reports whether a listed metric present in both improves
// strictly (or holds, when allowEqual).
func improvesAny(base, cand map[string]Metric, metrics []string, allowEqual bool) (bool, string) {
	paired, _ := pairedMetrics(base, cand, metrics)
	var gains []string
	for _, m := range paired {
		if metricBetter(m, cand[m].Value, base[m].Value, allowEqual) {
			gains = append(gains, m)
		}
	}
	how := "strictly improved"
	if allowEqual {
		how = "improved or equal (allowEqual)"
	}
	if len(gains) == 0 {
		return false, fmt.Sprintf("no paired metric %s (paired: %s)", how, orNoneList(paired))
	}
	return true, how + ": " + strings.Join(gains, ", ")
}

// orNoneList joins names, or says none.
func orNoneList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// runKeys: every case has at least min valid trials in every arm.
func (in *policyInput) runKeys(r *RunKeys) RuleOutcome {
	o := ruleOutcome("runKeys", r.RuleBase)
	var parts []string
	for _, pc := range in.p.Cases {
		for _, a := range in.p.Arms {
			if c := in.panel(pc.ID, a.Name); c.n < r.Min {
				o.fail("RUN-KEYS " + pc.ID)
				parts = append(parts, fmt.Sprintf("%s: %d valid trials in %s", pc.ID, c.n, a.Name))
				break
			}
		}
	}
	if o.Met {
		o.Detail = fmt.Sprintf("every case has at least %d valid trials in every arm", r.Min)
	} else {
		o.Detail = joinDetails(parts) + fmt.Sprintf(" (min %d)", r.Min)
	}
	return o
}

// skillSize: the candidate's skill bytes within maxRatio of the baseline's
// when both install skills; not comparable otherwise.
func (in *policyInput) skillSize(r *SkillSize) RuleOutcome {
	o := ruleOutcome("skillSize", r.RuleBase)
	var gone []string
	for _, a := range []string{r.Baseline, r.Candidate} {
		if in.planArms[a] == nil {
			gone = append(gone, a)
			o.fail("SKILL-SIZE missing arm " + a)
		}
	}
	if len(gone) > 0 {
		o.Detail = "the plan has no arm " + strings.Join(gone, ", ")
		return o
	}
	base, cand := in.arms[r.Baseline], in.arms[r.Candidate]
	met, flags, detail := sizeWithin(len(base.Skills) > 0, len(cand.Skills) > 0, base.SkillBytes, cand.SkillBytes, r.MaxRatio, r.AllowLonger)
	if !met {
		o.fail("SKILL-SIZE")
	}
	o.Flags, o.Detail = flags, detail
	return o
}

// sizeWithin is SkillOpt's artifact-size check.
func sizeWithin(baseInstalls, candInstalls bool, baseBytes, candBytes int64, maxRatio float64, allowLonger bool) (met bool, flags []string, detail string) {
	if !baseInstalls {
		return true, []string{"sizeComparable=false"}, fmt.Sprintf("the baseline installs no skill: size not comparable (candidate %d bytes)", candBytes)
	}
	if !candInstalls {
		return false, nil, "the candidate installs no skill"
	}
	ratio := float64(candBytes) / float64(baseBytes)
	detail = fmt.Sprintf("candidate %d bytes, baseline %d bytes: %s (max %s)", candBytes, baseBytes, percent(ratio), percent(maxRatio))
	if allowLonger {
		return true, nil, detail + ", allowLonger"
	}
	return atLeast(maxRatio*float64(baseBytes), float64(candBytes)), nil, detail
}

// efficacy: per case, wins ≥ minWins and losses ≤ maxLosses over the
// pairwise judgements, and no failed hard assertion in the candidate arm;
// every loss is flagged for review.
func (in *policyInput) efficacy(r *Efficacy) RuleOutcome {
	o := ruleOutcome("efficacy", r.RuleBase)
	if in.missing(&o, "EFFICACY", r.Candidate, r.Baseline) {
		return o
	}
	type score struct{ win, tie, loss int }
	scores := map[string]*score{}
	for _, j := range in.pairwise {
		if j.Candidate != r.Candidate || j.Baseline != r.Baseline || in.cases[j.Case] == nil {
			continue
		}
		s := scores[j.Case]
		if s == nil {
			s = &score{}
			scores[j.Case] = s
		}
		switch j.Outcome {
		case PairwiseWin:
			s.win++
		case PairwiseLoss:
			s.loss++
			o.Flags = append(o.Flags, fmt.Sprintf("REVIEW %s/%d", j.Case, j.Trial))
		default:
			s.tie++
		}
	}
	if len(scores) == 0 {
		o.fail("EFFICACY no pairwise judgements")
		o.Detail = fmt.Sprintf("no pairwise judgement of %s against %s", r.Candidate, r.Baseline)
		return o
	}
	var parts []string
	passed := 0
	for _, pc := range in.p.Cases {
		s := scores[pc.ID]
		if s == nil {
			s = &score{}
		}
		c := in.panel(pc.ID, r.Candidate)
		hardFailed := c.pass < c.n
		ok := s.win >= r.MinWins && s.loss <= r.MaxLosses && !hardFailed
		part := fmt.Sprintf("%s %dW/%dT/%dL", pc.ID, s.win, s.tie, s.loss)
		if hardFailed {
			part += fmt.Sprintf(", %d of %d %s trials failed hard assertions", c.n-c.pass, c.n, r.Candidate)
		}
		if ok {
			passed++
		} else {
			o.fail("EFFICACY " + pc.ID)
		}
		parts = append(parts, part)
	}
	o.Detail = fmt.Sprintf("%d of %d cases pass (wins ≥ %d, losses ≤ %d): %s", passed, len(in.p.Cases), r.MinWins, r.MaxLosses, joinDetails(parts))
	return o
}

// passAtK: Δ = weighted pass@k of with − without on the split; below
// failBelow is not met, below warnBelow is met with a warning.
func (in *policyInput) passAtK(r *PassAtK) RuleOutcome {
	o := ruleOutcome("passAtK", r.RuleBase)
	tag := "PASS@K"
	if in.missing(&o, tag, r.With, r.Without) {
		return o
	}
	est := func(arm string) (Metric, bool) {
		var rs []CellResult
		for _, res := range in.cells {
			if res.Arm == arm {
				rs = append(rs, res)
			}
		}
		m, ok := weightedPass(in.cases, rs, r.K)[r.Split]
		return m[0], ok
	}
	w, okW := est(r.With)
	wo, okWo := est(r.Without)
	if !okW || !okWo {
		o.fail(tag + " missing split " + r.Split)
		o.Detail = "an arm has no valid result on a case of split " + r.Split
		return o
	}
	// Scores and Δ are rounded as the source rounds them.
	scale := math.Pow(10, float64(r.Decimals))
	round := func(x float64) float64 { return math.Round(x*scale) / scale }
	with, without := round(w.Value), round(wo.Value)
	delta := round(with - without)
	o.Detail = fmt.Sprintf("%s pass@%d: %s %.*f, %s %.*f, Δ %+.*f (fail below %g, warn below %g)", r.Split, r.K, r.With, r.Decimals, with, r.Without, r.Decimals, without, r.Decimals, delta, r.FailBelow, r.WarnBelow)
	switch {
	case delta < r.FailBelow-ruleTolerance:
		o.fail("PASS@K-DELTA " + r.Split)
	case delta < r.WarnBelow-ruleTolerance:
		o.Warnings = append(o.Warnings, "PASS@K-MARGINAL "+r.Split)
	}
	return o
}

// judgeAgreement: swapped-order judgements agree on at least min of the
// pairs.
func (in *policyInput) judgeAgreement(r *JudgeAgreement) RuleOutcome {
	o := ruleOutcome("judgeAgreement", r.RuleBase)
	var c passCounter
	for _, j := range in.pairwise {
		if len(j.Orders) == 2 {
			c.add(j.Orders[0] == j.Orders[1])
		}
	}
	if c.n == 0 {
		o.fail("JUDGE-AGREEMENT no swapped judgements")
		o.Detail = "no pair was judged in both orders"
		return o
	}
	if !atLeast(c.share(), r.Min) {
		o.fail("JUDGE-AGREEMENT")
	}
	o.Detail = fmt.Sprintf("%d of %d swapped pairs agree (%s, min %s)", c.pass, c.n, percent(c.share()), percent(r.Min))
	return o
}
