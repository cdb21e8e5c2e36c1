package inference

import (
	"fmt"
	"math"
)

// MethodCasePowerFrom names how the power of a plan is read from a
// previous run's cases.
const MethodCasePowerFrom = "power of the case-level sign-flip mid-p test, 2000 simulated plans seeded by the plan digest, each case drawn from the previous run's cases: its chances p10 and p01 and its difference's distance from the run's mean difference, shifted to the difference asked"

// CaseRates are one case's paired trials in a previous run: the shares
// won by the baseline only (P10) and by the candidate only (P01).
type CaseRates struct {
	Case     string  `json:"case"`
	Trials   int     `json:"trials"`
	P10, P01 float64 `json:"-"`
}

// RunRates are a previous run's per-case rates for one comparison, and
// their summary: the mean chances and the within-case correlation of the
// paired differences (the intraclass correlation, one-way analysis of
// variance over cases).
type RunRates struct {
	Cases []CaseRates `json:"-"`
	// N is the number of cases; P10 and P01 the means of their rates.
	N   int     `json:"cases"`
	P10 float64 `json:"p10"`
	P01 float64 `json:"p01"`
	// ICC is the within-case correlation of the trials' paired
	// differences; absent with one trial per case, or when no trial
	// pair disagrees.
	ICC *float64 `json:"icc,omitempty"`
}

// RatesOf groups paired trials by case into a run's rates.
func RatesOf(pairs []Pair) RunRates {
	type acc struct{ n, p10, p01 int }
	by := map[string]*acc{}
	var order []string
	for _, p := range pairs {
		a := by[p.Case]
		if a == nil {
			a = &acc{}
			by[p.Case] = a
			order = append(order, p.Case)
		}
		a.n++
		switch {
		case p.Baseline && !p.Candidate:
			a.p10++
		case p.Candidate && !p.Baseline:
			a.p01++
		}
	}
	var r RunRates
	for _, c := range order {
		a := by[c]
		cr := CaseRates{Case: c, Trials: a.n, P10: float64(a.p10) / float64(a.n), P01: float64(a.p01) / float64(a.n)}
		r.Cases = append(r.Cases, cr)
		r.P10 += cr.P10
		r.P01 += cr.P01
	}
	r.N = len(r.Cases)
	if r.N > 0 {
		r.P10, r.P01 = round4(r.P10/float64(r.N)), round4(r.P01/float64(r.N))
	}
	if icc, ok := intraclass(r.Cases); ok {
		icc = round4(icc)
		r.ICC = &icc
	}
	return r
}

// intraclass is the one-way ANOVA intraclass correlation of the paired
// differences (+1, 0, −1 per trial) over cases: (MSB − MSW)/(MSB + (k − 1)
// MSW), k the mean trials per case. A case's sum of squares within is
// n·(p01 + p10 − d²), d = p01 − p10, from its rates alone.
func intraclass(cs []CaseRates) (float64, bool) {
	n, total := len(cs), 0
	mean := 0.0
	for _, c := range cs {
		total += c.Trials
		mean += float64(c.Trials) * (c.P01 - c.P10)
	}
	if n < 2 || total <= n {
		return 0, false
	}
	mean /= float64(total)
	ssb, ssw := 0.0, 0.0
	for _, c := range cs {
		d := c.P01 - c.P10
		ssb += float64(c.Trials) * (d - mean) * (d - mean)
		ssw += float64(c.Trials) * (c.P01 + c.P10 - d*d)
	}
	msb, msw := ssb/float64(n-1), ssw/float64(total-n)
	k := float64(total) / float64(n)
	if msb+(k-1)*msw <= 0 {
		return 0, false
	}
	return (msb - msw) / (msb + (k-1)*msw), true
}

// String says the rates in one line.
func (r RunRates) String() string {
	noun := "cases"
	if r.N == 1 {
		noun = "case"
	}
	s := fmt.Sprintf("%d %s, mean p10 %.3f, p01 %.3f", r.N, noun, r.P10, r.P01)
	if r.ICC != nil {
		s += fmt.Sprintf(", within-case correlation %.3f", *r.ICC)
	}
	return s
}

// PowerFrom is the power at cases × trials to detect difference delta at
// level alpha, each simulated case drawn from the run's cases: its
// discordance p10 + p01 and its difference's distance from the run's mean
// difference kept, the mean shifted to delta (chances clipped to [0, 1]).
// Cases that differ from each other more than trials of one case do (a
// high within-case correlation) lower the power, as they should.
func (r RunRates) PowerFrom(cases, trials int, delta, alpha float64, seed string) float64 {
	if r.N == 0 || cases < 1 {
		return 0
	}
	mean := r.P01 - r.P10
	shifted := func(c CaseRates) (p01, p10 float64) {
		psi := c.P01 + c.P10
		d := math.Max(-1, math.Min(1, c.P01-c.P10-mean+delta))
		psi = math.Min(1, math.Max(psi, math.Abs(d)))
		return (psi + d) / 2, (psi - d) / 2
	}
	if cases > simulatedPowerMaxCases {
		// The normal limit of the sign-flip test over the mixture of
		// cases, as normalCasePower for one kind of case.
		m1, m2 := 0.0, 0.0
		for _, c := range r.Cases {
			p01, p10 := shifted(c)
			d := p01 - p10
			m1 += d
			m2 += d*d + (p01+p10-d*d)/float64(trials)
		}
		m1, m2 = m1/float64(r.N), m2/float64(r.N)
		sd := math.Sqrt(max(m2-m1*m1, 1e-12))
		x := (math.Sqrt(float64(cases))*math.Abs(m1) - Z(1-alpha/2)*math.Sqrt(m2)) / sd
		return 0.5 * math.Erfc(-x/math.Sqrt2)
	}
	rng := seededRand(seed)
	memo := map[string]float64{}
	hits := 0
	v := make([]int, cases)
	for range powerSims {
		for i := range v {
			p01, p10 := shifted(r.Cases[rng.IntN(r.N)])
			v[i] = 0
			for range trials {
				switch u := rng.Float64(); {
				case u < p01:
					v[i]++
				case u < p01+p10:
					v[i]--
				}
			}
		}
		if latticeP(v, memo) <= alpha {
			hits++
		}
	}
	return float64(hits) / powerSims
}

// DetectableFrom is Detectable read from a run's cases (PowerFrom).
func (r RunRates) DetectableFrom(cases, trials int, alpha, power float64, seed string) (float64, bool) {
	pw := func(x float64) float64 { return r.PowerFrom(cases, trials, x, alpha, seed) }
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

// CasesForFrom is CasesFor read from a run's cases (PowerFrom).
func (r RunRates) CasesForFrom(delta float64, trials int, alpha, power float64, seed string, maxCases int) (int, bool) {
	return fewestCases(func(n int) bool { return r.PowerFrom(n, trials, delta, alpha, seed) >= power }, maxCases)
}
