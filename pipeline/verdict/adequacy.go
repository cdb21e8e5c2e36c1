package verdict

import (
	"fmt"
	"slices"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// Mutant outcomes, as MutantOutcome.Outcome says them.
const (
	// MutantKilled: the skill's arm did better than the mutant's, the
	// paired 95% interval of the difference above 0.
	MutantKilled = "killed"
	// MutantSurvived: the suite could not tell the mutant from the skill,
	// though the skill's arm passed more often.
	MutantSurvived = "survived"
	// MutantDeadWeight: a surviving mutant whose arm did at least as well
	// as the skill's: what it removed carried nothing the suite measures.
	MutantDeadWeight = "dead weight"
	// MutantNotMeasured: no valid pair of cells to compare.
	MutantNotMeasured = "not measured"
)

// Adequacy is how well a mutate run's suite tells its skills from their
// mutants: the kill rate over the mutants measured, and each mutant's
// outcome.
type Adequacy struct {
	KillRate float64 `json:"killRate"`
	Killed   int     `json:"killed"`
	Measured int     `json:"measured"`
	// MinKillRate is the policy's adequacy threshold, when it has one.
	MinKillRate *float64        `json:"minKillRate,omitempty"`
	Mutants     []MutantOutcome `json:"mutants"`
}

// MutantOutcome is one mutant arm against the arm it copies.
type MutantOutcome struct {
	ID       string `json:"id"`
	Skill    string `json:"skill"`
	Operator string `json:"operator"`
	What     string `json:"what"`
	Section  string `json:"section,omitempty"`
	Arm      string `json:"arm"`
	Against  string `json:"against"`
	Killed   bool   `json:"killed"`
	Outcome  string `json:"outcome"`
	// Inference compares the skill's arm (candidate) with the mutant's
	// (baseline): its estimate is the pass rate the mutant lost.
	Inference *Inference `json:"inference,omitempty"`
	// Routing, for a mutant of the description, compares how often each
	// arm's agent opened the skill: a description mutant the agent no
	// longer picks is killed by routing even where the cases pass
	// without the skill.
	Routing *Inference `json:"routing,omitempty"`
	// KilledBy says which comparison killed it: "pass rate" or "routing".
	KilledBy string `json:"killedBy,omitempty"`
	// Stopped, under policy.sequential, says where the mutant's
	// sequential test stopped: its decision (effect kills), round and
	// e-value. The outcome is then that test's, not the interval's.
	Stopped string `json:"stopped,omitempty"`
	// Unnoticed are the cases whose trials the mutant passed and failed
	// exactly as the skill did: the cases that did not notice it.
	Unnoticed []string `json:"unnoticed,omitempty"`
}

// adequacy compares every mutant arm of the plan with the arm it copies.
func (in *policyInput) adequacy() *Adequacy {
	if len(in.p.Mutants) == 0 {
		return nil
	}
	alpha := significanceAlpha(in.p.Policy)
	all := func(*plan.PlanCase) bool { return true }
	a := &Adequacy{Mutants: []MutantOutcome{}}
	// Under policy.sequential a mutant stopped early is decided by its
	// anytime-valid test, decided again from the cells it needed.
	seq := DecideSequential(in.p, in.cells)
	for _, m := range in.p.Mutants {
		o := MutantOutcome{ID: m.Mutant, Skill: m.Skill, Operator: m.Operator, What: m.What, Section: m.Section, Arm: m.Arm, Against: m.Against}
		skill, mutant := in.armTrials(m.Against, all), in.armTrials(m.Arm, all)
		pairs := pairTrials(mutant, skill)
		c := Comparison{Rule: "adequacy", Baseline: m.Arm, Candidate: m.Against}
		o.Inference = compare(c, pairs, alpha, detectPower(in.p.Policy), string(in.p.Digest), true)
		if describesSkill(m.Operator) {
			o.Routing = compare(c, pairTrials(in.armOpened(m.Arm), in.armOpened(m.Against)), alpha, detectPower(in.p.Policy), string(in.p.Digest), true)
		}
		switch {
		case o.Inference == nil || o.Inference.N == 0:
			o.Outcome = MutantNotMeasured
		case seq != nil:
			o.decideSequentially(seq)
		case o.Inference.CI95[0] > 0:
			o.Killed, o.Outcome, o.KilledBy = true, MutantKilled, "pass rate"
		case o.Routing != nil && o.Routing.N > 0 && o.Routing.CI95[0] > 0:
			o.Killed, o.Outcome, o.KilledBy = true, MutantKilled, "routing"
		case o.Inference.Estimate <= 0:
			o.Outcome = MutantDeadWeight
		default:
			o.Outcome = MutantSurvived
		}
		if o.Outcome != MutantNotMeasured {
			a.Measured++
			if o.Killed {
				a.Killed++
			}
			o.Unnoticed = unnoticed(pairs)
		}
		a.Mutants = append(a.Mutants, o)
	}
	if a.Measured > 0 {
		a.KillRate = float64(a.Killed) / float64(a.Measured)
	}
	return a
}

// describesSkill says a mutant's operator changed the description,
// which decides whether the agent picks the skill (package mutate's
// description operators).
func describesSkill(op string) bool {
	return op == "blank-description" || op == "swap-description" || op == "cut-description"
}

// armOpened lists, for an arm's valid cells, whether the agent opened a
// skill, as a trial's pass.
func (in *policyInput) armOpened(arm string) []trialPass {
	var out []trialPass
	for _, r := range in.cells {
		if r.Arm == arm && r.Valid() {
			out = append(out, trialPass{r.Case, r.Trial, r.Telemetry.OpenedSkill})
		}
	}
	return out
}

// unnoticed lists the cases, sorted, whose every pair agrees.
func unnoticed(pairs []inference.Pair) []string {
	differs := map[string]bool{}
	for _, p := range pairs {
		differs[p.Case] = differs[p.Case] || p.Baseline != p.Candidate
	}
	var out []string
	for c, d := range differs {
		if !d {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// adequacyRule requires the kill rate of a mutate run.
func adequacyRule(r *suite.Adequacy, a *Adequacy) RuleOutcome {
	o := RuleOutcome{Rule: "adequacy", Severity: r.Severity}
	if a == nil || a.Measured == 0 {
		o.NotMeasured = "no mutant was measured (adequacy gates a mutate run: skillgate mutate)"
		return o
	}
	min := r.MinKillRate
	a.MinKillRate = &min
	o.Detail = fmt.Sprintf("kill rate %s (%d of %d mutants), required ≥ %s", percent(a.KillRate), a.Killed, a.Measured, percent(min))
	o.Met = atLeast(a.KillRate, min)
	if !o.Met {
		var survivors []string
		for _, m := range a.Mutants {
			if !m.Killed && m.Outcome != MutantNotMeasured {
				survivors = append(survivors, m.Arm)
			}
		}
		o.Reasons = []string{fmt.Sprintf("INADEQUATE kill rate %s < %s", percent(a.KillRate), percent(min))}
		for _, s := range survivors {
			o.Findings = append(o.Findings, Finding{Reason: o.Reasons[0], Text: "mutant " + s + " survived", Cells: nil})
		}
	}
	return o
}
