package suite

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/skillgate/skillgate/pipeline/inference"
)

// sentinelRefusals simulates runs sentinels of their own cases: each case
// has a pass rate drawn by rate, the stored outcome is drawn at it and the
// fresh one at drift(rate). It returns the share of runs the paired test
// refuses at alpha.
func sentinelRefusals(rng *rand.Rand, runs, sentinels int, alpha float64, rate func(*rand.Rand) float64, drift func(float64) float64) float64 {
	refused := 0
	pairs := make([]inference.Pair, sentinels)
	for range runs {
		for i := range pairs {
			r := rate(rng)
			pairs[i] = inference.Pair{Case: fmt.Sprintf("c%02d", i), Trial: 1, Baseline: rng.Float64() < r, Candidate: rng.Float64() < drift(r)}
		}
		res, err := inference.Compare(pairs, "")
		if err != nil {
			panic(err)
		}
		if res.P < alpha {
			refused++
		}
	}
	return float64(refused) / float64(runs)
}

// TestSentinelSimulation: with nothing drifted (each sentinel's stored and
// fresh outcomes drawn alike at its case's rate) the sentinel test refuses
// a reuse at most at its level; against a provider whose every case now
// fails, it refuses in most runs. The figures it logs are docs/reuse.md's.
// Seeded: the same numbers every run.
func TestSentinelSimulation(t *testing.T) {
	const runs = 20000
	uniform := func(r *rand.Rand) float64 { return r.Float64() }
	half := func(*rand.Rand) float64 { return 0.5 }
	high := func(r *rand.Rand) float64 { return 0.7 + 0.3*r.Float64() }
	same := func(p float64) float64 { return p }
	drop := func(d float64) func(float64) float64 {
		return func(p float64) float64 { return math.Max(0, p-d) }
	}
	none := func(float64) float64 { return 0 }
	for _, n := range []int{6, 10, 20} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		fpU := sentinelRefusals(rng, runs, n, 0.05, uniform, same)
		fpH := sentinelRefusals(rng, runs, n, 0.05, half, same)
		p3 := sentinelRefusals(rng, runs, n, 0.05, high, drop(0.3))
		p5 := sentinelRefusals(rng, runs, n, 0.05, high, drop(0.5))
		p0 := sentinelRefusals(rng, runs, n, 0.05, high, none)
		t.Logf("%2d sentinels, α 0.05: refused with no drift %.4f (rates uniform) %.4f (every rate 0.5); rates in [0.7, 1] falling by 0.3: %.3f, by 0.5: %.3f, to 0: %.3f", n, fpU, fpH, p3, p5, p0)
		// The Monte Carlo error of a share near 0.05 over 20,000 runs is
		// 0.0015: 0.055 is beyond three of them.
		if fpU > 0.055 || fpH > 0.055 {
			t.Errorf("%d sentinels refuse an undrifted reuse in %.4f, %.4f of runs: above the level", n, fpU, fpH)
		}
		if p0 < 0.75 { // 6 sentinels need 5 stored passes: 0.85^6 + 6·0.85^5·0.15 ≈ 0.78
			t.Errorf("%d sentinels refuse a provider whose every case now fails in %.3f of runs", n, p0)
		}
	}
}
