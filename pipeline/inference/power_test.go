package inference

import (
	"math"
	"testing"
)

// Connor's formula by hand: ψ = 0.20, δ = 0.10, z_.975 = 1.959964,
// z_.80 = 0.841621: (1.959964·0.447214 + 0.841621·0.435890)² / 0.01
// = (0.876523 + 0.366854)² / 0.01 = 154.6, so 155 pairs.
func TestConnorPairs(t *testing.T) {
	for _, c := range []struct {
		d    Design
		want int
	}{
		{Design{P10: 0.05, P01: 0.15, Alpha: 0.05, Power: 0.8}, 155},
		{Design{P10: 0.15, P01: 0.05, Alpha: 0.05, Power: 0.8}, 155},
		{Design{P10: 0.1, P01: 0.2, Alpha: 0.05, Power: 0.8}, 234}, // 233.09
		{Design{P10: 0.2, P01: 0.3, Alpha: 0.05, Power: 0.8}, 391}, // 390.08
	} {
		got, err := ConnorPairs(c.d)
		if err != nil || got != c.want {
			t.Errorf("ConnorPairs(%+v) = %d, %v; want %d", c.d, got, err, c.want)
		}
	}
	for _, bad := range []Design{
		{P10: 0.1, P01: 0.1, Alpha: 0.05, Power: 0.8},
		{P10: 0.6, P01: 0.6, Alpha: 0.05, Power: 0.8},
		{P10: 0.1, P01: 0.2, Alpha: 0, Power: 0.8},
		{P10: 0.1, P01: 0.2, Alpha: 0.05, Power: 1},
	} {
		if _, err := ConnorPairs(bad); err == nil {
			t.Errorf("ConnorPairs(%+v): no error", bad)
		}
	}
	if z := Z(0.975); math.Abs(z-1.959964) > 1e-6 {
		t.Errorf("Z(0.975) = %v", z)
	}
}

// The exact power summed over the discordant count is the power counted
// over every table of n pairs (n01, n10, concordant), over a grid.
func TestMcNemarPowerIsTheTableSum(t *testing.T) {
	for _, d := range []Design{
		{P10: 0.05, P01: 0.15, Alpha: 0.05}, {P10: 0.1, P01: 0.4, Alpha: 0.05},
		{P10: 0, P01: 0.3, Alpha: 0.1}, {P10: 0.3, P01: 0.2, Alpha: 0.05},
	} {
		for _, n := range []int{1, 5, 8, 12} {
			want := 0.0
			for a := 0; a <= n; a++ {
				for b := 0; a+b <= n; b++ {
					p := math.Exp(lgammaInt(n+1)-lgammaInt(a+1)-lgammaInt(b+1)-lgammaInt(n-a-b+1)) *
						math.Pow(d.P01, float64(a)) * math.Pow(d.P10, float64(b)) * math.Pow(1-d.P01-d.P10, float64(n-a-b))
					if a+b > 0 && McNemarMidP(a, a+b) <= d.Alpha {
						want += p
					}
				}
			}
			if got := McNemarPower(n, d); math.Abs(got-want) > 1e-9 {
				t.Errorf("McNemarPower(%d, %+v) = %v, table sum %v", n, d, got, want)
			}
		}
	}
}

func lgammaInt(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}

func TestExactPairs(t *testing.T) {
	d := Design{P10: 0.05, P01: 0.15, Alpha: 0.05, Power: 0.8}
	n, err := ExactPairs(d)
	if err != nil {
		t.Fatal(err)
	}
	if McNemarPower(n, d) < 0.8 || McNemarPower(n-1, d) >= 0.8 {
		t.Errorf("ExactPairs = %d: power there %v, one fewer %v", n, McNemarPower(n, d), McNemarPower(n-1, d))
	}
	if c, _ := ConnorPairs(d); math.Abs(float64(n-c)) > 0.15*float64(c) {
		t.Errorf("exact %d pairs, Connor %d: more than 15%% apart", n, c)
	}
}

// With one trial the case power is McNemar's; the simulated power agrees
// with it within the simulation's error when trials are fixed at one per
// case but drawn through the simulation path (two trials of half-chance
// would not be the same design, so the check is on monotonicity there).
func TestDetectableAndCasesFor(t *testing.T) {
	// Four cases of one trial: the smallest two-sided mid-p is 1/16, so
	// nothing is detectable at 5%.
	if _, ok := Detectable(4, 1, 0.2, 0.05, 0.8, "s"); ok {
		t.Error("four cases of one trial: detectable, want nothing")
	}
	d1, ok := Detectable(20, 3, 0.3, 0.05, 0.8, "s")
	if !ok {
		t.Fatal("20 cases × 3 trials: nothing detectable")
	}
	d2, _ := Detectable(40, 3, 0.3, 0.05, 0.8, "s")
	if !(d2 < d1) || d1 > 0.6 || d2 < 0.05 {
		t.Errorf("detectable 20 cases %v, 40 cases %v: want smaller with more cases", d1, d2)
	}
	if again, _ := Detectable(20, 3, 0.3, 0.05, 0.8, "s"); again != d1 {
		t.Errorf("same seed: %v then %v", d1, again)
	}
	n, ok := CasesFor(d1, 3, 0.3, 0.05, 0.8, "s", 1000)
	if !ok || n > 20 || n < 10 {
		t.Errorf("CasesFor(%v) = %d, %v; want about 20", d1, n, ok)
	}
	if got := CasePower(20, 3, atDifference(d1, 0.3, 0.05, 0.8), "s"); got < 0.8 {
		t.Errorf("power at the detectable difference %v", got)
	}
}

// With one trial the normal limit is Connor's formula read as power; with
// several it agrees with the simulation where CasePower switches.
func TestNormalCasePower(t *testing.T) {
	d := Design{P10: 0.05, P01: 0.15, Alpha: 0.05, Power: 0.8}
	if a, b := normalCasePower(155, 1, d), normalCasePower(154, 1, d); a < 0.8 || b >= 0.8 {
		t.Errorf("normal power at Connor's 155 pairs %v, at 154 %v", a, b)
	}
	d = atDifference(0.2, 0.3, 0.05, 0.8)
	sim, limit := CasePower(simulatedPowerMaxCases, 3, d, "s"), normalCasePower(simulatedPowerMaxCases, 3, d)
	if math.Abs(sim-limit) > 0.05 {
		t.Errorf("30 cases × 3 trials: simulated power %v, normal limit %v", sim, limit)
	}
}
