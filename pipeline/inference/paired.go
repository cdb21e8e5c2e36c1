package inference

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Pair is one (case, trial) cell of the baseline beside the same cell of
// the candidate: both graded, each passed or not.
type Pair struct {
	Case      string
	Trial     int
	Baseline  bool
	Candidate bool
}

// Result is a paired comparison of a candidate against its baseline, in
// the units of a pass rate (candidate minus baseline).
type Result struct {
	// Estimate is the mean over cases of each case's mean paired
	// difference.
	Estimate float64 `json:"estimate"`
	// CI95 is the 95% interval of the difference.
	CI95 [2]float64 `json:"ci95"`
	// P is the two-sided p-value against no difference.
	P float64 `json:"p"`
	// Method names the test and the interval.
	Method string `json:"method"`
	// Unit is always "case": the independent unit.
	Unit string `json:"unit"`
	// N is the number of cases with at least one paired trial.
	N int `json:"n"`
	// TrialsPerCase is the paired trials of a case (the most of any case
	// when they differ).
	TrialsPerCase int `json:"trialsPerCase"`
}

// Methods, as Result.Method names them.
const (
	MethodMcNemar     = "exact McNemar mid-p on discordant cases; 95% interval: mid-p exact on the discordant share, scaled by the discordant fraction (Newcombe 1998)"
	MethodSignFlip    = "exact sign-flip permutation over cases, mid-p; 95% interval by test inversion over all 2^n sign patterns (Gail et al. 1996)"
	MethodSignFlipMC  = "exact sign-flip permutation over cases, mid-p; 95% interval by test inversion over 20000 sign patterns seeded by the plan digest (Gail et al. 1996)"
	MethodNoPairs     = "no paired cases"
	unitCase          = "case"
	enumerateMaxCases = 16
	monteCarloDraws   = 20000
)

// caseDiff is one case's mean paired difference as a fraction num/den.
type caseDiff struct {
	num, den int
}

func (d caseDiff) value() float64 { return float64(d.num) / float64(d.den) }

// Compare compares the candidate against the baseline over the paired
// cells. With one trial per case the case is a discordant pair or not, and
// the exact McNemar test applies; with several, the case's mean difference
// goes into a sign-flip permutation test over cases, exact up to 2^16 sign
// patterns and beyond that drawn from a generator seeded by seed (the plan
// digest). Two cells of one (case, trial) on one side are an error.
func Compare(pairs []Pair, seed string) (Result, error) {
	diffs, trials, err := caseDiffs(pairs)
	if err != nil {
		return Result{}, err
	}
	if len(diffs) == 0 {
		return Result{Method: MethodNoPairs, Unit: unitCase, CI95: [2]float64{-1, 1}, P: 1}, nil
	}
	var r Result
	if trials == 1 {
		r = mcNemar(diffs)
	} else {
		r = signFlip(diffs, seed)
	}
	r.Unit, r.N, r.TrialsPerCase = unitCase, len(diffs), trials
	r.Estimate = round4(r.Estimate)
	r.CI95 = [2]float64{math.Floor(r.CI95[0]*1e4+1e-9) / 1e4, math.Ceil(r.CI95[1]*1e4-1e-9) / 1e4}
	r.CI95[0], r.CI95[1] = max(r.CI95[0], -1), min(r.CI95[1], 1)
	r.P = roundSig(r.P)
	return r, nil
}

// Extreme is Compare of the most extreme outcome the pairs' cases and
// trials allow: every baseline passed, every candidate failed. At or above
// its p, no outcome of these pairs is significant.
func Extreme(pairs []Pair, seed string) (Result, error) {
	flipped := make([]Pair, len(pairs))
	for i, p := range pairs {
		flipped[i] = Pair{Case: p.Case, Trial: p.Trial, Baseline: true}
	}
	return Compare(flipped, seed)
}

// ShortMethod is a method's name without its interval.
func ShortMethod(m string) string {
	name, _, _ := strings.Cut(m, ";")
	return name
}

// caseDiffs groups the pairs by case, in the order of the case names, and
// says the most paired trials any case has.
func caseDiffs(pairs []Pair) ([]caseDiff, int, error) {
	byCase, err := caseDiffsByName(pairs)
	if err != nil {
		return nil, 0, err
	}
	names := make([]string, 0, len(byCase))
	for name := range byCase {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]caseDiff, 0, len(names))
	trials := 0
	for _, name := range names {
		out = append(out, byCase[name])
		trials = max(trials, byCase[name].den)
	}
	return out, trials, nil
}

// caseDiffsByName is each case's paired difference, by case name. Two
// cells of one (case, trial) on one side are an error.
func caseDiffsByName(pairs []Pair) (map[string]caseDiff, error) {
	seen := map[Pair]bool{}
	byCase := map[string]caseDiff{}
	for _, p := range pairs {
		key := Pair{Case: p.Case, Trial: p.Trial}
		if seen[key] {
			return nil, fmt.Errorf("pair cells: case %s trial %d paired twice", p.Case, p.Trial)
		}
		seen[key] = true
		d := byCase[p.Case]
		d.den++
		d.num += b2i(p.Candidate) - b2i(p.Baseline)
		byCase[p.Case] = d
	}
	return byCase, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// roundSig keeps four significant digits: a p-value's precision beyond
// that is noise of the arithmetic, and would make goldens brittle.
func roundSig(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	e := math.Floor(math.Log10(math.Abs(x)))
	f := math.Pow(10, 3-e)
	return math.Round(x*f) / f
}
