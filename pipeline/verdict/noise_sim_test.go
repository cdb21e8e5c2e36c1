package verdict

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNoiseFloorSimulation validates the verdict's flip probability
// against the truth, by simulation with a fixed seed. Each of 30 worlds
// has 8 task cases whose pass chances are drawn (none's in [0.1, 0.7],
// forced's that plus an uplift drawn in [0, 0.3]) and a policy whose
// one rule is uplift (10 points). Its true flip probability is
// 2q(1 − q), q the chance that a run passes, from 2,000 runs drawn from
// the true chances; one run with a replicate of forced is drawn and its
// noise floor measured as a run would (500 resampled worlds). The test
// reports the estimate's error (bias, mean absolute, root mean square)
// and that of the replicate's flip rate against the true 2p(1 − p).
func TestNoiseFloorSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const worlds, cases, trials, truthRuns = 30, 8, 3, 2000
	var cs strings.Builder
	for i := range cases {
		fmt.Fprintf(&cs, "\t\tt%d: {prompt: \"p\", assert: [], rubric: []}\n", i)
	}
	arms := `
		none:      {skills: []}
		forced:    {skills: ["new"], activation: "forced"}
		"forced-2": {replicateOf: "forced"}`
	p := policySuite{trials: trials, policy: "policies.advisory & {restraint: enabled: false, routing: enabled: false, retention: enabled: false, forbidden: enabled: false}", arms: arms, cases: cs.String()}.compile(t)
	rng := rand.New(rand.NewPCG(27, 1))
	draw := func(pr float64) string {
		var b strings.Builder
		for range trials {
			if rng.Float64() < pr {
				b.WriteByte('P')
			} else {
				b.WriteByte('F')
			}
		}
		return b.String()
	}
	var errs, rateErrs []float64
	for w := range worlds {
		pNone, pForced := make([]float64, cases), make([]float64, cases)
		uplift := 0.3 * rng.Float64()
		for i := range cases {
			pNone[i] = 0.1 + 0.6*rng.Float64()
			pForced[i] = min(1, pNone[i]+uplift)
		}
		passes := 0
		for range truthRuns {
			d := 0
			for i := range cases {
				for range trials {
					if rng.Float64() < pForced[i] {
						d++
					}
					if rng.Float64() < pNone[i] {
						d--
					}
				}
			}
			if atLeast(float64(d)/float64(cases*trials), 0.10) {
				passes++
			}
		}
		q := float64(passes) / truthRuns
		truth := 2 * q * (1 - q)
		g := grid{}
		trueRate := 0.0
		for i := range cases {
			id := fmt.Sprintf("t%d", i)
			g[id+"/none"], g[id+"/forced"], g[id+"/forced-2"] = draw(pNone[i]), draw(pForced[i]), draw(pForced[i])
			trueRate += 2 * pForced[i] * (1 - pForced[i]) / cases
		}
		nf := BuildReport(p, synth(t, p, g, nil)).Verdict.NoiseFloor
		est := nf.VerdictFlip.Probability
		errs = append(errs, est-truth)
		rateErrs = append(rateErrs, nf.Replicates[0].FlipRate-trueRate)
		t.Logf("world %2d: uplift %.2f, true flip %.3f, estimated %.3f; flip rate true %.3f, measured %.3f", w, uplift, truth, est, trueRate, nf.Replicates[0].FlipRate)
	}
	bias, mae, rmse := errorSummary(errs)
	rbias, rmae, rrmse := errorSummary(rateErrs)
	t.Logf("verdict flip probability: bias %+.3f, mean absolute error %.3f, RMSE %.3f over %d worlds", bias, mae, rmse, worlds)
	t.Logf("replicate flip rate: bias %+.3f, mean absolute error %.3f, RMSE %.3f", rbias, rmae, rrmse)
	// Measured: bias −0.108, mean absolute error 0.134, RMSE 0.161. Most
	// of it is the one observed run's own distance from the truth: a run
	// whose uplift landed far from the threshold by chance looks stable.
	if mae > 0.16 || math.Abs(bias) > 0.14 {
		t.Errorf("verdict flip estimate: bias %+.3f, mean absolute error %.3f", bias, mae)
	}
	if math.Abs(rbias) > 0.05 {
		t.Errorf("flip rate bias %+.3f", rbias)
	}
}

// errorSummary is the mean, mean absolute and root mean square of errors.
func errorSummary(errs []float64) (bias, mae, rmse float64) {
	for _, e := range errs {
		bias += e
		mae += math.Abs(e)
		rmse += e * e
	}
	n := float64(len(errs))
	return bias / n, mae / n, math.Sqrt(rmse / n)
}
