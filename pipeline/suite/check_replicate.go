package suite

import (
	"cuelang.org/go/cue"
)

// checkReplicates checks every replicate arm: it names another arm of the
// suite, which is not itself a replicate (a noise floor is measured
// against an original), and a policy that requires a noise floor has a
// replicate to measure it on. The schema already makes a replicate
// install what its original does.
func checkReplicates(c *checker, s *Suite) {
	replicates := 0
	for _, name := range sortedKeys(s.Arms) {
		of := s.Arms[name].ReplicateOf
		if of == "" {
			continue
		}
		replicates++
		sel := []cue.Selector{str("arms"), str(name), str("replicateOf")}
		orig, ok := s.Arms[of]
		switch {
		case of == name:
			c.add(sel, "arm %s is a replicate of itself: name the arm it repeats", name)
		case !ok:
			c.add(sel, "arm %s is a replicate of arm %q, which the suite does not define", name, of)
		case orig.ReplicateOf != "":
			c.add(sel, "arm %s is a replicate of arm %s, itself a replicate of %s: name the original, %s", name, of, orig.ReplicateOf, orig.ReplicateOf)
		}
	}
	if nf := s.Policy.NoiseFloor; nf != nil && nf.Enabled && replicates == 0 {
		c.add([]cue.Selector{str("policy"), str("noiseFloor")}, "policy.noiseFloor measures the noise floor on replicate arms, and no arm is one: add an arm with replicateOf naming the arm to repeat")
	}
}
