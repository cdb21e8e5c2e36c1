package inference

import (
	"math"
	"math/rand/v2"
	"slices"
)

// MethodVerdictFlip names how VerdictFlip estimates the chance that two
// identical runs reach different verdicts.
const MethodVerdictFlip = "nested resampling: a world gives each case × arm a pass chance drawn from its Jeffreys posterior Beta(passes + ½, fails + ½) (a replicate's trials pooled with its original's), two runs are drawn from that world trial by trial and each decided by the policy; the share of worlds whose two runs differ, seeded by the plan digest"

// FlipDraws is how many resampled worlds VerdictFlip decides: its Monte
// Carlo standard error is at most 0.023 at that many.
const FlipDraws = 500

// CaseFlip is how often a replicate's trials of one case differ from the
// original's same trials.
type CaseFlip struct {
	Case string `json:"case"`
	// Pairs are the trials valid in both arms; Flips those whose outcome
	// differs.
	Pairs    int     `json:"pairs"`
	Flips    int     `json:"flips"`
	FlipRate float64 `json:"flipRate"`
}

// FlipRates counts, per case in the order of the case names, the paired
// trials of an arm (Baseline) and its replicate (Candidate) whose outcome
// differs; rate is the mean over cases of each case's flip share, the case
// being the unit.
func FlipRates(pairs []Pair) (cases []CaseFlip, rate float64) {
	byCase := map[string]*CaseFlip{}
	for _, p := range pairs {
		c := byCase[p.Case]
		if c == nil {
			c = &CaseFlip{Case: p.Case}
			byCase[p.Case] = c
		}
		c.Pairs++
		if p.Baseline != p.Candidate {
			c.Flips++
		}
	}
	for _, c := range byCase {
		c.FlipRate = round4(float64(c.Flips) / float64(c.Pairs))
		cases = append(cases, *c)
	}
	slices.SortFunc(cases, func(a, b CaseFlip) int {
		if a.Case < b.Case {
			return -1
		}
		if a.Case > b.Case {
			return 1
		}
		return 0
	})
	sum := 0.0
	for _, c := range cases {
		sum += float64(c.Flips) / float64(c.Pairs)
	}
	if len(cases) > 0 {
		rate = round4(sum / float64(len(cases)))
	}
	return cases, rate
}

// Flip is the estimated chance that two identical runs reach different
// verdicts.
type Flip struct {
	// Probability is the share of resampled worlds whose two runs reached
	// different verdicts.
	Probability float64 `json:"probability"`
	// StdErr is its Monte Carlo standard error; it does not include the
	// error of estimating each case's chances from its trials, which the
	// simulation in the tests measures.
	StdErr float64 `json:"stderr"`
	// Draws is the number of resampled worlds, Verdicts how many of their
	// runs (two a world) reached each verdict.
	Draws    int            `json:"draws"`
	Verdicts map[string]int `json:"verdicts"`
	Method   string         `json:"method"`
}

// VerdictFlip draws worlds from a generator seeded by seed (the plan
// digest); twice decides two runs of one resampled world, and the share of
// worlds whose two verdicts differ is the flip probability.
func VerdictFlip(draws int, seed string, twice func(rng *rand.Rand) (string, string)) Flip {
	rng := seededRand("verdict flip " + seed)
	counts := map[string]int{}
	flips := 0
	for range draws {
		a, b := twice(rng)
		counts[a]++
		counts[b]++
		if a != b {
			flips++
		}
	}
	return FlipOf(flips, draws, counts)
}

// FlipOf is the flip probability of flips among draws worlds, with the
// verdicts' counts.
func FlipOf(flips, draws int, counts map[string]int) Flip {
	f := Flip{Draws: draws, Verdicts: counts, Method: MethodVerdictFlip}
	if draws == 0 {
		return f
	}
	p := float64(flips) / float64(draws)
	f.Probability = round4(p)
	f.StdErr = round4(math.Sqrt(p * (1 - p) / float64(draws)))
	return f
}
