package inference

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// PowerMethods name how Pairs and the case power are computed.
const (
	MethodConnor      = "Connor (1987) sample size for paired binary data (McNemar, normal approximation)"
	MethodExactPower  = "exact power of the McNemar mid-p test, summed over the discordant count"
	MethodCasePowerMC = "power of the case-level sign-flip mid-p test, 2000 simulated plans seeded by %q, trials independent within a case"
	powerSims         = 2000
)

// Z is the standard normal quantile at probability p.
func Z(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// Design is a paired design's assumptions: the chance that a pair is won
// by the baseline only (P10) and by the candidate only (P01), and the test's
// two-sided Alpha and the Power wanted.
type Design struct {
	P10, P01, Alpha, Power float64
}

// Check says what is wrong with a design's numbers.
func (d Design) Check() error {
	switch {
	case d.P10 < 0 || d.P01 < 0 || d.P10+d.P01 > 1:
		return fmt.Errorf("check design: p10 %v and p01 %v must be chances that sum to at most 1", d.P10, d.P01)
	case d.P01 == d.P10:
		return fmt.Errorf("check design: p01 equals p10 (%v): no difference to detect", d.P01)
	case d.Alpha <= 0 || d.Alpha >= 1:
		return fmt.Errorf("check design: alpha %v must be between 0 and 1", d.Alpha)
	case d.Power <= 0 || d.Power >= 1:
		return fmt.Errorf("check design: power %v must be between 0 and 1", d.Power)
	}
	return nil
}

// ConnorPairs is the number of independent pairs Connor's formula needs:
// n = (z_{1−α/2}·√ψ + z_{power}·√(ψ − δ²))² / δ², ψ = p10 + p01 the
// discordance, δ = p01 − p10 the difference, rounded up.
func ConnorPairs(d Design) (int, error) {
	if err := d.Check(); err != nil {
		return 0, err
	}
	psi, delta := d.P10+d.P01, d.P01-d.P10
	n := math.Pow(Z(1-d.Alpha/2)*math.Sqrt(psi)+Z(d.Power)*math.Sqrt(psi-delta*delta), 2) / (delta * delta)
	// Rounding noise of the quantiles must not add a pair.
	return int(math.Ceil(n - 1e-9)), nil
}

// McNemarPower is the exact power at n pairs of the two-sided McNemar
// mid-p test at level alpha: the discordant count m is Binomial(n, ψ) and
// the candidate's wins among them Binomial(m, p01/ψ).
func McNemarPower(n int, d Design) float64 {
	psi := d.P10 + d.P01
	share := d.P01 / psi
	power := 0.0
	for m := 1; m <= n; m++ {
		pm := binomPMF(m, n, psi)
		if pm < 1e-15 {
			continue
		}
		x := mcNemarCritical(m, d.Alpha)
		if x > m {
			continue
		}
		// Reject at x or more candidate wins, or m−x or fewer.
		reject := 0.0
		for k := 0; k <= m; k++ {
			if k >= x || k <= m-x {
				reject += binomPMF(k, m, share)
			}
		}
		power += pm * reject
	}
	return power
}

// mcNemarCritical is the fewest candidate wins x ≥ m/2 of m discordant
// pairs that the two-sided mid-p test rejects at alpha (m+1 when none):
// the mid-p falls as x moves away from m/2, so the test rejects exactly
// x or more wins, or m−x or fewer.
func mcNemarCritical(m int, alpha float64) int {
	key := criticalKey{m, alpha}
	if x, ok := criticals.Load(key); ok {
		return x.(int)
	}
	x := m + 1
	for k := m; 2*k >= m; k-- {
		if McNemarMidP(k, m) > alpha {
			break
		}
		x = k
	}
	criticals.Store(key, x)
	return x
}

// criticals caches mcNemarCritical: power searches ask for the same
// discordant counts at every n.
var criticals sync.Map

type criticalKey struct {
	m     int
	alpha float64
}

// ExactPairs is the fewest pairs at which the McNemar mid-p test reaches
// the design's power, searched upward from half Connor's number (the exact
// power is not monotone in n, so the first n that reaches it is given).
func ExactPairs(d Design) (int, error) {
	c, err := ConnorPairs(d)
	if err != nil {
		return 0, err
	}
	for n := max(1, c/2); n <= 4*c+50; n++ {
		if McNemarPower(n, d) >= d.Power {
			return n, nil
		}
	}
	return 0, fmt.Errorf("find exact pairs: no n up to %d reaches power %v", 4*c+50, d.Power)
}

// CasePower is the power of the comparison Compare makes at cases × trials
// under the design's per-trial chances: exact for one trial (McNemar) up
// to exactPowerMaxCases, else simulated with a fixed seed up to
// simulatedPowerMaxCases, each case's difference the mean of independent
// trials, and beyond that the normal limit of the sign-flip test, which
// holds at that many cases (Lehmann and Romano 2005, §15.2). Trials of
// one case that agree more than independent ones (a case the skill always
// or never helps) lower the power: read it as an upper bound.
func CasePower(cases, trials int, d Design, seed string) float64 {
	switch {
	case trials <= 1 && cases <= exactPowerMaxCases:
		return McNemarPower(cases, d)
	case trials <= 1 || cases > simulatedPowerMaxCases:
		return normalCasePower(cases, max(trials, 1), d)
	}
	rng := seededRand(seed)
	memo := map[string]float64{}
	hits := 0
	v := make([]int, cases)
	for range powerSims {
		for i := range v {
			v[i] = 0
			for range trials {
				switch u := rng.Float64(); {
				case u < d.P01:
					v[i]++
				case u < d.P01+d.P10:
					v[i]--
				}
			}
		}
		if latticeP(v, memo) <= d.Alpha {
			hits++
		}
	}
	return float64(hits) / powerSims
}

// Where CasePower leaves exact counting and simulation for the normal
// limit: past them their cost grows with the square of the cases while
// the limit's error falls below the simulation's own.
const (
	exactPowerMaxCases     = 200
	simulatedPowerMaxCases = 30
)

// normalCasePower is the large-sample power of the sign-flip test: it
// rejects when Σd > z·√(Σd²), and with n cases of mean δ, variance
// (ψ − δ²)/T and second moment E d² the power is
// Φ((√n·δ − z·√(E d²)) / sd d). With one trial it is Connor's.
func normalCasePower(cases, trials int, d Design) float64 {
	psi, delta := d.P10+d.P01, math.Abs(d.P01-d.P10)
	v := (psi - delta*delta) / float64(trials)
	if v <= 0 {
		return 1
	}
	z := Z(1 - d.Alpha/2)
	x := (math.Sqrt(float64(cases))*delta - z*math.Sqrt(v+delta*delta)) / math.Sqrt(v)
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// latticeP memoizes latticeMidP by the multiset of values, which is all
// the test sees.
func latticeP(v []int, memo map[string]float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	var b strings.Builder
	for _, x := range s {
		b.WriteString(strconv.Itoa(x))
		b.WriteByte(',')
	}
	k := b.String()
	if p, ok := memo[k]; ok {
		return p
	}
	p := latticeMidP(s)
	memo[k] = p
	return p
}

// atDifference is a design of difference δ at discordance ψ, the
// discordance raised to δ when it is smaller (the case most favourable to
// detection: the baseline never wins a pair).
func atDifference(delta, psi, alpha, power float64) Design {
	psi = min(1, max(psi, delta))
	return Design{P10: (psi - delta) / 2, P01: (psi + delta) / 2, Alpha: alpha, Power: power}
}

// Detectable is the smallest difference cases × trials detect with the
// wanted power at level alpha, at discordance psi (the chance that a
// trial pair disagrees); ok is false when not even a difference of 1 is.
// The search is on a 0.005 grid refined by bisection, with the same seed
// at every difference so the answer is stable.
func Detectable(cases, trials int, psi, alpha, power float64, seed string) (delta float64, ok bool) {
	pw := func(x float64) float64 { return CasePower(cases, trials, atDifference(x, psi, alpha, power), seed) }
	if cases < 1 || pw(1) < power {
		return 0, false
	}
	lo, hi := 0.0, 1.0
	for hi-lo > 0.005 {
		mid := (lo + hi) / 2
		if pw(mid) >= power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Ceil(hi*1000) / 1000, true
}

// CasesFor is the fewest cases that detect difference delta at this many
// trials per case with the wanted power; ok is false beyond maxCases.
func CasesFor(delta float64, trials int, psi, alpha, power float64, seed string, maxCases int) (n int, ok bool) {
	d := atDifference(delta, psi, alpha, power)
	return fewestCases(func(n int) bool { return CasePower(n, trials, d, seed) >= power }, maxCases)
}

// fewestCases is the fewest cases, from 2 to maxCases, for which reaches
// holds (it must hold for every count above one it holds for): doubling
// until it holds, then bisecting; ok is false when maxCases does not.
func fewestCases(reaches func(n int) bool, maxCases int) (n int, ok bool) {
	hi := 2
	for !reaches(hi) {
		if hi >= maxCases {
			return 0, false
		}
		hi = min(2*hi, maxCases)
	}
	lo := hi / 2
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if reaches(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// PairsPower is the answer to the textbook paired question: the
// independent pairs a design needs.
type PairsPower struct {
	P10    float64 `json:"p10"`
	P01    float64 `json:"p01"`
	Uplift float64 `json:"uplift"`
	Alpha  float64 `json:"alpha"`
	Power  float64 `json:"power"`
	// Pairs is Connor's number; ExactPairs the exact McNemar mid-p
	// test's, the test the verdict makes on one trial per case.
	Pairs       int    `json:"pairs"`
	Method      string `json:"method"`
	ExactPairs  int    `json:"exactPairs"`
	ExactMethod string `json:"exactMethod"`
}

// PairsFor answers the paired question for a design.
func PairsFor(d Design) (PairsPower, error) {
	d.P01, d.P10 = roundFlag(d.P01), roundFlag(d.P10)
	n, err := ConnorPairs(d)
	if err != nil {
		return PairsPower{}, err
	}
	x, err := ExactPairs(d)
	if err != nil {
		return PairsPower{}, err
	}
	return PairsPower{P10: d.P10, P01: d.P01, Uplift: roundFlag(d.P01 - d.P10), Alpha: d.Alpha, Power: d.Power,
		Pairs: n, Method: MethodConnor, ExactPairs: x, ExactMethod: MethodExactPower}, nil
}

// Text says the answer in two lines.
func (pp PairsPower) Text() string {
	return fmt.Sprintf("%d pairs detect p01 − p10 = %g (p10 %g, p01 %g) at α %g with %g%% power: %s\n%d pairs for the exact McNemar mid-p test the verdict makes\n",
		pp.Pairs, pp.Uplift, pp.P10, pp.P01, pp.Alpha, 100*pp.Power, MethodConnor, pp.ExactPairs)
}

// Near says two chances given on a command line are the same number up
// to the rounding of their sum.
func Near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// roundFlag drops the binary rounding of a sum of decimal flags (0.05 +
// 0.10 is 0.15000000000000002), which would otherwise show in JSON.
func roundFlag(x float64) float64 { return math.Round(x*1e12) / 1e12 }
