package inference

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// signFlip is the several-trial comparison. Under no difference the two
// arms' labels are exchangeable within each (case, trial) pair, so each
// case's mean difference is as likely negative as positive: flipping the
// signs of the cases gives the test's reference distribution without any
// normal approximation, and with the case as the unit. The p-value is the
// two-sided mid-p of the sum; the interval inverts the same test for a
// shift δ (the cases' differences minus δ symmetric about 0), which stays
// exact at a handful of cases where a bootstrap would be too narrow (a
// bootstrap of five cases says little about the cases not drawn). The
// interval is the randomization interval of cluster trials (Gail et al.
// 1996): it assumes the cases' differences move together by δ, so when
// every case moved by the same amount it is narrow; the detectable
// difference (Detectable) does not rest on it.
func signFlip(diffs []caseDiff, seed string) Result {
	d := make([]float64, len(diffs))
	est := 0.0
	for i, c := range diffs {
		d[i] = c.value()
		est += d[i]
	}
	est /= float64(len(d))
	ref := newFlipper(len(d), seed)
	p := func(delta float64) float64 { return ref.midP(d, delta) }
	r := Result{Estimate: est, P: p(0), Method: ref.method()}
	if v, ok := latticeValues(diffs); ok {
		r.P = latticeMidP(v)
	}
	r.CI95 = invert(p, est, 0.05)
	return r
}

// invert finds the 95% interval {δ : p(δ) > a} by bisection either side
// of the estimate, within the range a difference of pass rates can take.
func invert(p func(float64) float64, est, a float64) [2]float64 {
	lo, hi := -1.0, 1.0
	if p(-1) <= a {
		lo = boundary(p, a, -1, est)
	}
	if p(1) <= a {
		hi = boundary(p, a, 1, est)
	}
	return [2]float64{lo, hi}
}

// boundary bisects 40 times between out, where p is at most a, and in,
// where it is above, and returns the last point found at most a.
func boundary(p func(float64) float64, a, out, in float64) float64 {
	for range 40 {
		mid := (out + in) / 2
		if p(mid) <= a {
			out = mid
		} else {
			in = mid
		}
	}
	return out
}

// flipper holds the sign patterns of n cases: all of them (enumerated in
// Gray code order, one flip per step) up to 2^16, else a fixed seeded
// draw of patterns, the identity first so the p-value is never 0.
type flipper struct {
	n     int
	draws [][]bool
	// d, a and b cache sums (which see).
	d, a, b []float64
}

func newFlipper(n int, seed string) *flipper {
	f := &flipper{n: n}
	if n <= enumerateMaxCases {
		return f
	}
	rng := seededRand(seed)
	f.draws = make([][]bool, monteCarloDraws)
	f.draws[0] = make([]bool, n)
	for k := 1; k < monteCarloDraws; k++ {
		pat := make([]bool, n)
		for i := range pat {
			pat[i] = rng.IntN(2) == 1
		}
		f.draws[k] = pat
	}
	return f
}

func (f *flipper) method() string {
	if f.draws == nil {
		return MethodSignFlip
	}
	return MethodSignFlipMC
}

// flipTol absorbs the rounding of sums of fractions, so that sums equal as
// fractions count as ties.
const flipTol = 1e-9

// midP is P(|S*| > |s|) + P(|S*| = |s|)/2 over sign flips of d − δ.
func (f *flipper) midP(d []float64, delta float64) float64 {
	v := make([]float64, len(d))
	s := 0.0
	for i, x := range d {
		v[i] = x - delta
		s += v[i]
	}
	obs := math.Abs(s)
	gt, eq := 0, 0
	count := func(t float64) {
		switch a := math.Abs(t); {
		case a > obs+flipTol:
			gt++
		case a >= obs-flipTol:
			eq++
		}
	}
	total := 0
	if f.draws == nil {
		total = 1 << f.n
		sign := make([]float64, f.n)
		for i := range sign {
			sign[i] = 1
		}
		t := s
		count(t)
		for k := 1; k < total; k++ {
			j := bits.TrailingZeros(uint(k))
			t -= 2 * sign[j] * v[j]
			sign[j] = -sign[j]
			count(t)
		}
	} else {
		a, b := f.sums(d)
		total = len(a)
		for k := range a {
			count(a[k] - delta*b[k])
		}
	}
	return (float64(gt) + float64(eq)/2) / float64(total)
}

// sums gives, for each drawn pattern, Σ±d and Σ±1, so that the sum of
// the flipped d − δ is a − δ·b: one pass over the cases per interval, not
// one per δ tried. The last d's sums are kept for the next call.
func (f *flipper) sums(d []float64) (a, b []float64) {
	if f.a != nil && slices.Equal(f.d, d) {
		return f.a, f.b
	}
	f.d = slices.Clone(d)
	f.a, f.b = make([]float64, len(f.draws)), make([]float64, len(f.draws))
	for k, pat := range f.draws {
		for i, neg := range pat {
			if neg {
				f.a[k] -= d[i]
				f.b[k]--
			} else {
				f.a[k] += d[i]
				f.b[k]++
			}
		}
	}
	return f.a, f.b
}

// seededRand is a generator fixed by a seed string (the plan digest), so
// a resampling gives the same numbers on every machine.
func seededRand(seed string) *rand.Rand {
	h := sha256.Sum256([]byte(seed))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
}
