package inference

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Known answers: two agents, two cases, every relabelling listed.
func TestHeterogeneityKnownAnswers(t *testing.T) {
	pairs := func(diffs ...int) []Pair {
		var out []Pair
		for i, d := range diffs {
			out = append(out, Pair{Case: fmt.Sprint("c", i), Trial: 1, Baseline: d < 0, Candidate: d > 0})
		}
		return out
	}
	// Agent A gains on both cases, agent B on neither: of the 4
	// relabellings, 2 are as extreme (the observed and the full swap).
	h, err := TestHeterogeneity([][]Pair{pairs(1, 1), pairs(0, 0)}, "seed")
	if err != nil {
		t.Fatal(err)
	}
	if h.P != 0.5 || h.Statistic != 0.5 || h.N != 2 || h.Groups != 2 || h.Method != MethodStratifiedExact {
		t.Fatalf("got %+v, want p 0.5, statistic 0.5 over 2 cases", h)
	}
	// The same uplift on both: nothing differs, p is 1.
	if h, _ := TestHeterogeneity([][]Pair{pairs(1, 0, -1), pairs(1, 0, -1)}, "seed"); h.P != 1 || h.Statistic != 0 {
		t.Fatalf("identical groups: got %+v, want p 1", h)
	}
	// A case one group lacks is left out.
	if h, _ := TestHeterogeneity([][]Pair{pairs(1, 1, 1), pairs(0, 0)}, "seed"); h.N != 2 {
		t.Fatalf("got n %d, want the 2 cases both groups have", h.N)
	}
	// Eight cases of three agents: 6^8 relabellings, so drawn, the same
	// draws for the same seed.
	a, b, c := pairs(1, 1, 1, 1, 1, 1, 1, 1), pairs(0, 0, 0, 0, 0, 0, 0, 0), pairs(1, 0, 1, 0, 1, 0, 1, 0)
	h1, _ := TestHeterogeneity([][]Pair{a, b, c}, "plan")
	h2, _ := TestHeterogeneity([][]Pair{a, b, c}, "plan")
	if h1 != h2 || h1.Method != MethodStratifiedMC || h1.P > 0.01 {
		t.Fatalf("got %+v and %+v, want equal seeded results with p below 0.01", h1, h2)
	}
}

// TestHeterogeneitySimulation validates the stratified permutation test
// by simulation (seed 28, 1000 replicates of 4 agents × 8 and × 16 cases
// × 3 trials, 500 relabellings each). Cases differ in difficulty (baseline
// pass probability uniform in 0.1-0.6) and agents in their baseline
// (-0.1, 0, +0.05, +0.1). Type-I error: every agent's uplift is +0.30;
// power: three agents' uplift is +0.40 and the fourth's 0.
func TestHeterogeneitySimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	const reps, draws, trials = 1000, 500, 3
	base := []float64{-0.1, 0, 0.05, 0.1}
	rng := rand.New(rand.NewPCG(28, 28))
	rate := func(cases int, uplift []float64) float64 {
		rejected := 0
		for r := range reps {
			d := make([][]float64, cases)
			for i := range d {
				p := 0.1 + 0.5*rng.Float64()
				d[i] = make([]float64, len(base))
				for g := range base {
					pb := clamp01(p + base[g])
					pc := clamp01(pb + uplift[g])
					sum := 0
					for range trials {
						sum += b2i(rng.Float64() < pc) - b2i(rng.Float64() < pb)
					}
					d[i][g] = float64(sum) / trials
				}
			}
			if heterogeneity(d, fmt.Sprint(r), draws).P <= 0.05 {
				rejected++
			}
		}
		return float64(rejected) / reps
	}
	for _, cases := range []int{8, 16} {
		typeI := rate(cases, []float64{0.3, 0.3, 0.3, 0.3})
		power := rate(cases, []float64{0.4, 0.4, 0.4, 0})
		t.Logf("%d cases: type-I error %.3f at alpha 0.05; power %.3f against uplifts 0.4, 0.4, 0.4, 0", cases, typeI, power)
		if typeI > 0.065 {
			t.Errorf("%d cases: type-I error %.3f, want at most 0.05 (+0.015 for 1000 replicates)", cases, typeI)
		}
		if want := map[int]float64{8: 0.45, 16: 0.8}[cases]; power < want {
			t.Errorf("%d cases: power %.3f, want at least %.2f", cases, power, want)
		}
	}
}

func clamp01(x float64) float64 { return min(1, max(0, x)) }
