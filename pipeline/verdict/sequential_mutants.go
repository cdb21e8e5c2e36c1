package verdict

import (
	"fmt"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// The rules a mutate run's sequential comparisons name: a mutant is
// killed by its pass rate (adequacy) or, for a description mutant, by
// how often the agent opened the skill (routing).
const (
	ruleAdequacy        = "adequacy"
	ruleAdequacyRouting = "adequacy routing"
)

// mutantComparisons are the comparisons sequential stopping tests in a
// mutate plan: each mutant arm (baseline) against the arm it copies
// (candidate), on every case, so "effect" is "the skill's arm beats the
// mutant's": killed. A description mutant is also tested on routing; its
// cells stop once both its tests have. The skill's arm is read by every
// mutant copying it, so its cells run until the last of them stops.
func mutantComparisons(p *plan.Plan) []Comparison {
	var out []Comparison
	for _, m := range p.Mutants {
		out = append(out, Comparison{Rule: ruleAdequacy, Baseline: m.Arm, Candidate: m.Against})
		if describesSkill(m.Operator) {
			out = append(out, Comparison{Rule: ruleAdequacyRouting, Baseline: m.Arm, Candidate: m.Against, Opened: true})
		}
	}
	return out
}

// stopOf is comparison i as the cells see it: a mutant's test whose
// sibling (the same mutant's other test) killed it in an earlier round
// stops there too, since a killed mutant needs no more evidence.
func (s *Sequential) stopOf(i int) SequentialComparison {
	sc := s.Comparisons[i]
	if !isMutantRule(sc.Rule) {
		return sc
	}
	for j, o := range s.Comparisons {
		if j == i || !isMutantRule(o.Rule) || o.Baseline != sc.Baseline || o.Decision != inference.SequentialEffect {
			continue
		}
		if sc.Decision == SequentialPending || sc.Decision == inference.SequentialContinue || o.Round < sc.Round {
			return o
		}
	}
	return sc
}

// isMutantRule says a comparison is a mutant's test.
func isMutantRule(rule string) bool { return rule == ruleAdequacy || rule == ruleAdequacyRouting }

// caseIDs are the plan's cases.
func caseIDs(p *plan.Plan) []string {
	out := make([]string, len(p.Cases))
	for i, c := range p.Cases {
		out[i] = c.ID
	}
	return out
}

// comparison is the sequential test of rule on a mutant arm; nil when
// there is none.
func (s *Sequential) comparison(rule, arm string) *SequentialComparison {
	for i, c := range s.Comparisons {
		if c.Rule == rule && c.Baseline == arm {
			return &s.Comparisons[i]
		}
	}
	return nil
}

// decideSequentially gives a mutant its outcome from the sequential
// tests, which may be read after every round (anytime-valid, E ≥ 1/α):
// killed when the pass test (or, for a description mutant, the routing
// test) stopped for effect; else, once every test has stopped, dead
// weight or survived by the estimate on the cells read; not measured
// while a test waits for a round. The interval beside it is the fixed
// design's on the cells read: it describes the loss and decides nothing,
// since a stop chosen by the data would bias it.
func (o *MutantOutcome) decideSequentially(s *Sequential) {
	pass, route := s.comparison(ruleAdequacy, o.Arm), s.comparison(ruleAdequacyRouting, o.Arm)
	if pass == nil {
		o.Outcome = MutantNotMeasured
		return
	}
	o.Stopped = stoppedLine(pass)
	switch {
	case pass.Decision == inference.SequentialEffect:
		o.Killed, o.Outcome, o.KilledBy = true, MutantKilled, "pass rate"
	case route != nil && route.Decision == inference.SequentialEffect:
		o.Killed, o.Outcome, o.KilledBy = true, MutantKilled, "routing"
		o.Stopped = "routing " + stoppedLine(route)
	case pass.Decision == SequentialPending || (route != nil && route.Decision == SequentialPending):
		o.Outcome = MutantNotMeasured
	case o.Inference.Estimate <= 0:
		o.Outcome = MutantDeadWeight
	default:
		o.Outcome = MutantSurvived
	}
}

// stoppedLine says where a sequential test stopped, for the report.
func stoppedLine(c *SequentialComparison) string {
	if c.Decision == SequentialPending {
		return "pending: " + c.Why
	}
	return fmt.Sprintf("%s after round %d (E %.3g; %d wins, %d losses of the discordant trial pairs)", c.Decision, c.Round, c.E, c.Wins, c.Losses)
}
