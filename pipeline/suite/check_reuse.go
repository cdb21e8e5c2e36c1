package suite

import (
	"fmt"

	"cuelang.org/go/cue"

	"github.com/skillgate/skillgate/pipeline/inference"
)

// The level of a plan made before the schema gave #Reuse;
// TestReuseMatchesTheSchema holds it and DefaultSentinels to the schema.
const priorAlpha = 0.05

// DefaultSentinels is the schema's default count at alpha: the fewest
// sentinels whose test still refuses when one of them agrees by chance.
func DefaultSentinels(alpha float64) int { return SentinelsNeeded(alpha) + 1 }

// ReuseOf is the policy's drift sentinels of run --reuse: its own, or,
// for a plan made before the schema gave them, the schema's defaults.
func ReuseOf(pol Policy) Reuse {
	if pol.Reuse != nil {
		return *pol.Reuse
	}
	alpha := pol.Inference.Alpha
	if alpha == 0 {
		alpha = priorAlpha
	}
	return Reuse{Sentinels: DefaultSentinels(alpha), Alpha: alpha}
}

// SmallestSentinelP is the smallest p the sentinel test can reach with n
// sentinels, each of its own case, every one flipped: the stored outcome
// passed, the sentinel's failed. It names the test too.
func SmallestSentinelP(n int) (float64, string) {
	pairs := make([]inference.Pair, n)
	for i := range pairs {
		pairs[i] = inference.Pair{Case: fmt.Sprintf("c%03d", i), Trial: 1}
	}
	r, _ := inference.Extreme(pairs, "")
	return r.P, inference.ShortMethod(r.Method)
}

// SentinelsNeeded is the fewest sentinels, each of its own case, whose
// test can refuse at alpha.
func SentinelsNeeded(alpha float64) int {
	for n := 1; n < 64; n++ {
		if p, _ := SmallestSentinelP(n); p < alpha {
			return n
		}
	}
	return 64
}

// checkReuse refuses a sentinel count whose test could never refuse a
// reuse at the policy's level, and arms the suite does not define.
func checkReuse(c *checker, s *Suite) {
	r := s.Policy.Reuse
	if r == nil {
		return
	}
	if r.Sentinels > 0 {
		if p, method := SmallestSentinelP(r.Sentinels); p >= r.Alpha {
			c.add([]cue.Selector{str("policy"), str("reuse"), str("sentinels")},
				"%d sentinels can never refuse a reuse at α %g: with every one flipped, each of its own case, the paired test (%s) gives p = %.4g; set at least %d, or 0 to turn the check off",
				r.Sentinels, r.Alpha, method, p, SentinelsNeeded(r.Alpha))
		}
	}
	for i, a := range r.Arms {
		if _, ok := s.Arms[a]; !ok {
			c.add([]cue.Selector{str("policy"), str("reuse"), str("arms"), cue.Index(i)}, "policy.reuse.arms names arm %q, which the suite does not define", a)
		}
	}
}
