package inference

// latticeMidP is the exact two-sided sign-flip mid-p of integer case
// values at any number of cases: the distribution of Σ ±v over all 2^n
// sign patterns, counted by convolution over the sums (O(n² · max|v|))
// rather than by enumeration, with probabilities halved at each case so
// that no count overflows.
func latticeMidP(v []int) float64 {
	total, obs := 0, 0
	for _, x := range v {
		total += abs(x)
		obs += x
	}
	obs = abs(obs)
	if total == 0 {
		return 1
	}
	dist := make([]float64, 2*total+1)
	next := make([]float64, 2*total+1)
	dist[total] = 1
	for _, x := range v {
		x = abs(x)
		clear(next)
		for s, p := range dist {
			if p == 0 {
				continue
			}
			next[s+x] += p / 2
			next[s-x] += p / 2
		}
		dist, next = next, dist
	}
	gt, eq := 0.0, 0.0
	for s, p := range dist {
		switch a := abs(s - total); {
		case a > obs:
			gt += p
		case a == obs:
			eq += p
		}
	}
	return min(1, gt+eq/2)
}

// latticeValues puts the cases' mean differences on a common integer
// lattice (the least common multiple of their trial counts), when that
// stays small; ok is false otherwise.
func latticeValues(diffs []caseDiff) (v []int, ok bool) {
	l := 1
	for _, d := range diffs {
		l = lcm(l, d.den)
		if l > 720 {
			return nil, false
		}
	}
	v = make([]int, len(diffs))
	for i, d := range diffs {
		v[i] = d.num * (l / d.den)
	}
	return v, true
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
