package inference

import "math"

// mcNemar is the one-trial comparison: each case is a pair of single
// outcomes, discordant (won by one side only) or not. Given the m
// discordant cases, the x won by the candidate are Binomial(m, 1/2) under
// no difference; the p-value is its two-sided mid-p, which keeps the exact
// test's validity in practice while not paying its conservatism at small m
// (Lancaster 1961). The interval inverts the same mid-p test for the
// candidate's share π of discordant cases and scales 2π−1 by the
// discordant fraction m/n (Newcombe 1998, the conditional method), so it
// excludes 0 exactly when p < 0.05. With no discordant case the
// difference is bounded by the one-sided 97.5% exact bound of 0 of n.
func mcNemar(diffs []caseDiff) Result {
	n := len(diffs)
	x, m := 0, 0
	for _, d := range diffs {
		if d.num != 0 {
			m++
		}
		if d.num > 0 {
			x++
		}
	}
	r := Result{Method: MethodMcNemar, Estimate: float64(2*x-m) / float64(n)}
	if m == 0 {
		u := 1 - math.Pow(0.025, 1/float64(n))
		r.CI95, r.P = [2]float64{-u, u}, 1
		return r
	}
	r.P = McNemarMidP(x, m)
	lo, hi := midPInterval(x, m, 0.025)
	scale := float64(m) / float64(n)
	r.CI95 = [2]float64{(2*lo - 1) * scale, (2*hi - 1) * scale}
	return r
}

// McNemarMidP is the two-sided mid-p of x candidate wins among m
// discordant pairs: P(|S| > |s|) + P(|S| = |s|)/2 for S = 2X − m,
// X ~ Binomial(m, 1/2).
func McNemarMidP(x, m int) float64 {
	if m == 0 {
		return 1
	}
	s := abs(2*x - m)
	gt, eq := 0.0, 0.0
	for k := 0; k <= m; k++ {
		p := binomPMF(k, m, 0.5)
		switch t := abs(2*k - m); {
		case t > s:
			gt += p
		case t == s:
			eq += p
		}
	}
	return min(1, gt+eq/2)
}

// McNemarExactP is the two-sided exact (not mid-p) McNemar p-value, for
// comparison with published tables.
func McNemarExactP(x, m int) float64 {
	if m == 0 {
		return 1
	}
	s := abs(2*x - m)
	p := 0.0
	for k := 0; k <= m; k++ {
		if abs(2*k-m) >= s {
			p += binomPMF(k, m, 0.5)
		}
	}
	return min(1, p)
}

// midPInterval inverts the one-sided mid-p tests of x of m at level a
// each side.
func midPInterval(x, m int, a float64) (lo, hi float64) {
	lo, hi = 0, 1
	if x > 0 {
		// upper tail mid-p grows with π; find where it reaches a.
		lo = bisect(func(pi float64) float64 { return upperMidP(x, m, pi) - a }, 0, 1)
	}
	if x < m {
		hi = bisect(func(pi float64) float64 { return a - lowerMidP(x, m, pi) }, 0, 1)
	}
	return lo, hi
}

// upperMidP is P(X > x) + P(X = x)/2 at π.
func upperMidP(x, m int, pi float64) float64 {
	s := binomPMF(x, m, pi) / 2
	for k := x + 1; k <= m; k++ {
		s += binomPMF(k, m, pi)
	}
	return s
}

// lowerMidP is P(X < x) + P(X = x)/2 at π.
func lowerMidP(x, m int, pi float64) float64 {
	s := binomPMF(x, m, pi) / 2
	for k := 0; k < x; k++ {
		s += binomPMF(k, m, pi)
	}
	return s
}

// bisect finds the root of an increasing f on [a, b].
func bisect(f func(float64) float64, a, b float64) float64 {
	for range 60 {
		mid := (a + b) / 2
		if f(mid) < 0 {
			a = mid
		} else {
			b = mid
		}
	}
	return (a + b) / 2
}

// binomPMF is P(X = k) for X ~ Binomial(n, p), through log-gamma so it
// holds at a few hundred trials.
func binomPMF(k, n int, p float64) float64 {
	if k < 0 || k > n {
		return 0
	}
	switch {
	case p <= 0:
		if k == 0 {
			return 1
		}
		return 0
	case p >= 1:
		if k == n {
			return 1
		}
		return 0
	}
	return math.Exp(lchoose(n, k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
