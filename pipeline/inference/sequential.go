package inference

import (
	"fmt"
	"math"
	"sync"
)

// Sequential decisions, as Sequential.Decide says them.
const (
	SequentialContinue = "continue"
	SequentialEffect   = "effect"
	SequentialFutility = "futility"
)

// MethodSequential names the sequential test.
const MethodSequential = "anytime-valid one-sided mixture likelihood ratio on discordant pairs (uniform prior on the candidate's share in [1/2, 0.9]; Ville's inequality), futility by Wald's acceptance boundary and by reachability within the plan"

// Sequential is an anytime-valid test of the candidate against its
// baseline on the discordant trial pairs, looked at as often as one likes
// (after every round, after every pair) without raising its error above
// Alpha. Under no difference in any case, each discordant pair is won by
// either arm with chance 1/2 whatever came before and whatever the case's
// own pass rate, so the e-value
//
//	E = ∫_{1/2}^{0.9} (2π)^x (2(1−π))^(k−x) dπ / 0.4
//
// of x candidate wins among k discordant pairs is a nonnegative
// martingale with mean 1 (the integral over [1/2, 0.9], the prior
// uniform there), and P(ever E ≥ 1/α) ≤ α (Ville 1939). Its null
// is "no difference in any case": case-stratified by construction, the
// cases' base rates may differ freely. Stopping for futility never
// raises the error rate, so the futility rules are free to choose:
// Wald's acceptance boundary on the likelihood ratio of AltShare
// against 1/2 (off when FutilityBeta is 0), and stopping when the plan's
// remaining pairs could not lift E to 1/α even if the candidate won all.
type Sequential struct {
	Alpha float64
	// AltShare is the candidate's share of discordant pairs at the
	// smallest difference worth finding, above 1/2.
	AltShare float64
	// FutilityBeta is the chance of stopping for futility under AltShare
	// the acceptance boundary allows (about; Wald's bound β/(1−α)).
	FutilityBeta float64
	// maxPairs bounds the discordant pairs, the plan's trial pairs.
	maxPairs int
	// rows[k][x] is ln E for x wins of k discordant pairs, each row made
	// when first asked (in O(k)), so a large plan pays only for the rows
	// its rounds reach.
	mu   sync.Mutex
	rows map[int][]float64
}

// priorMax bounds the prior on the candidate's share of discordant pairs:
// a skill that wins more than 9 of 10 discordant pairs is found anyway,
// and the mass spent beyond it would be taken from the shares that need it.
const priorMax = 0.9

// NewSequential is a sequential test for at most maxPairs trial pairs (the
// plan's cases × maximum trials).
func NewSequential(alpha, altShare, futilityBeta float64, maxPairs int) (*Sequential, error) {
	switch {
	case alpha <= 0 || alpha >= 1:
		return nil, fmt.Errorf("new sequential test: alpha %v must be between 0 and 1", alpha)
	case altShare <= 0.5 || altShare >= 1:
		return nil, fmt.Errorf("new sequential test: the alternative share %v must be above 1/2 and below 1", altShare)
	case futilityBeta < 0 || futilityBeta >= 1:
		return nil, fmt.Errorf("new sequential test: futility beta %v must be in [0, 1)", futilityBeta)
	case maxPairs < 1:
		return nil, fmt.Errorf("new sequential test: %d pairs", maxPairs)
	}
	return &Sequential{Alpha: alpha, AltShare: altShare, FutilityBeta: futilityBeta, maxPairs: maxPairs, rows: map[int][]float64{}}, nil
}

// logE is ln E for x wins of k discordant pairs.
func (s *Sequential) logE(x, k int) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, ok := s.rows[k]
	if !ok {
		row = mixtureRow(k, priorMax)
		s.rows[k] = row
	}
	return row[x]
}

// mixtureRow is mixtureLogE for every x of k, its two distribution
// functions summed once along the row, in the order binomCDF sums them.
func mixtureRow(k int, c float64) []float64 {
	row := make([]float64, k+1)
	ld, _ := math.Lgamma(float64(k + 2))
	half, alt := 0.0, 0.0
	for x := 0; x <= k; x++ {
		half += binomPMF(x, k+1, 0.5)
		alt += binomPMF(x, k+1, c)
		lb, _ := math.Lgamma(float64(x + 1))
		lc, _ := math.Lgamma(float64(k - x + 1))
		mass := min(1, half) - min(1, alt)
		row[x] = float64(k)*math.Ln2 - math.Log(c-0.5) + lb + lc - ld + math.Log(max(mass, 1e-300))
	}
	return row
}

// mixtureLogE is ln E in closed form for the uniform prior on
// [1/2, PriorMax]: ∫ π^x (1−π)^(k−x) dπ over it is B(x+1, k−x+1) times
// P(Binomial(k+1, 1/2) ≤ x) − P(Binomial(k+1, c) ≤ x).
func mixtureLogE(x, k int, c float64) float64 {
	lb, _ := math.Lgamma(float64(x + 1))
	lc, _ := math.Lgamma(float64(k - x + 1))
	ld, _ := math.Lgamma(float64(k + 2))
	mass := binomCDF(x, k+1, 0.5) - binomCDF(x, k+1, c)
	return float64(k)*math.Ln2 - math.Log(c-0.5) + lb + lc - ld + math.Log(max(mass, 1e-300))
}

// binomCDF is P(X ≤ x) for X ~ Binomial(n, p).
func binomCDF(x, n int, p float64) float64 {
	s := 0.0
	for j := 0; j <= x; j++ {
		s += binomPMF(j, n, p)
	}
	return min(1, s)
}

// EValue is E for wins of the candidate and losses among discordant pairs.
func (s *Sequential) EValue(wins, losses int) float64 {
	return math.Exp(s.logE(wins, wins+losses))
}

// Decide says, after wins and losses among the discordant pairs so far
// and with pairsLeft trial pairs the plan could still run, whether to
// stop for effect (E ≥ 1/α), for futility, or go on.
func (s *Sequential) Decide(wins, losses, pairsLeft int) string {
	k := wins + losses
	bound := -math.Log(s.Alpha)
	if s.logE(wins, k) >= bound {
		return SequentialEffect
	}
	// Each further win multiplies the integrand by 2π ≥ 1, so E is
	// highest when the candidate wins every pair left: that one look
	// says whether 1/α can still be reached.
	r := min(pairsLeft, s.maxPairs-k)
	if r <= 0 || s.logE(wins+r, k+r) < bound {
		return SequentialFutility
	}
	if s.FutilityBeta > 0 && k > 0 {
		llr := float64(wins)*math.Log(2*s.AltShare) + float64(losses)*math.Log(2*(1-s.AltShare))
		if llr <= math.Log(s.FutilityBeta/(1-s.Alpha)) {
			return SequentialFutility
		}
	}
	return SequentialContinue
}
