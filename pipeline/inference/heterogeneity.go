package inference

import (
	"fmt"
	"slices"
)

// Heterogeneity is a test of whether a paired difference (an uplift)
// differs between groups measured on the same cases, such as the agents a
// suite runs on: under the null hypothesis the group a case's difference
// was measured in does not matter.
type Heterogeneity struct {
	// Statistic is the between-group sum of squares of the groups' mean
	// case differences: Σ_g (d̄_g − d̄)², over the cases every group has.
	Statistic float64 `json:"statistic"`
	// P is the permutation p-value: the share of relabellings whose
	// statistic is at least the observed one.
	P float64 `json:"p"`
	// Method names the test.
	Method string `json:"method"`
	// Unit is always "case".
	Unit string `json:"unit"`
	// N is the number of cases paired in every group; Groups the groups.
	N      int `json:"n"`
	Groups int `json:"groups"`
}

// Methods of a heterogeneity test, as Heterogeneity.Method names them.
const (
	MethodStratifiedExact = "stratified permutation test over cases (the case a stratum; each case's mean paired differences relabelled among the groups), all relabellings; statistic: between-group sum of squares of mean case differences"
	MethodStratifiedMC    = "stratified permutation test over cases (the case a stratum; each case's mean paired differences relabelled among the groups), 10000 relabellings seeded by the plan digest; statistic: between-group sum of squares of mean case differences"
	MethodTooManyGroups   = "not tested: more than 8 groups"
	heterogeneityDraws    = 10000
	maxGroups             = 8
)

// TestHeterogeneity tests whether the paired difference differs between
// the groups (each group's baseline and candidate cells paired on case
// and trial, as Compare takes them). Only cases paired in every group
// count. It is exact when every relabelling can be listed (at most 10000),
// else seeded from seed.
func TestHeterogeneity(groups [][]Pair, seed string) (Heterogeneity, error) {
	d, err := groupCaseDiffs(groups)
	if err != nil {
		return Heterogeneity{}, err
	}
	return heterogeneity(d, seed, heterogeneityDraws), nil
}

// groupCaseDiffs is, for each case paired in every group, its mean paired
// difference in each group: d[case][group].
func groupCaseDiffs(groups [][]Pair) ([][]float64, error) {
	per := make([]map[string]caseDiff, len(groups))
	for g, pairs := range groups {
		var err error
		if per[g], err = caseDiffsByName(pairs); err != nil {
			return nil, fmt.Errorf("group %d: %w", g, err)
		}
	}
	if len(per) == 0 {
		return nil, nil
	}
	var cases []string
	for c := range per[0] {
		if !slices.ContainsFunc(per[1:], func(m map[string]caseDiff) bool { _, ok := m[c]; return !ok }) {
			cases = append(cases, c)
		}
	}
	slices.Sort(cases)
	out := make([][]float64, len(cases))
	for i, c := range cases {
		out[i] = make([]float64, len(groups))
		for g := range groups {
			out[i][g] = per[g][c].value()
		}
	}
	return out, nil
}

// heterogeneity tests the case × group differences d by relabelling the
// groups within each case: every relabelling when there are at most draws
// of them, else draws seeded ones (the observed one counted among them).
func heterogeneity(d [][]float64, seed string, draws int) Heterogeneity {
	h := Heterogeneity{Unit: unitCase, N: len(d), P: 1, Method: MethodStratifiedExact}
	if len(d) > 0 {
		h.Groups = len(d[0])
	}
	if h.N == 0 || h.Groups < 2 {
		return h
	}
	if h.Groups > maxGroups {
		h.Method = MethodTooManyGroups
		return h
	}
	h.Statistic = round4(betweenSS(d))
	obs := betweenSS(d) - 1e-12
	perms := permutations(h.Groups)
	total := 1.0
	for range d {
		total *= float64(len(perms))
	}
	k := h.Groups
	work := make([][]float64, len(d))
	for i := range work {
		work[i] = make([]float64, k)
	}
	apply := func(choice []int) float64 {
		for i, row := range d {
			for g, from := range perms[choice[i]] {
				work[i][g] = row[from]
			}
		}
		return betweenSS(work)
	}
	choice := make([]int, len(d))
	if total <= float64(draws) {
		// Every relabelling, in mixed radix over the cases.
		hits, n := 0, 0
		for {
			if apply(choice) >= obs {
				hits++
			}
			n++
			i := 0
			for ; i < len(choice); i++ {
				if choice[i]++; choice[i] < len(perms) {
					break
				}
				choice[i] = 0
			}
			if i == len(choice) {
				break
			}
		}
		h.P = round4(float64(hits) / float64(n))
		return h
	}
	h.Method = MethodStratifiedMC
	rng := seededRand(seed)
	hits := 1 // the observed labelling
	for range draws {
		for i := range choice {
			choice[i] = rng.IntN(len(perms))
		}
		if apply(choice) >= obs {
			hits++
		}
	}
	h.P = round4(float64(hits) / float64(draws+1))
	return h
}

// betweenSS is Σ_g (d̄_g − d̄)² of a case × group table.
func betweenSS(d [][]float64) float64 {
	k := len(d[0])
	means := make([]float64, k)
	grand := 0.0
	for _, row := range d {
		for g, v := range row {
			means[g] += v
			grand += v
		}
	}
	n := float64(len(d))
	grand /= n * float64(k)
	ss := 0.0
	for _, m := range means {
		ss += (m/n - grand) * (m/n - grand)
	}
	return ss
}

// permutations lists every ordering of 0..k-1 (k at most maxGroups).
func permutations(k int) [][]int {
	var out [][]int
	var rec func(cur []int, used uint)
	rec = func(cur []int, used uint) {
		if len(cur) == k {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := 0; i < k; i++ {
			if used&(1<<i) == 0 {
				rec(append(cur, i), used|1<<i)
			}
		}
	}
	rec(nil, 0)
	return out
}
