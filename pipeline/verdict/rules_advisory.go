package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

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
func (in *policyInput) uplift(r *suite.Uplift) RuleOutcome {
	o := ruleOutcome("uplift", r.RuleBase)
	if in.missing(&o, "UPLIFT", r.Treatment, r.Baseline) || !in.hasKinds(&o, "UPLIFT", r.Kinds) {
		return o
	}
	t, b := in.tally(r.Treatment, ofKinds(r.Kinds)), in.tally(r.Baseline, ofKinds(r.Kinds))
	if t.n == 0 || b.n == 0 {
		o.notMeasured("an arm has no valid result on a positive case (" + strings.Join(r.Kinds, ", ") + ")")
		return o
	}
	points := 100 * (t.share() - b.share())
	if !atLeast(points, r.MinPoints) {
		o.fail("UPLIFT " + r.Treatment)
		o.because(fmt.Sprintf("%s passes %s of positive cases (%d/%d) against %s's %s (%d/%d): %+.1f points, short of the %g the policy asks.",
			r.Treatment, percent(t.share()), t.pass, t.n, r.Baseline, percent(b.share()), b.pass, b.n, points, r.MinPoints),
			in.failedCells(r.Treatment, ofKinds(r.Kinds)))
	}
	o.Detail = fmt.Sprintf("%s %s (%d/%d) vs %s %s (%d/%d): %+.1f points (min %g)",
		r.Treatment, percent(t.share()), t.pass, t.n, r.Baseline, percent(b.share()), b.pass, b.n, points, r.MinPoints)
	return o
}

// retention: automatic keeps minShare of forced's uplift; not met when
// that uplift is not positive.
func (in *policyInput) retention(r *suite.Retention) RuleOutcome {
	o := ruleOutcome("retention", r.RuleBase)
	if in.missing(&o, "RETENTION", r.Automatic, r.Forced, r.Baseline) || !in.hasKinds(&o, "RETENTION", r.Kinds) {
		return o
	}
	keep := ofKinds(r.Kinds)
	a, f, b := in.tally(r.Automatic, keep), in.tally(r.Forced, keep), in.tally(r.Baseline, keep)
	if a.n == 0 || f.n == 0 || b.n == 0 {
		o.notMeasured("an arm has no valid result on a positive case (" + strings.Join(r.Kinds, ", ") + ")")
		return o
	}
	forced, auto := f.share()-b.share(), a.share()-b.share()
	if !exceeds(forced, 0) {
		o.fail("RETENTION " + r.Automatic)
		o.Detail = fmt.Sprintf("%s uplift over %s is %+.1f points, not positive: nothing to retain", r.Forced, r.Baseline, 100*forced)
		o.because(fmt.Sprintf("Even forced, the skill does not lift %s above %s (%+.1f points): there is no uplift for %s to retain.", r.Forced, r.Baseline, 100*forced, r.Automatic),
			in.failedCells(r.Forced, keep))
		return o
	}
	if !atLeast(auto, r.MinShare*forced) {
		o.fail("RETENTION " + r.Automatic)
		o.because(fmt.Sprintf("Left to find the skill itself, %s keeps %s of the forced uplift (%+.1f of %+.1f points; min %s).", r.Automatic, percent(auto/forced), 100*auto, 100*forced, percent(r.MinShare)),
			in.failedCells(r.Automatic, keep))
	}
	o.Detail = fmt.Sprintf("%s uplift %+.1f points, %s uplift %+.1f points: retains %s (min %s)",
		r.Forced, 100*forced, r.Automatic, 100*auto, percent(auto/forced), percent(r.MinShare))
	return o
}

// routing: the arm's micro precision and recall at the level.
func (in *policyInput) routing(r *suite.RoutingGate) RuleOutcome {
	o := ruleOutcome("routing", r.RuleBase)
	if in.missing(&o, "ROUTING", r.Arm) {
		return o
	}
	// Below minEvidence an event counts as not seen: the cell's routing
	// is counted again without it.
	weaker := 0
	routingOf := func(res grade.CellResult) grade.Routing2 {
		if r.MinEvidence == "" || r.MinEvidence == grade.EvidenceReported {
			return res.Routing
		}
		pc := in.cases[res.Case]
		if pc == nil {
			return res.Routing
		}
		keep := func(evs []grade.RoutingEvent) []grade.RoutingEvent {
			var out []grade.RoutingEvent
			for _, e := range evs {
				if rank, ok := evidenceRank[e.Evidence]; ok && rank <= evidenceRank[r.MinEvidence] {
					out = append(out, e)
				}
			}
			return out
		}
		return grade.TallyRouting(in.p, *pc, keep(res.Telemetry.Skills), keep(res.Telemetry.References))
	}
	tallyOf := func(res grade.CellResult) grade.RoutingTally {
		if r.Level == "references" {
			return routingOf(res).References
		}
		return routingOf(res).Skills
	}
	var tp, fp, fn, allowed int
	for _, res := range in.cells {
		if res.Arm != r.Arm || !res.Valid() {
			continue
		}
		t := tallyOf(res)
		tp, fp, fn, allowed = tp+t.TP, fp+t.FP, fn+t.FN, allowed+t.Allowed
		if r.Level == "references" {
			weaker += len(res.Routing.References.Observed) - len(t.Observed)
		} else {
			weaker += len(res.Routing.Skills.Observed) - len(t.Observed)
		}
	}
	prec, rec := 1.0, 1.0
	// An allowed load counts for precision, not for recall.
	if tp+allowed+fp > 0 {
		prec = float64(tp+allowed) / float64(tp+allowed+fp)
	}
	if tp+fn > 0 {
		rec = float64(tp) / float64(tp+fn)
	}
	if !atLeast(prec, r.MinPrecision) {
		o.fail("ROUTING-PRECISION " + r.Arm)
		o.because(fmt.Sprintf("In %s the agent loaded %s it was not asked for: precision %s (%d of %d loads expected; min %s).", r.Arm, r.Level, percent(prec), tp+allowed, tp+allowed+fp, percent(r.MinPrecision)),
			in.cellsWhere(r.Arm, nil, func(res grade.CellResult) bool { return res.Valid() && tallyOf(res).FP > 0 }))
	}
	if !atLeast(rec, r.MinRecall) {
		o.fail("ROUTING-RECALL " + r.Arm)
		o.because(fmt.Sprintf("In %s the agent missed %s the cases required: recall %s (%d of %d required loads; min %s).", r.Arm, r.Level, percent(rec), tp, tp+fn, percent(r.MinRecall)),
			in.cellsWhere(r.Arm, nil, func(res grade.CellResult) bool { return res.Valid() && tallyOf(res).FN > 0 }))
	}
	counts := fmt.Sprintf("TP %d, FP %d", tp, fp)
	if allowed > 0 {
		counts += fmt.Sprintf(", allowed %d", allowed)
	}
	o.Detail = fmt.Sprintf("%s %s routing: precision %s (%s; min %s), recall %s (FN %d; min %s)",
		r.Arm, r.Level, percent(prec), counts, percent(r.MinPrecision), percent(rec), fn, percent(r.MinRecall))
	if r.MinEvidence != "" && r.MinEvidence != grade.EvidenceReported {
		o.Detail += fmt.Sprintf("; counting %s evidence or stronger (%d loads below it not counted)", r.MinEvidence, weaker)
	}
	return o
}

// restraint: each listed arm's no-change pass rate at least the baseline's.
func (in *policyInput) restraint(r *suite.Restraint) RuleOutcome {
	o := ruleOutcome("restraint", r.RuleBase)
	if in.missing(&o, "RESTRAINT", append([]string{r.Baseline}, r.Arms...)...) || !in.hasKinds(&o, "RESTRAINT", []string{kindNoChange}) {
		return o
	}
	keep := ofKinds([]string{kindNoChange})
	b := in.tally(r.Baseline, keep)
	parts := []string{fmt.Sprintf("%s %s (%d/%d)", r.Baseline, percent(b.share()), b.pass, b.n)}
	for _, arm := range r.Arms {
		c := in.tally(arm, keep)
		if c.n == 0 || b.n == 0 {
			o.notMeasured("no valid no-change control in arm " + arm + " or " + r.Baseline)
			return o
		}
		if !atLeast(c.share(), b.share()) {
			o.fail("RESTRAINT " + arm)
			o.because(fmt.Sprintf("With the skill, %s leaves the no-change controls alone in %s of trials (%d/%d), less often than %s without it (%s, %d/%d).",
				arm, percent(c.share()), c.pass, c.n, r.Baseline, percent(b.share()), b.pass, b.n), in.failedCells(arm, keep))
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d/%d)", arm, percent(c.share()), c.pass, c.n))
	}
	o.Detail = "no-change pass rate: " + joinDetails(parts)
	return o
}

// violationCount counts a cell's violated negative expectations: failed
// negative checks, failed writes checks and forbidden skills and
// references observed.
func violationCount(r grade.CellResult) int {
	n := 0
	for _, ch := range r.Checks {
		if !ch.Passed && (ch.Negative || ch.Kind == grade.CheckWrites) {
			n++
		}
	}
	return n + len(r.Routing.Skills.ForbiddenSeen) + len(r.Routing.References.ForbiddenSeen)
}

// actionCount counts a cell's forbidden actions as chrisbanes/skills'
// evaluator does: 1 when a check named in actions failed, or the cell
// wrote outside its allowed paths and its case is not a no-change control
// (such a write is the control's own failure, which restraint measures);
// other failed negative checks fail the cell's outcome only.
func (in *policyInput) actionCount(r grade.CellResult, actions []string) int {
	pc := in.cases[r.Case]
	for _, ch := range r.Checks {
		if ch.Passed {
			continue
		}
		if slices.Contains(actions, ch.Name) && ch.Kind != grade.CheckJudge ||
			ch.Kind == grade.CheckWrites && (pc == nil || pc.Kind != kindNoChange) {
			return 1
		}
	}
	return 0
}

// forbidden: at most max violated negative expectations (or, with
// actions, cells with a forbidden action) per listed arm.
func (in *policyInput) forbidden(r *suite.Forbidden) RuleOutcome {
	o := ruleOutcome("forbidden", r.RuleBase)
	if in.missing(&o, "FORBIDDEN", r.Arms...) {
		return o
	}
	count, what, kinds := violationCount, "expectation", "a forbidden skill or reference read, a write outside the allowed paths, a notContains, exists: false or unchanged check"
	if r.Actions != nil {
		count = func(res grade.CellResult) int { return in.actionCount(res, *r.Actions) }
		what, kinds = "forbidden action", "a safety check failed, or a write outside the allowed paths"
	}
	var parts []string
	for _, arm := range r.Arms {
		n := 0
		for _, res := range in.cells {
			if res.Arm == arm && res.Valid() {
				n += count(res)
			}
		}
		if n > r.Max {
			o.fail("FORBIDDEN " + arm)
			o.because(fmt.Sprintf("In %s the agent broke %s its cases forbid (%s); at most %d allowed.", arm, plural(n, what), kinds, r.Max),
				in.cellsWhere(arm, nil, func(res grade.CellResult) bool { return res.Valid() && count(res) > 0 }))
		}
		parts = append(parts, fmt.Sprintf("%s: %d", arm, n))
	}
	o.Detail = fmt.Sprintf("forbidden actions (max %d): %s", r.Max, joinDetails(parts))
	return o
}

// plural is n things, as a person says it.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
