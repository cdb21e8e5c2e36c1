package verdict

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// A simulated mutate run: 12 cases, 4 trials per case and arm, one trial
// per round, the schema's sequential defaults; the skill's arm (forced)
// and 8 mutant arms copying it, as mutate.Plan builds them.
const (
	mutSimCases   = 12
	mutSimTrials  = 4
	mutSimMutants = 8
)

// mutantSimPlan compiles the simulated suite and turns it into a mutate
// run's plan: the mutant arms recorded, the policy cut to what mutate.Plan
// keeps (inference, sequential), the baseline's cells dropped.
func mutantSimPlan(tb testing.TB, describe bool) *plan.Plan {
	tb.Helper()
	var cases, arms strings.Builder
	for i := 1; i <= mutSimCases; i++ {
		fmt.Fprintf(&cases, "\t\tc%d: {prompt: \"p%d\"}\n", i, i)
	}
	for i := 1; i <= mutSimMutants; i++ {
		fmt.Fprintf(&arms, "\t\tm%d: {skills: [\"new\"], activation: \"forced\"}\n", i)
	}
	root := tb.TempDir()
	files := map[string]string{
		".git/HEAD":           "",
		"skills/new/SKILL.md": "---\nname: cl\ndescription: New.\n---\n",
		"suite/suite.cue": fmt.Sprintf(`package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: "mutsim"
	skills: new: {path: "../skills/new", name: "cl"}
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	trials: %d
	arms: {%s
%s	}
	cases: {
%s	}
	policy: {uplift: {}, sequential: {}}
}
`, mutSimTrials, sequentialArms, arms.String(), cases.String()),
	}
	for name, body := range files {
		full := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		tb.Fatalf("compile suite: %s", suite.PrintError(err, root))
	}
	p.Policy = suite.Policy{Name: "mutants", Inference: p.Policy.Inference, Sequential: p.Policy.Sequential}
	p.Cells = slices.DeleteFunc(p.Cells, func(c plan.Cell) bool { return c.Arm == "none" })
	p.Arms = slices.DeleteFunc(p.Arms, func(a plan.PlanArm) bool { return a.Name == "none" })
	for i := 1; i <= mutSimMutants; i++ {
		op := "section"
		if describe && i == 1 {
			op = "blank-description"
		}
		id := fmt.Sprintf("m%d", i)
		p.Mutants = append(p.Mutants, plan.MutantArm{Arm: id, Against: "forced", Mutant: id, Skill: "new", Operator: op, What: "simulated"})
	}
	return p
}

// mutantSim draws one mutate run's outcomes: the skill's arm passes each
// case with a rate in [0.6, 0.95]; a breaking mutant fails every trial
// of a share of the cases drawn in [0.25, 1] (the cases that depend on
// what it broke) and passes the others as the skill does; a dead-weight
// mutant passes exactly as the skill's rates say. breaking[i] says which.
func mutantSim(p *plan.Plan, rng *rand.Rand, breaking []bool) []grade.CellResult {
	rates := map[string]float64{}
	for _, c := range p.Cases {
		rates[c.ID] = 0.6 + 0.35*rng.Float64()
	}
	depends := map[string]bool{}
	for i, m := range p.Mutants {
		if !breaking[i] {
			continue
		}
		share := 0.25 + 0.75*rng.Float64()
		for _, c := range p.Cases {
			depends[m.Arm+"/"+c.ID] = rng.Float64() < share
		}
	}
	out := make([]grade.CellResult, len(p.Cells))
	for i, c := range p.Cells {
		passed := !depends[c.Arm+"/"+c.Case] && rng.Float64() < rates[c.Case]
		out[i] = grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusCompleted, Passed: passed}
		out[i].Telemetry.OpenedSkill = passed
	}
	return out
}

// A mutant no case depends on (dead weight) is killed by its sequential
// test, looked at after every round, in at most α of 4,000 simulated
// mutants; a mutant the cases depend on is mostly killed, early. The
// seed is fixed.
func TestSequentialMutantsFalseKillWithinAlpha(t *testing.T) {
	p := mutantSimPlan(t, false)
	rng := rand.New(rand.NewPCG(29, 7))
	var dead, deadKilled, broken, brokenKilled int
	for range 500 {
		breaking := make([]bool, mutSimMutants)
		for i := range breaking {
			breaking[i] = i%2 == 0
		}
		seq := DecideSequential(p, mutantSim(p, rng, breaking))
		for i, m := range p.Mutants {
			c := seq.comparison(ruleAdequacy, m.Arm)
			killed := c.Decision == inference.SequentialEffect
			if c.Decision == SequentialPending {
				t.Fatalf("mutant %s pending with every cell valid: %s", m.Arm, c.Why)
			}
			if breaking[i] {
				broken++
				if killed {
					brokenKilled++
				}
			} else {
				dead++
				if killed {
					deadKilled++
				}
			}
		}
	}
	falseKill, power := float64(deadKilled)/float64(dead), float64(brokenKilled)/float64(broken)
	t.Logf("dead weight killed %.4f of %d (α 0.05); breaking mutants killed %.3f of %d", falseKill, dead, power, broken)
	if falseKill > 0.05 {
		t.Errorf("false kill rate %.4f above α 0.05", falseKill)
	}
	if power < 0.8 {
		t.Errorf("breaking mutants killed %.3f: the test stops too late", power)
	}
}

// A mutant killed after round 1 needs none of its later cells, and the
// verdict decides it killed from the cells it needed; a dead-weight
// mutant stops for futility and is dead weight. A description mutant's
// routing is a test of its own.
func TestSequentialMutantsOutcome(t *testing.T) {
	p := mutantSimPlan(t, true)
	var results []grade.CellResult
	for _, c := range p.Cells {
		passed := c.Arm != "m2" // m2 fails everything: killed at once
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusCompleted, Passed: passed}
		r.Telemetry.OpenedSkill = c.Arm != "m1" // m1 (blank description) is never opened
		results = append(results, r)
	}
	seq := DecideSequential(p, results)
	if got := len(seq.Comparisons); got != mutSimMutants+1 {
		t.Fatalf("%d comparisons, want one per mutant and m1's routing", got)
	}
	if c := seq.comparison(ruleAdequacy, "m2"); c.Decision != inference.SequentialEffect || c.Round != 1 {
		t.Fatalf("m2: %+v, want effect after round 1", c)
	}
	if c := seq.comparison(ruleAdequacyRouting, "m1"); c.Decision != inference.SequentialEffect || c.Round != 1 {
		t.Fatalf("m1 routing: %+v, want effect after round 1", c)
	}
	skip := map[string]bool{}
	for _, c := range seq.NotNeeded {
		skip[c.Cell] = true
	}
	if !skip["c1/m2/2"] || !skip["c1/m1/2"] || skip["c1/m2/1"] {
		t.Errorf("not needed: %v", seq.NotNeeded)
	}
	needed := seq.Needed(p)
	var kept []grade.CellResult
	for _, r := range results {
		if !skip[r.Cell] {
			kept = append(kept, r)
		}
	}
	v := EvaluatePolicy(needed, kept, nil, nil)
	if v.Verdict != VerdictPass || v.Adequacy == nil {
		t.Fatalf("verdict %s %v, adequacy %+v", v.Verdict, v.Reasons, v.Adequacy)
	}
	byArm := map[string]MutantOutcome{}
	for _, m := range v.Adequacy.Mutants {
		byArm[m.Arm] = m
	}
	if m := byArm["m2"]; !m.Killed || m.KilledBy != "pass rate" || !strings.HasPrefix(m.Stopped, "effect after round 1") {
		t.Errorf("m2: %+v", m)
	}
	if m := byArm["m1"]; !m.Killed || m.KilledBy != "routing" {
		t.Errorf("m1: %+v", m)
	}
	if m := byArm["m3"]; m.Killed || m.Outcome != MutantDeadWeight || !strings.HasPrefix(m.Stopped, "futility") {
		t.Errorf("m3: %+v", m)
	}
	if v.Adequacy.Killed != 2 || v.Adequacy.Measured != mutSimMutants {
		t.Errorf("killed %d of %d", v.Adequacy.Killed, v.Adequacy.Measured)
	}
}

// BenchmarkMutantsSequentialCost reports the cells a mutate run runs
// with sequential stopping against the cells the fixed design plans,
// over 20 simulated mutant sets (each its own seed: the skill's pass
// rates, which of the 8 mutants break it, by half, and the cases each
// breaks), as min / median / max of cells run over cells planned; and
// how often the kill decision matches the fixed design's (the 95%
// interval on every cell).
func BenchmarkMutantsSequentialCost(b *testing.B) {
	p := mutantSimPlan(b, false)
	fixed := *p
	fixed.Policy.Sequential = nil
	const sets = 20
	for range b.N {
		var ratios []float64
		agree, total, killedSeq, killedFixed := 0, 0, 0, 0
		for seed := uint64(1); seed <= sets; seed++ {
			rng := rand.New(rand.NewPCG(seed, 29))
			breaking := make([]bool, mutSimMutants)
			for i := range breaking {
				breaking[i] = rng.IntN(2) == 0
			}
			results := mutantSim(p, rng, breaking)
			seq := DecideSequential(p, results)
			needed := seq.Needed(p)
			skip := map[string]bool{}
			for _, c := range seq.NotNeeded {
				skip[c.Cell] = true
			}
			var kept []grade.CellResult
			for _, r := range results {
				if !skip[r.Cell] {
					kept = append(kept, r)
				}
			}
			ratios = append(ratios, float64(len(needed.Cells))/float64(len(p.Cells)))
			vs, vf := EvaluatePolicy(needed, kept, nil, nil), EvaluatePolicy(&fixed, results, nil, nil)
			for i := range vs.Adequacy.Mutants {
				total++
				s, f := vs.Adequacy.Mutants[i].Killed, vf.Adequacy.Mutants[i].Killed
				if s == f {
					agree++
				}
				if s {
					killedSeq++
				}
				if f {
					killedFixed++
				}
			}
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[0], "min-run/planned")
		b.ReportMetric(ratios[sets/2], "median-run/planned")
		b.ReportMetric(ratios[sets-1], "max-run/planned")
		b.ReportMetric(float64(killedSeq)/float64(total), "kill-rate-sequential")
		b.ReportMetric(float64(killedFixed)/float64(total), "kill-rate-fixed")
		b.ReportMetric(float64(agree)/float64(total), "kill-agreement")
	}
}
