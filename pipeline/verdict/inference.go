package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// Inference is a rule's comparison of two arms, paired on (case, trial)
// with the case as the unit (package inference), beside the rule's own
// figures: it never changes whether the rule is met.
type Inference struct {
	inference.Result
	// Baseline and Candidate name the compared arms.
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// AcrossRuns: the baseline arm is the baseline run's and the candidate
	// the candidate run's (the paired gate), often of one name.
	AcrossRuns bool `json:"acrossRuns,omitempty"`
	// Detectable is the smallest difference this many cases × trials
	// detect with 80% power at the observed discordance; absent when not
	// even a difference of 1 is.
	Detectable *float64 `json:"detectable,omitempty"`
	// Threshold is the rule's own threshold on the difference, when it
	// has one.
	Threshold *float64 `json:"threshold,omitempty"`
}

// Comparison is one comparison of two arms a policy's rule makes.
type Comparison struct {
	Rule                string
	Baseline, Candidate string
	// Kinds and Split select the compared cases; empty selects all.
	Kinds []string
	Split string
	// Threshold is the difference of pass rates the rule asks, when it
	// asks one (HasThreshold).
	Threshold    float64
	HasThreshold bool
	// Opened compares whether the agent opened a skill instead of
	// whether the cell passed: a description mutant's routing.
	Opened bool
}

// outcome is what the comparison reads of a cell: its pass, or whether
// the agent opened a skill.
func (c Comparison) outcome(r grade.CellResult) bool {
	if c.Opened {
		return r.Telemetry.OpenedSkill
	}
	return r.Passed
}

// Keeps says whether the comparison reads a case.
func (c Comparison) Keeps(pc *plan.PlanCase) bool {
	return (len(c.Kinds) == 0 || slices.Contains(c.Kinds, pc.Kind)) && (c.Split == "" || pc.Split == c.Split)
}

// Comparisons are the arm comparisons of a policy's enabled rules: uplift
// (treatment against baseline, its minimum points the threshold),
// retention (automatic against forced: what leaving the skill to be found
// loses), worse and regression (after against before), nonRegression and
// improvement (candidate against baseline) and passAtK (with against
// without on the split, its failBelow the threshold when above 0).
func Comparisons(pol suite.Policy) []Comparison {
	var out []Comparison
	if r := pol.Regression; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "regression", Baseline: r.Before, Candidate: r.After})
	}
	if r := pol.Worse; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "worse", Baseline: r.Before, Candidate: r.After})
	}
	if r := pol.Uplift; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "uplift", Baseline: r.Baseline, Candidate: r.Treatment, Kinds: r.Kinds, Threshold: r.MinPoints / 100, HasThreshold: r.MinPoints > 0})
	}
	if r := pol.Retention; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "retention", Baseline: r.Forced, Candidate: r.Automatic, Kinds: r.Kinds})
	}
	if r := pol.NonRegression; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "nonRegression", Baseline: r.Baseline, Candidate: r.Candidate})
	}
	if r := pol.Improvement; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "improvement", Baseline: r.Baseline, Candidate: r.Candidate})
	}
	if r := pol.PassAtK; r != nil && r.Enabled {
		out = append(out, Comparison{Rule: "passAtK", Baseline: r.Without, Candidate: r.With, Split: r.Split, Threshold: r.FailBelow, HasThreshold: r.FailBelow > 0})
	}
	return out
}

// trialPass is one valid trial of a case in an arm.
type trialPass struct {
	Case   string
	Trial  int
	Passed bool
}

// pairTrials pairs two arms' valid trials on (case, trial).
func pairTrials(base, cand []trialPass) []inference.Pair {
	type key struct {
		c string
		t int
	}
	b := map[key]bool{}
	for _, t := range base {
		b[key{t.Case, t.Trial}] = t.Passed
	}
	var out []inference.Pair
	for _, t := range cand {
		if bp, ok := b[key{t.Case, t.Trial}]; ok {
			out = append(out, inference.Pair{Case: t.Case, Trial: t.Trial, Baseline: bp, Candidate: t.Passed})
		}
	}
	return out
}

// compare makes the inference of a comparison over paired trials, with
// its detectable difference at level alpha and that power; seed is the plan digest.
// A resampled run of the noise floor's asks no detectable difference
// (detect false): it decides nothing, and costs thousands of simulations.
func compare(c Comparison, pairs []inference.Pair, alpha, power float64, seed string, detect bool) *Inference {
	r, err := inference.Compare(pairs, seed)
	if err != nil {
		// Results aligned to plan cells hold one cell per (case, trial):
		// a duplicate is not evidence, so there is nothing to say.
		return nil
	}
	inf := &Inference{Result: r, Baseline: c.Baseline, Candidate: c.Candidate}
	if c.HasThreshold {
		inf.Threshold = &c.Threshold
	}
	if r.N == 0 || !detect {
		return inf
	}
	discordant := 0
	for _, p := range pairs {
		if p.Baseline != p.Candidate {
			discordant++
		}
	}
	psi := float64(discordant) / float64(len(pairs))
	if d, ok := inference.Detectable(r.N, r.TrialsPerCase, psi, alpha, power, seed); ok {
		inf.Detectable = &d
	}
	return inf
}

// Levels of a policy decoded before the schema gave #InferenceLevels (a
// stored plan's); TestInferenceLevelsMatchTheSchema holds them to its
// defaults.
const (
	priorAlpha = 0.05
	priorPower = 0.8
)

// DefaultLevels are the schema's #InferenceLevels defaults, the level and
// power of a power question asked without a suite.
func DefaultLevels() (alpha, power float64) { return priorAlpha, priorPower }

// detectPower is the power the detectable difference is read at.
func detectPower(pol suite.Policy) float64 {
	if pol.Inference.Power > 0 {
		return pol.Inference.Power
	}
	return priorPower
}

// underpowered says the warning of an inference whose sample could not
// have detected the rule's threshold, or "".
func underpowered(rule string, inf *Inference) string {
	if inf == nil || inf.Threshold == nil || inf.N == 0 {
		return ""
	}
	if inf.Detectable == nil {
		return fmt.Sprintf("UNDERPOWERED %s: %s detect no difference, the rule asks %.2f", rule, sample(inf.N, inf.TrialsPerCase), *inf.Threshold)
	}
	if *inf.Detectable > *inf.Threshold+ruleTolerance {
		return fmt.Sprintf("UNDERPOWERED %s: %s detect %.2f, the rule asks %.2f", rule, sample(inf.N, inf.TrialsPerCase), *inf.Detectable, *inf.Threshold)
	}
	return ""
}

// sample says cases × trials with their plurals.
func sample(cases, trials int) string {
	s := fmt.Sprintf("%d cases × %d trials", cases, trials)
	if cases == 1 {
		s = strings.Replace(s, "cases", "case", 1)
	}
	if trials == 1 {
		s = strings.TrimSuffix(s, "s")
	}
	return s
}

// significanceAlpha is the level inference reads at: the significance
// rule's when the policy has one, else the policy's inference level.
func significanceAlpha(pol suite.Policy) float64 {
	if s := pol.Significance; s != nil && s.Enabled && s.Alpha > 0 {
		return s.Alpha
	}
	if pol.Inference.Alpha > 0 {
		return pol.Inference.Alpha
	}
	return priorAlpha
}

// armTrials lists an arm's valid trials over the cases keep accepts.
func (in *policyInput) armTrials(arm string, keep func(*plan.PlanCase) bool) []trialPass {
	var out []trialPass
	for _, r := range in.cells {
		if r.Arm != arm || !r.Valid() {
			continue
		}
		if pc := in.cases[r.Case]; pc == nil || !keep(pc) {
			continue
		}
		out = append(out, trialPass{r.Case, r.Trial, r.Passed})
	}
	return out
}

// attachInference gives every rule outcome that compares arms its
// inference, and the UNDERPOWERED warning where it applies; a rule that
// was not measured gets neither.
func (in *policyInput) attachInference(rules []RuleOutcome) {
	if s := in.p.Policy.Significance; in.resampled && (s == nil || !s.Enabled) {
		return // no rule of a resampled run reads it
	}
	alpha := significanceAlpha(in.p.Policy)
	for _, c := range Comparisons(in.p.Policy) {
		i := slices.IndexFunc(rules, func(o RuleOutcome) bool { return o.Rule == c.Rule })
		if i < 0 || rules[i].NotMeasured != "" || in.arms[c.Baseline] == nil || in.arms[c.Candidate] == nil {
			continue
		}
		pairs := pairTrials(in.armTrials(c.Baseline, c.Keeps), in.armTrials(c.Candidate, c.Keeps))
		inf := compare(c, pairs, alpha, detectPower(in.p.Policy), string(in.p.Digest), !in.resampled)
		if inf == nil || inf.N == 0 {
			continue
		}
		rules[i].Inference = inf
		if w := underpowered(c.Rule, inf); w != "" {
			rules[i].Warnings = append(rules[i].Warnings, w)
		}
	}
}

// attachGateInference gives the paired gate's nonRegression and
// improvement outcomes the inference of the candidate run's arm against
// the baseline run's, paired on (case, trial) across the two runs.
func attachGateInference(rules []RuleOutcome, b, c gateSide) {
	all := func(CaseReport) bool { return true }
	pairs := pairTrials(reportTrials(b.rep, b.arm.Name, all), reportTrials(c.rep, c.arm.Name, all))
	seed := string(b.rep.Plan) + " " + string(c.rep.Plan)
	alpha := significanceAlpha(c.plan.Policy)
	for i := range rules {
		if rules[i].Rule != "nonRegression" && rules[i].Rule != "improvement" {
			continue
		}
		if inf := compare(Comparison{Rule: rules[i].Rule, Baseline: b.arm.Name, Candidate: c.arm.Name}, pairs, alpha, detectPower(c.plan.Policy), seed, true); inf != nil && inf.N > 0 {
			inf.AcrossRuns = true
			rules[i].Inference = inf
		}
	}
}

// significance: each listed rule's inference shows the candidate better
// beyond noise: a positive estimate with p below alpha and, with
// interval, the 95% interval's lower bound above the rule's threshold.
func significance(r *suite.Significance, rules []RuleOutcome) RuleOutcome {
	o := ruleOutcome("significance", r.RuleBase)
	var parts []string
	for _, name := range r.Rules {
		i := slices.IndexFunc(rules, func(o RuleOutcome) bool { return o.Rule == name })
		if i < 0 || rules[i].Inference == nil || rules[i].NotMeasured != "" {
			continue
		}
		inf := rules[i].Inference
		threshold := 0.0
		if inf.Threshold != nil {
			threshold = *inf.Threshold
		}
		parts = append(parts, fmt.Sprintf("%s: %+.3f, 95%% [%.3f, %.3f], p %.4g (%d cases)", name, inf.Estimate, inf.CI95[0], inf.CI95[1], inf.P, inf.N))
		switch {
		case inf.Estimate <= 0 || inf.P >= r.Alpha:
			o.fail("NOT-SIGNIFICANT " + name)
			o.because(fmt.Sprintf("%s against %s: %+.3f over %d cases, p %.4g, not below α %g: the difference may be noise.", inf.Candidate, inf.Baseline, inf.Estimate, inf.N, inf.P, r.Alpha), nil)
		case r.Interval && !exceeds(inf.CI95[0], threshold):
			o.fail("NOT-SIGNIFICANT " + name)
			o.because(fmt.Sprintf("%s against %s: the 95%% interval [%.3f, %.3f] over %d cases reaches down to %.3f, not above the rule's %.3f.", inf.Candidate, inf.Baseline, inf.CI95[0], inf.CI95[1], inf.N, inf.CI95[0], threshold), nil)
		}
	}
	if len(parts) == 0 {
		o.Detail = "no listed rule compared arms in this run"
	} else {
		o.Detail = joinDetails(parts)
	}
	return o
}

// String says the inference in one line for reports: the difference,
// its interval and p-value, the sample in cases × trials, the method and,
// when it was computed, what the sample could detect.
func (i *Inference) String() string {
	cand, base := i.Candidate, i.Baseline
	if i.AcrossRuns {
		cand, base = "candidate run's "+cand, "baseline run's "+base
	}
	s := fmt.Sprintf("%s − %s: %+.3f, 95%% [%.3f, %.3f], p %.4g; %s, unit case; %s",
		cand, base, i.Estimate, i.CI95[0], i.CI95[1], i.P, sample(i.N, i.TrialsPerCase), i.Method)
	if i.Detectable != nil {
		s += fmt.Sprintf("; detects %.3f at 80%% power", *i.Detectable)
	} else if i.N > 0 {
		s += "; detects no difference at 80% power"
	}
	return s
}

// reportTrials lists an arm's valid trials in a report over the cases
// keep accepts.
func reportTrials(rep *Report, arm string, keep func(CaseReport) bool) []trialPass {
	var out []trialPass
	for _, cs := range rep.Cases {
		if !keep(cs) {
			continue
		}
		for _, t := range cs.Trials[arm] {
			if t.Status != grade.StatusInvalid && t.Status != grade.StatusMissing {
				out = append(out, trialPass{cs.ID, t.Trial, t.Passed})
			}
		}
	}
	return out
}
