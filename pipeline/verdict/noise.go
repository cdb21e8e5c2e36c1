package verdict

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// NoiseFloor is what a run's replicate arms measure: how often a trial's
// outcome differs between two arms that install the same bytes, and how
// likely the verdict is to flip between two identical runs.
type NoiseFloor struct {
	Replicates []ReplicateNoise `json:"replicates"`
	// VerdictFlip is the chance that two identical runs of the suite
	// reach different verdicts, the noiseFloor rule aside.
	VerdictFlip inference.Flip `json:"verdictFlip"`
}

// ReplicateNoise is one replicate arm against its original, paired on
// (case, trial).
type ReplicateNoise struct {
	Arm string `json:"arm"`
	Of  string `json:"of"`
	// FlipRate is the mean over cases of each case's share of paired
	// trials whose outcome differs (the case is the unit); Pairs and
	// Flips are the totals.
	FlipRate float64              `json:"flipRate"`
	Pairs    int                  `json:"pairs"`
	Flips    int                  `json:"flips"`
	Cases    []inference.CaseFlip `json:"cases"`
}

// hasReplicates says whether any arm of the plan is a replicate.
func (in *policyInput) hasReplicates() bool {
	for _, a := range in.p.Arms {
		if a.ReplicateOf != "" {
			return true
		}
	}
	return false
}

// noiseFloor measures the run's replicate arms: the flip rate of each
// against its original, case by case, and the verdict's flip probability.
func (in *policyInput) noiseFloor() *NoiseFloor {
	nf := &NoiseFloor{Replicates: []ReplicateNoise{}}
	keepAll := func(*plan.PlanCase) bool { return true }
	for _, a := range in.p.Arms {
		if a.ReplicateOf == "" {
			continue
		}
		pairs := pairTrials(in.armTrials(a.ReplicateOf, keepAll), in.armTrials(a.Name, keepAll))
		rn := ReplicateNoise{Arm: a.Name, Of: a.ReplicateOf}
		rn.Cases, rn.FlipRate = inference.FlipRates(pairs)
		if rn.Cases == nil {
			rn.Cases = []inference.CaseFlip{}
		}
		for _, c := range rn.Cases {
			rn.Pairs += c.Pairs
			rn.Flips += c.Flips
		}
		nf.Replicates = append(nf.Replicates, rn)
	}
	nf.VerdictFlip = inference.VerdictFlip(inference.FlipDraws, string(in.p.Digest), in.resampledVerdicts())
	return nf
}

// resampledVerdicts draws a world and decides two runs of it. The world
// gives each case × arm a pass chance drawn from its Jeffreys posterior,
// Beta(k + ½, n − k + ½) for k passes of n valid trials (a replicate's
// pooled with its original's: the same bytes, so the same chance); each
// run gives every valid cell an outcome drawn at that chance and the
// result of a trial of that case × arm with that outcome (when none was
// observed, one of its trials with the outcome set), the cell keeping its
// own identity. Drawing the world first carries the uncertainty of each
// case's chance into the two runs, as two real runs share the one true
// world; resampling the trials alone would treat a case that passed 3 of
// 3 as one that can never fail. Invalid and missing cells stay as they
// are: they are not the agent's noise. Judgements and same-tree reruns
// are not resampled.
func (in *policyInput) resampledVerdicts() func(*rand.Rand) (string, string) {
	origin := map[string]string{}
	for _, a := range in.p.Arms {
		origin[a.Name] = a.Name
		if a.ReplicateOf != "" {
			origin[a.Name] = a.ReplicateOf
		}
	}
	type key struct{ c, arm string }
	type pool struct {
		byOutcome [2][]grade.CellResult
		chance    float64
	}
	pools := map[key]*pool{}
	var keys []key
	for _, r := range in.cells {
		if !r.Valid() {
			continue
		}
		k := key{r.Case, origin[r.Arm]}
		if pools[k] == nil {
			pools[k] = &pool{}
			keys = append(keys, k)
		}
		pools[k].byOutcome[b2i(r.Passed)] = append(pools[k].byOutcome[b2i(r.Passed)], r)
	}
	run := make([]grade.CellResult, len(in.cells))
	decide := func(rng *rand.Rand) string {
		for i, r := range in.cells {
			run[i] = r
			if !r.Valid() {
				continue
			}
			pl := pools[key{r.Case, origin[r.Arm]}]
			passed := rng.Float64() < pl.chance
			d := r
			if same := pl.byOutcome[b2i(passed)]; len(same) > 0 {
				d = same[rng.IntN(len(same))]
			}
			d.Passed = passed
			d.Cell, d.Case, d.Arm, d.Trial, d.Rollout, d.Grade = r.Cell, r.Case, r.Arm, r.Trial, r.Rollout, r.Grade
			run[i] = d
		}
		return evaluateRun(in.p, run, nil, in.pairwise, nil, true).Verdict
	}
	return func(rng *rand.Rand) (string, string) {
		for _, k := range keys {
			pl := pools[k]
			pl.chance = jeffreysDraw(rng, len(pl.byOutcome[1]), len(pl.byOutcome[0]))
		}
		return decide(rng), decide(rng)
	}
}

// jeffreysDraw draws a chance from Beta(pass + ½, fail + ½) as
// G₁/(G₁ + G₂), each Gamma(k + ½) the sum of Z²/2 and k unit exponentials.
func jeffreysDraw(rng *rand.Rand, pass, fail int) float64 {
	g := func(k int) float64 {
		z := rng.NormFloat64()
		x := z * z / 2
		for range k {
			x += rng.ExpFloat64()
		}
		return x
	}
	a, b := g(pass), g(fail)
	if a+b == 0 {
		return 0.5
	}
	return a / (a + b)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// noiseFloorRule holds the measured noise under the policy's bounds: a
// replicate whose flip rate is above maxFlipRate is NOISY <arm>; a
// verdict flip probability above maxVerdictFlip is VERDICT-UNSTABLE.
func noiseFloorRule(r *suite.NoiseFloor, nf *NoiseFloor) RuleOutcome {
	o := ruleOutcome("noiseFloor", r.RuleBase)
	if nf == nil || len(nf.Replicates) == 0 {
		o.fail("NOISE-FLOOR no replicate arm")
		o.because("The policy's noiseFloor rule measures replicate arms (replicateOf), and the suite has none.", nil)
		o.Detail = "no replicate arm"
		return o
	}
	var parts []string
	for _, rn := range nf.Replicates {
		parts = append(parts, fmt.Sprintf("%s against %s: flip rate %s over %d cases (%d of %d trial pairs differ)", rn.Arm, rn.Of, percent(rn.FlipRate), len(rn.Cases), rn.Flips, rn.Pairs))
		if len(rn.Cases) == 0 {
			o.notMeasured("no trial valid in both " + rn.Arm + " and " + rn.Of)
			return o
		}
		if exceeds(rn.FlipRate, r.MaxFlipRate) {
			o.fail("NOISY " + rn.Arm)
			o.because(fmt.Sprintf("Replicate %s differs from %s, which installs the same bytes, on %s of its trials per case, above the policy's %s: a difference between arms of that size is noise.", rn.Arm, rn.Of, percent(rn.FlipRate), percent(r.MaxFlipRate)), nil)
		}
	}
	vf := nf.VerdictFlip
	parts = append(parts, fmt.Sprintf("verdict flip %s ± %s over %d resampled worlds", percent(vf.Probability), percent(vf.StdErr), vf.Draws))
	if exceeds(vf.Probability, r.MaxVerdictFlip) {
		o.fail("VERDICT-UNSTABLE")
		o.because(fmt.Sprintf("Two identical runs of this suite would reach different verdicts %s of the time (%d resampled worlds, their runs %s), above the policy's %s.", percent(vf.Probability), vf.Draws, verdictCounts(vf.Verdicts), percent(r.MaxVerdictFlip)), nil)
	}
	o.Detail = joinDetails(parts)
	return o
}

// verdictCounts says how many resampled runs reached each verdict, in a
// fixed order.
func verdictCounts(counts map[string]int) string {
	s := ""
	for _, v := range []string{VerdictPass, VerdictFail, VerdictIncomplete} {
		if c := counts[v]; c > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%d %s", c, v)
		}
	}
	return s
}

// NoiseFloorLines say the noise floor for reports, a line per replicate
// (its flip rate, then each case's) and one for the verdict.
func NoiseFloorLines(nf *NoiseFloor) []string {
	var out []string
	for _, rn := range nf.Replicates {
		line := fmt.Sprintf("replicate %s of %s: flip rate %s per case over %d cases (%d of %d trial pairs differ)", rn.Arm, rn.Of, percent(rn.FlipRate), len(rn.Cases), rn.Flips, rn.Pairs)
		var cs []string
		for _, c := range rn.Cases {
			cs = append(cs, fmt.Sprintf("%s %d/%d", c.Case, c.Flips, c.Pairs))
		}
		if len(cs) > 0 {
			line += ": " + strings.Join(cs, ", ")
		}
		out = append(out, line)
	}
	vf := nf.VerdictFlip
	return append(out, fmt.Sprintf("verdict flip between two identical runs: %s ± %s (%d resampled worlds, their runs %s); %s",
		percent(vf.Probability), percent(vf.StdErr), vf.Draws, verdictCounts(vf.Verdicts), vf.Method))
}
