package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// ComparisonPower is what a plan can detect in one comparison its policy
// makes, before anything runs.
type ComparisonPower struct {
	Rule      string `json:"rule"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Cases and Trials are the plan's cases the comparison reads and its
	// trials per case.
	Cases  int `json:"cases"`
	Trials int `json:"trials"`
	// Detectable is the smallest difference of pass rates the plan
	// detects with the wanted power; absent when not even 1 is.
	Detectable *float64 `json:"detectable"`
	// Threshold is the rule's own, when it has one; CasesForThreshold the
	// cases (at these trials) that would detect it, absent when more than
	// maxPlanCases would be needed.
	Threshold         *float64 `json:"threshold,omitempty"`
	CasesForThreshold *int     `json:"casesForThreshold,omitempty"`
	// Discordance is the chance that a trial pair disagrees the figures
	// are read at; absent when read at the most favourable.
	Discordance *float64 `json:"discordance,omitempty"`
	// Assumed says what the figures were read under: the most favourable
	// discordance, the stated --p10 and --p01, or a previous run's
	// per-case rates (FromRun, with their summary).
	Assumed string              `json:"assumed"`
	FromRun *inference.RunRates `json:"fromRun,omitempty"`
	Method  string              `json:"method,omitempty"`
}

// PowerAssumptions are what the power of a plan is read under: the
// chance that a trial pair disagrees (Discordance; 0 reads it at its most
// favourable, the difference itself: the baseline never wins a pair),
// the level (0: the policy's significance α, else 0.05) and the power
// wanted.
type PowerAssumptions struct {
	Discordance  float64
	Alpha, Power float64
	// ByRule, when it has the rule and Discordance is 0, is that
	// comparison's discordance (as a previous run measured it:
	// RunDiscordance).
	ByRule map[string]float64
	// FromRun, when it has the rule and Discordance is 0, are that
	// comparison's per-case rates in the run named Run (RunCaseRates):
	// the plan's power is read from its cases, ByRule aside.
	FromRun map[string]inference.RunRates
	Run     string
}

// RunCaseRates are, for each comparison of a run's policy, its per-case
// rates in that run and their within-case correlation: what `skillgate
// power --from RUN` reads the plan's power from. A comparison with no
// paired trial is left out.
func RunCaseRates(p *plan.Plan, r *Report) map[string]inference.RunRates {
	out := map[string]inference.RunRates{}
	for _, c := range Comparisons(p.Policy) {
		keep := func(cs CaseReport) bool {
			return (len(c.Kinds) == 0 || slices.Contains(c.Kinds, cs.Kind)) && (c.Split == "" || cs.Split == c.Split)
		}
		pairs := pairTrials(reportTrials(r, c.Baseline, keep), reportTrials(r, c.Candidate, keep))
		if len(pairs) > 0 {
			out[c.Rule] = inference.RatesOf(pairs)
		}
	}
	return out
}

// RunDiscordance is, for each comparison of a run's policy, the share of
// its paired trials that disagree in that run: the chance `skillgate power
// --from RUN` reads the plan's power at. A comparison with no paired trial
// is left out.
func RunDiscordance(p *plan.Plan, r *Report) map[string]float64 {
	out := map[string]float64{}
	for _, c := range Comparisons(p.Policy) {
		keep := func(cs CaseReport) bool {
			return (len(c.Kinds) == 0 || slices.Contains(c.Kinds, cs.Kind)) && (c.Split == "" || cs.Split == c.Split)
		}
		pairs := pairTrials(reportTrials(r, c.Baseline, keep), reportTrials(r, c.Candidate, keep))
		if len(pairs) == 0 {
			continue
		}
		n := 0
		for _, pr := range pairs {
			if pr.Baseline != pr.Candidate {
				n++
			}
		}
		out[c.Rule] = float64(n) / float64(len(pairs))
	}
	return out
}

// maxPlanCases bounds the search for the cases a threshold needs.
const maxPlanCases = 5000

// PlanPower says, for every comparison of the plan's policy, the smallest
// difference the plan's cases × trials detect and how many cases would
// detect the rule's threshold, for the test the verdict makes; the
// simulations are seeded by the plan digest.
func PlanPower(p *plan.Plan, a PowerAssumptions) []ComparisonPower {
	var out []ComparisonPower
	seed := string(p.Digest)
	if a.Alpha == 0 {
		a.Alpha = significanceAlpha(p.Policy)
	}
	if a.Power == 0 {
		a.Power = detectPower(p.Policy)
	}
	for _, c := range Comparisons(p.Policy) {
		n := 0
		for i := range p.Cases {
			if c.Keeps(&p.Cases[i]) {
				n++
			}
		}
		cp := ComparisonPower{Rule: c.Rule, Baseline: c.Baseline, Candidate: c.Candidate, Cases: n, Trials: p.Suite.Trials}
		if rates, ok := a.FromRun[c.Rule]; ok && a.Discordance == 0 {
			out = append(out, powerFromRun(cp, c, rates, a, seed))
			continue
		}
		psi := a.Discordance
		cp.Assumed = "the most favourable discordance: the baseline winning no pair"
		if a.Discordance > 0 {
			cp.Assumed = "the stated p10 + p01"
		}
		if d, ok := a.ByRule[c.Rule]; ok && psi == 0 {
			psi = d
			cp.Assumed = "the discordance of a previous run"
		}
		if psi > 0 {
			cp.Discordance = &psi
		}
		if d, ok := inference.Detectable(n, cp.Trials, psi, a.Alpha, a.Power, seed); ok {
			cp.Detectable = &d
		}
		if c.HasThreshold {
			th := c.Threshold
			cp.Threshold = &th
			if k, ok := inference.CasesFor(th, cp.Trials, psi, a.Alpha, a.Power, seed, maxPlanCases); ok {
				cp.CasesForThreshold = &k
			}
		}
		out = append(out, cp)
	}
	return out
}

// powerFromRun reads a comparison's power from a previous run's cases.
func powerFromRun(cp ComparisonPower, c Comparison, rates inference.RunRates, a PowerAssumptions, seed string) ComparisonPower {
	cp.FromRun, cp.Method = &rates, inference.MethodCasePowerFrom
	cp.Assumed = "the per-case rates of run " + a.Run + ": " + rates.String()
	psi := rates.P10 + rates.P01
	if psi > 0 {
		cp.Discordance = &psi
	}
	if d, ok := rates.DetectableFrom(cp.Cases, cp.Trials, a.Alpha, a.Power, seed); ok {
		cp.Detectable = &d
	}
	if c.HasThreshold {
		th := c.Threshold
		cp.Threshold = &th
		if k, ok := rates.CasesForFrom(th, cp.Trials, a.Alpha, a.Power, seed, maxPlanCases); ok {
			cp.CasesForThreshold = &k
		}
	}
	return cp
}

// DetectableLine says in one line what each comparison of the plan can
// detect at the policy's inference power and level (its significance α
// when it has one), at the most favourable discordance; "" when the policy
// compares no arms.
func DetectableLine(p *plan.Plan) string {
	var parts []string
	alpha := significanceAlpha(p.Policy)
	for _, cp := range PlanPower(p, PowerAssumptions{Alpha: alpha, Power: detectPower(p.Policy)}) {
		d := "none"
		if cp.Detectable != nil {
			d = fmt.Sprintf("%.2f", *cp.Detectable)
		}
		parts = append(parts, fmt.Sprintf("%s %s", cp.Rule, d))
		if cp.Threshold != nil {
			parts[len(parts)-1] += fmt.Sprintf(" (asks %.2f)", *cp.Threshold)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("detectable difference at best (80%% power, α %g): %s\n", alpha, strings.Join(parts, ", "))
}

// PlanPowerText says a plan's power, one comparison a line.
func PlanPowerText(cps []ComparisonPower) string {
	if len(cps) == 0 {
		return "the policy compares no arms\n"
	}
	var b strings.Builder
	for _, cp := range cps {
		fmt.Fprintf(&b, "%s (%s against %s): %s detect ", cp.Rule, cp.Candidate, cp.Baseline, sample(cp.Cases, cp.Trials))
		if cp.Detectable != nil {
			fmt.Fprintf(&b, "%.3f", *cp.Detectable)
		} else {
			b.WriteString("no difference")
		}
		if cp.Threshold != nil {
			fmt.Fprintf(&b, "; the rule asks %.3f", *cp.Threshold)
			if cp.CasesForThreshold != nil {
				fmt.Fprintf(&b, ", which %s detect", sample(*cp.CasesForThreshold, cp.Trials))
			} else {
				fmt.Fprintf(&b, ", which no plan of up to %d cases × %d trials detects", maxPlanCases, cp.Trials)
			}
		}
		b.WriteString("\n")
		if cp.Discordance != nil || cp.FromRun != nil {
			fmt.Fprintf(&b, "  read at %s\n", cp.Assumed)
		}
	}
	for _, cp := range cps {
		if cp.Discordance == nil && cp.FromRun == nil {
			b.WriteString("(where no discordance is given, at the most favourable: the baseline winning no pair; give --p10 and --p01, or --from RUN)\n")
			break
		}
	}
	return b.String()
}
