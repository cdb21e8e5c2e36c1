package inference

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// Known answers: per case, the share of paired trials that differ; the
// run's rate is the mean over cases, not over trials.
func TestFlipRates(t *testing.T) {
	pairs := []Pair{
		{Case: "b", Trial: 1, Baseline: true, Candidate: true},
		{Case: "b", Trial: 2, Baseline: true, Candidate: false},
		{Case: "b", Trial: 3, Baseline: false, Candidate: true},
		{Case: "a", Trial: 1, Baseline: true, Candidate: true},
	}
	cases, rate := FlipRates(pairs)
	want := []CaseFlip{{Case: "a", Pairs: 1, Flips: 0, FlipRate: 0}, {Case: "b", Pairs: 3, Flips: 2, FlipRate: 0.6667}}
	if !reflect.DeepEqual(cases, want) || rate != 0.3333 {
		t.Errorf("FlipRates = %+v, %v; want %+v, 0.3333", cases, rate, want)
	}
	if cases, rate := FlipRates(nil); cases != nil || rate != 0 {
		t.Errorf("FlipRates(nil) = %+v, %v", cases, rate)
	}
}

// Known answers: 125 of 500 worlds flipping is 0.25 with standard error
// √(0.25·0.75/500) = 0.01936…; the same seed gives the same draws.
func TestFlipOf(t *testing.T) {
	f := FlipOf(125, 500, map[string]int{"PASS": 700, "FAIL": 300})
	if f.Probability != 0.25 || f.StdErr != 0.0194 || f.Draws != 500 || f.Method != MethodVerdictFlip {
		t.Errorf("FlipOf = %+v", f)
	}
	if f := FlipOf(0, 500, map[string]int{"PASS": 1000}); f.Probability != 0 || f.StdErr != 0 {
		t.Errorf("one verdict: %+v", f)
	}
	// Two independent runs that each fail a quarter of the time differ
	// 2·0.25·0.75 = 0.375 of the time.
	coin := func(rng *rand.Rand) string {
		if rng.IntN(4) == 0 {
			return "FAIL"
		}
		return "PASS"
	}
	twice := func(rng *rand.Rand) (string, string) { return coin(rng), coin(rng) }
	a, b := VerdictFlip(2000, "sha256:x", twice), VerdictFlip(2000, "sha256:x", twice)
	if !reflect.DeepEqual(a, b) || math.Abs(a.Probability-0.375) > 3*a.StdErr {
		t.Errorf("VerdictFlip %+v, again %+v", a, b)
	}
}
