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

// These simulations run whole plans through the verdict's own sequential
// decision (DecideSequential) and the policy's uplift rule on the cells it
// needed: 20 cases whose pass rates are drawn in [0.2, 0.8] per simulated
// run, 5 trials per case and arm, one trial per round, the schema's
// defaults (α 0.05, share 0.7, futility 0.1). Deciding once on every
// trial's outcome is deciding after every round: DecideSequential reads
// the rounds in order and stops at the first decision.

const (
	simCases  = 20
	simTrials = 5
)

// simPlan is the simulated suite's plan, compiled from CUE so the policy
// carries the schema's defaults.
func simPlan(tb testing.TB) *plan.Plan {
	tb.Helper()
	var b strings.Builder
	for i := 1; i <= simCases; i++ {
		fmt.Fprintf(&b, "\t\tc%d: {prompt: \"p%d\"}\n", i, i)
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
	name: "sim"
	skills: new: {path: "../skills/new", name: "cl"}
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	trials: %d
	arms: {%s
	}
	cases: {
%s	}
	policy: {uplift: {}, sequential: {}}
}
`, simTrials, sequentialArms, b.String()),
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
	return p
}

// simOutcome is what one simulated run decided.
type simOutcome struct {
	decision string
	// cells is how many cells the run needed; pass whether the uplift
	// rule passed on them, fixedPass on every planned cell.
	cells           int
	pass, fixedPass bool
}

// simulatePlans runs n simulated plans with the candidate's pass rate
// raised by uplift in every case; withRule evaluates the uplift rule too.
func simulatePlans(p *plan.Plan, uplift float64, n int, seed uint64, withRule bool) []simOutcome {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rates := map[string]float64{}
	out := make([]simOutcome, n)
	results := make([]grade.CellResult, len(p.Cells))
	for run := range n {
		for _, c := range p.Cases {
			rates[c.ID] = 0.2 + 0.6*rng.Float64()
		}
		for i, c := range p.Cells {
			rate := rates[c.Case]
			if c.Arm == "forced" {
				rate = min(1, rate+uplift)
			}
			passed := rng.Float64() < rate
			results[i] = grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusCompleted, Passed: passed}
		}
		seq := DecideSequential(p, results)
		needed := seq.Needed(p)
		out[run] = simOutcome{decision: seq.Comparisons[0].Decision, cells: len(needed.Cells)}
		if !withRule {
			continue
		}
		kept := make([]grade.CellResult, 0, len(needed.Cells))
		skip := map[string]bool{}
		for _, c := range seq.NotNeeded {
			skip[c.Cell] = true
		}
		for _, r := range results {
			if !skip[r.Cell] {
				kept = append(kept, r)
			}
		}
		out[run].pass, out[run].fixedPass = upliftMet(needed, kept), upliftMet(p, results)
	}
	return out
}

// upliftMet evaluates the plan's uplift rule alone on the results.
func upliftMet(p *plan.Plan, results []grade.CellResult) bool {
	in := newPolicyInput(p, alignResults(p, results), []ArmReport{}, nil, nil) // the rule reads no arm report
	return in.uplift(p.Policy.Uplift).Met
}

// simSummary is the share of runs stopped for effect, of runs whose rule
// passed with and without stopping, and the share of the fixed design's
// cells each run saved, sorted.
type simSummary struct {
	effect, pass, fixedPass float64
	saved                   []float64
}

func summarize(p *plan.Plan, runs []simOutcome) simSummary {
	var s simSummary
	for _, r := range runs {
		if r.decision == inference.SequentialEffect {
			s.effect++
		}
		if r.pass {
			s.pass++
		}
		if r.fixedPass {
			s.fixedPass++
		}
		s.saved = append(s.saved, 1-float64(r.cells)/float64(len(p.Cells)))
	}
	n := float64(len(runs))
	s.effect, s.pass, s.fixedPass = s.effect/n, s.pass/n, s.fixedPass/n
	slices.Sort(s.saved)
	return s
}

func (s simSummary) mean() float64 {
	sum := 0.0
	for _, x := range s.saved {
		sum += x
	}
	return sum / float64(len(s.saved))
}

const planRuns = 10000

// Under no difference, 10,000 simulated plans decided after every round
// stop for effect at most α of the time; under an uplift of 0.3 (2,000
// plans) they stop for effect most of the time and save cells. The seed
// is fixed. The benchmark adds the uplift rule's own pass rates.
func TestSequentialPlansFalseEffectWithinAlpha(t *testing.T) {
	p := simPlan(t)
	null := summarize(p, simulatePlans(p, 0, planRuns, 1, false))
	t.Logf("no difference: stopped for effect %.4f (α 0.05); cells saved mean %.1f%%, min / median / max %.0f / %.0f / %.0f%%",
		null.effect, 100*null.mean(), 100*null.saved[0], 100*null.saved[planRuns/2], 100*null.saved[planRuns-1])
	if null.effect > 0.05 {
		t.Errorf("false effect rate %.4f above α 0.05", null.effect)
	}
	big := summarize(p, simulatePlans(p, 0.3, planRuns/5, 3, false))
	t.Logf("uplift 0.3 (%d plans): stopped for effect %.4f; cells saved mean %.1f%%", planRuns/5, big.effect, 100*big.mean())
	if big.effect < 0.9 || big.mean() < 0.3 {
		t.Errorf("uplift 0.3: effect %.4f, saved %.3f: the test stops too late", big.effect, big.mean())
	}
}

// BenchmarkSequentialPlansSaved reports, over 10,000 simulated plans per
// scenario, the share of the fixed design's cells sequential stopping
// saved (min / median / max / mean), the rate of stopping for effect and
// the uplift rule's pass rate with and without stopping.
func BenchmarkSequentialPlansSaved(b *testing.B) {
	p := simPlan(b)
	type scenario struct {
		name   string
		uplift float64
		seed   uint64
	}
	scenarios := []scenario{{"none", 0, 1}, {"uplift0.2", 0.2, 2}, {"uplift0.3", 0.3, 3}}
	got := make([]simSummary, len(scenarios))
	for b.Loop() {
		for i, sc := range scenarios {
			got[i] = summarize(p, simulatePlans(p, sc.uplift, planRuns, sc.seed, true))
		}
	}
	for i, sc := range scenarios {
		s := got[i]
		b.ReportMetric(100*s.saved[0], sc.name+"-saved-min-%")
		b.ReportMetric(100*s.saved[planRuns/2], sc.name+"-saved-median-%")
		b.ReportMetric(100*s.saved[planRuns-1], sc.name+"-saved-max-%")
		b.ReportMetric(100*s.mean(), sc.name+"-saved-mean-%")
		b.ReportMetric(100*s.effect, sc.name+"-effect-%")
		b.ReportMetric(100*s.pass, sc.name+"-rule-pass-%")
		b.ReportMetric(100*s.fixedPass, sc.name+"-rule-pass-fixed-%")
	}
}
