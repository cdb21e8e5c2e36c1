package inference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// table builds one-trial pairs: cases won by the candidate only, by the
// baseline only, and concordant ones.
func table(candOnly, baseOnly, concordant int) []Pair {
	var out []Pair
	add := func(prefix string, n int, b, c bool) {
		for i := range n {
			out = append(out, Pair{Case: fmt.Sprintf("%s%02d", prefix, i), Baseline: b, Candidate: c})
		}
	}
	add("c", candOnly, false, true)
	add("b", baseOnly, true, false)
	add("s", concordant, true, true)
	return out
}

// trialsOf builds pairs of several trials from each case's per-trial
// (baseline, candidate) outcomes written as "bc" digits: "01 01 11".
func trialsOf(cases ...string) []Pair {
	var out []Pair
	for i, c := range cases {
		for t, f := range strings.Fields(c) {
			out = append(out, Pair{Case: fmt.Sprintf("case%02d", i), Trial: t, Baseline: f[0] == '1', Candidate: f[1] == '1'})
		}
	}
	return out
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMcNemarKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		x, m        int
		midP, exact float64
	}{
		// 9 of 10 discordant to the candidate: P(X≥9) = 11/1024.
		{9, 10, 12.0 / 1024, 22.0 / 1024},
		{1, 10, 12.0 / 1024, 22.0 / 1024},
		// 4 of 5: P(|S|>3) = 2/32, P(|S|=3) = 10/32.
		{4, 5, 7.0 / 32, 12.0 / 32},
		{5, 5, 1.0 / 32, 2.0 / 32},
		{0, 0, 1, 1},
		{3, 6, 1 - 20.0/64/2, 1},
	} {
		if got := McNemarMidP(c.x, c.m); !near(got, c.midP, 1e-12) {
			t.Errorf("McNemarMidP(%d, %d) = %.10f, want %.10f", c.x, c.m, got, c.midP)
		}
		if got := McNemarExactP(c.x, c.m); !near(got, c.exact, 1e-12) {
			t.Errorf("McNemarExactP(%d, %d) = %.10f, want %.10f", c.x, c.m, got, c.exact)
		}
	}
}

func TestCompareOneTrial(t *testing.T) {
	r, err := Compare(table(9, 1, 10), "seed")
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != MethodMcNemar || r.Unit != "case" || r.N != 20 || r.TrialsPerCase != 1 {
		t.Fatalf("got %+v", r)
	}
	if r.Estimate != 0.4 || r.P != 0.01172 {
		t.Errorf("estimate %v p %v, want 0.4 and 0.01172 (12/1024)", r.Estimate, r.P)
	}
	// The lower bound's π solves P(X>9) + P(X=9)/2 = 0.025 at m = 10;
	// the difference is (2π−1)·10/20.
	if got := upperMidP(9, 10, (r.CI95[0]/0.5+1)/2); !near(got, 0.025, 2e-4) {
		t.Errorf("lower bound %v: upper mid-p there %v, want 0.025", r.CI95[0], got)
	}
	if r.CI95[0] <= 0 || r.CI95[1] > 0.5 {
		t.Errorf("ci95 %v: want above 0 (p < 0.05) and at most the discordant fraction 0.5", r.CI95)
	}
	// Not significant: 4 of 5 discordant.
	r, _ = Compare(table(4, 1, 0), "seed")
	if !near(r.P, 7.0/32, 1e-4) || r.CI95[0] >= 0 || r.Estimate != 0.6 {
		t.Errorf("4 of 5: got %+v, want p 0.2188 (7/32) and an interval over 0", r)
	}
}

func TestCompareNoDiscordantCase(t *testing.T) {
	r, _ := Compare(table(0, 0, 5), "seed")
	// 1 − 0.025^(1/5) = 0.521824.
	if r.P != 1 || r.Estimate != 0 || r.CI95 != [2]float64{-0.5219, 0.5219} {
		t.Errorf("got %+v, want p 1, estimate 0, ci95 ±0.5219", r)
	}
}

func TestCompareSeveralTrials(t *testing.T) {
	// Differences 1/3, 2/3, 1: of 8 sign patterns 2 reach |S| = 2.
	r, err := Compare(trialsOf("01 11 00", "01 01 10", "01 01 01"), "seed")
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != MethodSignFlip || r.N != 3 || r.TrialsPerCase != 3 {
		t.Fatalf("got %+v", r)
	}
	// The case "01 01 10" is +1/3, so the differences are 1/3, 1/3, 1.
	// |S| = 5/3 is reached by 2 of 8 patterns and exceeded by none.
	if r.Estimate != 0.5556 || r.P != 0.125 {
		t.Errorf("estimate %v p %v, want 0.5556 and 0.125", r.Estimate, r.P)
	}
	// Three cases cannot reject anything at 5%: the smallest mid-p is 1/8.
	if r.CI95 != [2]float64{-1, 1} {
		t.Errorf("ci95 %v, want [-1, 1]", r.CI95)
	}
	// Six cases, five +1/3 and one −1/3: S = 2K−6, mid-p = (2 + 12/2)/64.
	r, _ = Compare(trialsOf("01 00 00", "01 00 00", "01 11 00", "00 01 11", "11 00 01", "10 00 00"), "seed")
	if r.P != 0.125 || r.Estimate != 0.2222 {
		t.Errorf("six cases: got %+v, want p 0.125, estimate 0.2222", r)
	}
}

// The interval is where the test stops rejecting: just outside either
// bound the test rejects at 5%, just inside it does not.
func TestSignFlipIntervalInvertsTheTest(t *testing.T) {
	d := []float64{1, 2.0 / 3, 1.0 / 3, 1, 2.0 / 3, 0, 1.0 / 3, 1, 2.0 / 3, 1.0 / 3}
	diffs := make([]caseDiff, len(d))
	for i, x := range d {
		diffs[i] = caseDiff{num: int(math.Round(x * 3)), den: 3}
	}
	r := signFlip(diffs, "seed")
	f := newFlipper(len(d), "seed")
	for _, c := range []struct {
		delta  float64
		reject bool
	}{
		{r.CI95[0] - 1e-3, true}, {r.CI95[0] + 1e-3, false},
		{r.CI95[1] - 1e-3, false}, {r.CI95[1] + 1e-3, true},
	} {
		if got := f.midP(d, c.delta) <= 0.05; got != c.reject {
			t.Errorf("δ %v: rejects %v, want %v (ci95 %v)", c.delta, got, c.reject, r.CI95)
		}
	}
	if r.CI95[0] <= 0 || r.P >= 0.05 {
		t.Errorf("nine of ten cases up: ci95 %v p %v, want above 0 and p < 0.05", r.CI95, r.P)
	}
}

// The lattice convolution is the enumeration, counted another way; with
// one trial it is McNemar's mid-p.
func TestLatticeIsEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 1 + rng.IntN(12)
		v := make([]int, n)
		d := make([]float64, n)
		for i := range v {
			v[i] = rng.IntN(7) - 3
			d[i] = float64(v[i]) / 3
		}
		if a, b := latticeMidP(v), newFlipper(n, "").midP(d, 0); !near(a, b, 1e-12) {
			t.Fatalf("%v: lattice %v, enumeration %v", v, a, b)
		}
	}
	for x := range 8 {
		v := make([]int, 7)
		for i := range v {
			v[i] = -1
			if i < x {
				v[i] = 1
			}
		}
		if a, b := latticeMidP(v), McNemarMidP(x, 7); !near(a, b, 1e-12) {
			t.Errorf("x=%d of 7: lattice %v, McNemar %v", x, a, b)
		}
	}
}

// Beyond 2^16 sign patterns the interval comes from seeded draws: the
// same seed gives the same bytes, and the p-value stays exact.
func TestCompareSeeded(t *testing.T) {
	var cases []string
	for i := range 24 {
		switch i % 4 {
		case 0:
			cases = append(cases, "01 11 00")
		case 1:
			cases = append(cases, "00 11 10")
		case 2:
			cases = append(cases, "01 01 00")
		default:
			cases = append(cases, "11 00 00")
		}
	}
	a, _ := Compare(trialsOf(cases...), "sha256:plan")
	b, _ := Compare(trialsOf(cases...), "sha256:plan")
	if !reflect.DeepEqual(a, b) || a.Method != MethodSignFlipMC {
		t.Fatalf("same seed: %+v and %+v", a, b)
	}
	c, _ := Compare(trialsOf(cases...), "sha256:other")
	if c.P != a.P {
		t.Errorf("p %v and %v: the lattice p-value does not depend on the seed", a.P, c.P)
	}
	if a.CI95[0] >= a.Estimate || a.CI95[1] <= a.Estimate {
		t.Errorf("ci95 %v does not hold the estimate %v", a.CI95, a.Estimate)
	}
}

func TestCompareRejectsTwoCellsOfOneTrial(t *testing.T) {
	p := trialsOf("01 01")
	p = append(p, p[0])
	if _, err := Compare(p, ""); err == nil || !strings.Contains(err.Error(), "paired twice") {
		t.Errorf("err %v, want paired twice", err)
	}
	if r, err := Compare(nil, ""); err != nil || r.N != 0 || r.P != 1 {
		t.Errorf("no pairs: %+v %v", r, err)
	}
}
