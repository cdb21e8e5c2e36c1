package suite

import (
	"fmt"

	"cuelang.org/go/cue"
)

// checkSequential refuses policy.sequential where stopping early cannot
// apply: a rule that reads every planned trial of a case (a source
// system's fixed panel) would be judged on fewer trials than its bar was
// set for, a rerun of red panels adds trials after a result, and a
// policy that compares no two arms has nothing to stop.
func checkSequential(c *checker, s *Suite) {
	seq := s.Policy.Sequential
	if seq == nil {
		return
	}
	sel := []cue.Selector{str("policy"), str("sequential")}
	pol := s.Policy
	type fixedPanel struct {
		on   bool
		rule string
		why  string
	}
	for _, f := range []fixedPanel{
		{pol.Regression != nil && pol.Regression.Enabled, "regression", fmt.Sprintf("judges each case's panel by its passes (%d of its trials, gstack's bar), which a comparison stopped early would judge on fewer", ruleMin(pol.Regression))},
		{pol.Uncovered != nil && pol.Uncovered.Enabled, "uncovered", "judges each case by its passes over every trial (gstack's bar), which a comparison stopped early would judge on fewer"},
		{pol.Efficacy != nil && pol.Efficacy.Enabled, "efficacy", "counts each case's wins and losses over every trial, which a comparison stopped early would count on fewer"},
		{pol.RunKeys != nil && pol.RunKeys.Enabled, "runKeys", "asks a fixed number of run keys per case, which a comparison stopped early would not reach"},
		{pol.RerunRed > 0, "rerunRed", "runs a red panel's trials again after a result, and a sequential plan adds no trial"},
	} {
		if f.on {
			c.add(sel, "cannot apply with policy.%s: it %s; drop sequential or the rule", f.rule, f.why)
		}
	}
	if s.Trials < 2 {
		c.add(sel, "needs at least 2 trials: with %d there is no later round to save", s.Trials)
	} else if seq.Round >= s.Trials {
		c.add(sel, "round is %d trials of the plan's %d: one round holds every trial, nothing can stop early", seq.Round, s.Trials)
	}
	if !comparesArms(s) {
		c.add(sel, "the policy compares no two arms of the suite (uplift, retention, worse, regression, nonRegression, improvement, passAtK): nothing to stop")
	}
}

// ruleMin is the regression rule's minimum passes.
func ruleMin(r *Regression) int {
	if r == nil {
		return 0
	}
	return r.MinPasses
}

// comparesArms reports whether an enabled rule of the policy compares two
// arms the suite has.
func comparesArms(s *Suite) bool {
	pol := s.Policy
	has := func(a, b string) bool {
		_, okA := s.Arms[a]
		_, okB := s.Arms[b]
		return okA && okB
	}
	switch {
	case pol.Uplift != nil && pol.Uplift.Enabled && has(pol.Uplift.Baseline, pol.Uplift.Treatment),
		pol.Retention != nil && pol.Retention.Enabled && has(pol.Retention.Forced, pol.Retention.Automatic),
		pol.Worse != nil && pol.Worse.Enabled && has(pol.Worse.Before, pol.Worse.After),
		pol.NonRegression != nil && pol.NonRegression.Enabled && has(pol.NonRegression.Baseline, pol.NonRegression.Candidate),
		pol.Improvement != nil && pol.Improvement.Enabled && has(pol.Improvement.Baseline, pol.Improvement.Candidate),
		pol.PassAtK != nil && pol.PassAtK.Enabled && has(pol.PassAtK.Without, pol.PassAtK.With):
		return true
	}
	return false
}
