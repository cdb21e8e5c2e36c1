package inference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pairsOf makes paired trials from per-case differences: +1 a trial won
// by the candidate only, −1 by the baseline only, 0 a tie.
func pairsOf(cases map[string][]int) []Pair {
	var out []Pair
	for c, ds := range cases {
		for t, d := range ds {
			out = append(out, Pair{Case: c, Trial: t + 1, Baseline: d < 0, Candidate: d > 0})
		}
	}
	return out
}

// Known answers: cases that differ entirely while trials of one case
// agree correlate 1 within a case; cases that are alike while their
// trials differ, −1 (two trials each: (0 − 0.5)/(0 + 0.5)).
func TestRatesOfIntraclass(t *testing.T) {
	r := RatesOf(pairsOf(map[string][]int{"a": {1, 1}, "b": {0, 0}}))
	if r.N != 2 || r.P01 != 0.5 || r.P10 != 0 || r.ICC == nil || *r.ICC != 1 {
		t.Errorf("entirely between cases: %+v", r)
	}
	r = RatesOf(pairsOf(map[string][]int{"a": {1, 0}, "b": {1, 0}}))
	if r.ICC == nil || *r.ICC != -1 {
		t.Errorf("entirely within cases: %+v", r)
	}
	if r := RatesOf(pairsOf(map[string][]int{"a": {0, 0}, "b": {0, 0}})); r.ICC != nil {
		t.Errorf("no discordant pair: %+v", r)
	}
	// The rates' shortcut is the one-way analysis of variance itself.
	rng := rand.New(rand.NewPCG(3, 4))
	cases := map[string][]int{}
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		for range 5 {
			cases[c] = append(cases[c], rng.IntN(3)-1)
		}
	}
	r = RatesOf(pairsOf(cases))
	if want := anovaICC(cases); r.ICC == nil || math.Abs(*r.ICC-want) > 1e-4 {
		t.Errorf("ICC %v, analysis of variance %v", r.ICC, want)
	}
}

// anovaICC is the one-way intraclass correlation from the trials
// themselves, balanced design.
func anovaICC(cases map[string][]int) float64 {
	n, k := float64(len(cases)), 0.0
	grand, total := 0.0, 0.0
	for _, ds := range cases {
		k = float64(len(ds))
		for _, d := range ds {
			grand += float64(d)
			total++
		}
	}
	grand /= total
	ssb, ssw := 0.0, 0.0
	for _, ds := range cases {
		m := 0.0
		for _, d := range ds {
			m += float64(d)
		}
		m /= k
		ssb += k * (m - grand) * (m - grand)
		for _, d := range ds {
			ssw += (float64(d) - m) * (float64(d) - m)
		}
	}
	msb, msw := ssb/(n-1), ssw/(total-n)
	return (msb - msw) / (msb + (k-1)*msw)
}

// Cases alike read from a run give the power of the stated design with
// their chances (within simulation error); cases that differ from each
// other lower it, and need more cases for the same difference.
func TestPowerFromRun(t *testing.T) {
	var alike []CaseRates
	for range 10 {
		alike = append(alike, CaseRates{Trials: 3, P10: 0.1, P01: 0.3})
	}
	r := RunRates{Cases: alike, N: 10, P10: 0.1, P01: 0.3}
	got := r.PowerFrom(12, 3, 0.2, 0.05, "sha256:a")
	want := CasePower(12, 3, Design{P10: 0.1, P01: 0.3, Alpha: 0.05}, "sha256:a")
	if math.Abs(got-want) > 0.04 {
		t.Errorf("alike cases: power %v, the design's %v", got, want)
	}
	split := RunRates{N: 2, P10: 0, P01: 0.5, Cases: []CaseRates{{Trials: 3, P01: 1}, {Trials: 3}}}
	if p := split.PowerFrom(12, 3, 0.2, 0.05, "sha256:a"); p >= want-0.1 {
		t.Errorf("cases that differ: power %v, not below alike cases' %v", p, want)
	}
	a, okA := r.CasesForFrom(0.2, 3, 0.05, 0.8, "sha256:a", 5000)
	b, okB := split.CasesForFrom(0.2, 3, 0.05, 0.8, "sha256:a", 5000)
	if !okA || !okB || b <= a {
		t.Errorf("cases for 0.2: alike %d (%v), differing %d (%v)", a, okA, b, okB)
	}
	t.Logf("cases for 0.2 at 3 trials: alike cases %d, cases that differ entirely %d", a, b)
}
