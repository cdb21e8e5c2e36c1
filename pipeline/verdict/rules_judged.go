package verdict

import (
	"fmt"
	"math"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// efficacy: per case, wins ≥ minWins and losses ≤ maxLosses over the
// pairwise judgements, and no failed hard assertion in the candidate arm;
// every loss is flagged for review.
func (in *policyInput) efficacy(r *suite.Efficacy) RuleOutcome {
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
		case grade.PairwiseWin:
			s.win++
		case grade.PairwiseLoss:
			s.loss++
			o.Flags = append(o.Flags, fmt.Sprintf("REVIEW %s/%d", j.Case, j.Trial))
		default:
			s.tie++
		}
	}
	if len(scores) == 0 {
		if in.p.Judge != nil && in.p.Judge.Mode == "pairwise" {
			o.notMeasured(fmt.Sprintf("no pairwise judgement of %s against %s yet", r.Candidate, r.Baseline))
			return o
		}
		o.fail("EFFICACY no pairwise judgements")
		o.Detail = fmt.Sprintf("no pairwise judgement of %s against %s", r.Candidate, r.Baseline)
		o.because(fmt.Sprintf("The efficacy rule reads pairwise judgements of %s against %s, and the suite's judge makes none.", r.Candidate, r.Baseline), nil)
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
			why := fmt.Sprintf("Case %s: %s won %d, tied %d and lost %d pairwise judgements against %s (needs ≥ %d wins, ≤ %d losses)", pc.ID, r.Candidate, s.win, s.tie, s.loss, r.Baseline, r.MinWins, r.MaxLosses)
			if hardFailed {
				why += fmt.Sprintf("; %d of its trials failed a hard assertion", c.n-c.pass)
			}
			o.because(why+".", in.cellsWhere(r.Candidate, ofCase(pc.ID), func(res grade.CellResult) bool { return res.Valid() && !res.Passed || lost(in.pairwise, res) }))
		}
		parts = append(parts, part)
	}
	o.Detail = fmt.Sprintf("%d of %d cases pass (wins ≥ %d, losses ≤ %d): %s", passed, len(in.p.Cases), r.MinWins, r.MaxLosses, joinDetails(parts))
	return o
}

// passAtK: Δ = weighted pass@k of with − without on the split; below
// failBelow is not met, below warnBelow is met with a warning.
func (in *policyInput) passAtK(r *suite.PassAtK) RuleOutcome {
	o := ruleOutcome("passAtK", r.RuleBase)
	tag := "PASS@K"
	if in.missing(&o, tag, r.With, r.Without) {
		return o
	}
	est := func(arm string) (Metric, bool) {
		var rs []grade.CellResult
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
		hasSplit := false
		for _, pc := range in.p.Cases {
			hasSplit = hasSplit || pc.Split == r.Split
		}
		if hasSplit {
			o.notMeasured("an arm has no valid result on a case of split " + r.Split)
			return o
		}
		o.fail(tag + " missing split " + r.Split)
		o.Detail = "an arm has no valid result on a case of split " + r.Split
		o.because(fmt.Sprintf("The pass@k rule reads split %s, and the suite has no case in it.", r.Split), nil)
		return o
	}
	// Scores and Δ are rounded as the source rounds them.
	scale := math.Pow(10, float64(r.Decimals))
	round := func(x float64) float64 { return math.Round(x*scale) / scale }
	with, without := round(w.Value), round(wo.Value)
	delta := round(with - without)
	o.Detail = fmt.Sprintf("%s pass@%d: %s %.*f, %s %.*f, Δ %+.*f (fail below %g, warn below %g)", r.Split, r.K, r.With, r.Decimals, with, r.Without, r.Decimals, without, r.Decimals, delta, r.FailBelow, r.WarnBelow)
	fail, warn := PassAtKDelta(r, delta)
	switch {
	case fail:
		o.fail("PASS@K-DELTA " + r.Split)
		o.because(fmt.Sprintf("On split %s, weighted pass@%d is %.*f with the skill and %.*f without: Δ %+.*f, below %g.", r.Split, r.K, r.Decimals, with, r.Decimals, without, r.Decimals, delta, r.FailBelow),
			in.failedCells(r.With, func(pc *plan.PlanCase) bool { return pc.Split == r.Split }))
	case warn:
		o.Warnings = append(o.Warnings, "PASS@K-MARGINAL "+r.Split)
	}
	return o
}

// PassAtKDelta decides the passAtK rule on a rounded Δ: below failBelow it
// fails, below warnBelow it warns, each within the rules' tolerance. The
// rule and every native pass@k gate line decide by it, so they agree on a
// boundary.
func PassAtKDelta(r *suite.PassAtK, delta float64) (fail, warn bool) {
	switch {
	case delta < r.FailBelow-ruleTolerance:
		return true, false
	case delta < r.WarnBelow-ruleTolerance:
		return false, true
	}
	return false, false
}

// judgeAgreement: swapped-order judgements agree on at least min of the
// pairs.
func (in *policyInput) judgeAgreement(r *suite.JudgeAgreement) RuleOutcome {
	o := ruleOutcome("judgeAgreement", r.RuleBase)
	var c passCounter
	for _, j := range in.pairwise {
		if len(j.Orders) == 2 {
			c.add(j.Orders[0] == j.Orders[1])
		}
	}
	if c.n == 0 {
		if in.p.Judge != nil && in.p.Judge.Swap {
			o.notMeasured("no pair has been judged in both orders yet")
			return o
		}
		o.fail("JUDGE-AGREEMENT no swapped judgements")
		o.Detail = "no pair was judged in both orders"
		o.because("The agreement rule compares the two presentation orders of each pair, and the suite's judge does not swap them.", nil)
		return o
	}
	if !atLeast(c.share(), r.Min) {
		o.fail("JUDGE-AGREEMENT")
		o.because(fmt.Sprintf("The judge gave the same outcome in both presentation orders for %d of %d pairs (%s, min %s): it favours a position.", c.pass, c.n, percent(c.share()), percent(r.Min)), nil)
	}
	o.Detail = fmt.Sprintf("%d of %d swapped pairs agree (%s, min %s)", c.pass, c.n, percent(c.share()), percent(r.Min))
	return o
}

// lost reports whether the judge preferred the baseline over this candidate cell.
func lost(pairwise []grade.PairwiseResult, r grade.CellResult) bool {
	for _, j := range pairwise {
		if j.Case == r.Case && j.Trial == r.Trial && j.Candidate == r.Arm && j.Outcome == grade.PairwiseLoss {
			return true
		}
	}
	return false
}
