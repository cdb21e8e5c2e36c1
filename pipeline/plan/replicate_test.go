package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// A replicate installs what its original installs, the same way, under
// rollout keys of its own (its name enters its arm digest), and the keys
// of the other arms do not move when it is added; diff says why a cell's
// key moved when an arm becomes a replicate.
func TestReplicateKeys(t *testing.T) {
	plain := compileRoot(t, suitetest.WriteSuite(t, suitetest.BaseSuite))
	f := suitetest.Edit(t, "suite/suite.cue", `forced: {skills: ["cl"], activation: "forced"}`, `forced: {skills: ["cl"], activation: "forced"}
		"forced-2": {replicateOf: "forced"}`)
	p := compileRoot(t, suitetest.WriteSuite(t, f))
	arm := func(p *Plan, name string) PlanArm {
		i := slices.IndexFunc(p.Arms, func(a PlanArm) bool { return a.Name == name })
		if i < 0 {
			t.Fatalf("no arm %s", name)
		}
		return p.Arms[i]
	}
	orig, rep := arm(p, "forced"), arm(p, "forced-2")
	if !slices.Equal(rep.Skills, orig.Skills) || rep.Activation != orig.Activation || rep.ReplicateOf != "forced" || rep.Digest == orig.Digest {
		t.Errorf("replicate %+v, original %+v", rep, orig)
	}
	rollouts := map[string]bool{}
	for _, c := range p.Cells {
		if rollouts[string(c.Rollout)] {
			t.Errorf("cell %s shares its rollout key", c.ID)
		}
		rollouts[string(c.Rollout)] = true
	}
	for _, c := range plain.Cells {
		if !rollouts[string(c.Rollout)] {
			t.Errorf("cell %s's key moved when a replicate was added", c.ID)
		}
	}
	if s := p.Summary().String(); !strings.Contains(s, "replicate arms (own cells and keys, for the noise floor): forced-2 of forced\n") {
		t.Errorf("summary %q", s)
	}
	// An arm that becomes a replicate of another moves its keys, and diff
	// says why.
	g := suitetest.Edit(t, "suite/suite.cue", `forced: {skills: ["cl"], activation: "forced"}`, `forced: {skills: ["cl"], activation: "forced"}
		"forced-2": {skills: ["cl"], activation: "forced"}`)
	before := compileRoot(t, suitetest.WriteSuite(t, g))
	d := DiffPlans(before, p)
	found := false
	for _, c := range d.Cells {
		if strings.Contains(c.ID, "/forced-2/") {
			found = slices.Contains(c.Reasons, `arm forced-2: replicateOf "" → "forced" (a replicate's name enters its keys)`)
			if !found {
				t.Errorf("cell %s: %s %v", c.ID, c.Class, c.Reasons)
			}
			break
		}
	}
	if !found {
		t.Error("no forced-2 cell in the diff")
	}
}
