package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// pairedMetric says whether the gate compares a metric of two arms: a
// quality metric with a direction; one that applies to skill arms only
// when both install a skill.
func pairedMetric(name string, bothInstall bool) bool {
	if _, ok := MetricDirection(name); !ok {
		return false
	}
	return bothInstall || !skillArmMetrics[name]
}

// gateTarget finds the target skill: the named one, else the candidate's
// only skill, else the one skill the baseline does not install as it is.
// why says why there is none.
func gateTarget(b, c gateSide, named string) (target, why string) {
	if named != "" {
		if _, ok := c.skill(named); !ok {
			return "", fmt.Sprintf("the candidate arm %s does not install the target %s", c.arm.Name, named)
		}
		return named, ""
	}
	if len(c.arm.Installed) == 1 {
		return c.arm.Installed[0].Name, ""
	}
	var changed []string
	for _, sk := range c.arm.Installed {
		if !b.installs(sk) {
			changed = append(changed, sk.Name)
		}
	}
	switch len(changed) {
	case 1:
		return changed[0], ""
	case 0:
		return "", fmt.Sprintf("the candidate arm %s installs the baseline arm's skills unchanged: no target to gate", c.arm.Name)
	default:
		return "", fmt.Sprintf("the candidate arm %s changes %d skills (%s): name the target, the others are companions that must not change", c.arm.Name, len(changed), strings.Join(changed, ", "))
	}
}

// pairing lists every way two runs fail to pair, each difference on its
// own line, for the conditions the pairing switches on. Some always
// apply: the candidate installs a skill, and is not the baseline itself.
func pairing(b, c gateSide, opts GateOptions) []string {
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	on := opts.Pairing
	if b.rep.Plan == c.rep.Plan && b.arm.Name == c.arm.Name {
		add("baseline and candidate are the same arm of the same plan")
	}
	if len(c.arm.Installed) == 0 {
		add("the candidate arm %s installs no skill", c.arm.Name)
	}
	if on.Benchmark && b.rep.Suite != c.rep.Suite {
		add("benchmark differs: suite %q and %q", b.rep.Suite, c.rep.Suite)
	}
	if bp, cp := b.phase(), c.phase(); on.Phase && !slices.Equal(bp, cp) {
		add("phase differs: splits %s and %s", orNoneList(bp), orNoneList(cp))
	}

	target := ""
	if len(c.arm.Installed) > 0 {
		var why string
		target, why = gateTarget(b, c, opts.Target)
		if why != "" && (on.Target || on.Companions) {
			add("%s", why)
		}
		// The candidate is a variant: its target is not the baseline's.
		if cs, ok := c.skill(target); ok && target != "" && b.installs(cs) {
			add("the candidate arm %s installs the baseline arm's %s unchanged (revision %s): no variant to gate", c.arm.Name, target, plan.Short(cs.Digest))
		}
	}
	if on.Target && target != "" && opts.Reference != "" {
		bad = append(bad, referencePairing(b, c, target, opts.Reference)...)
	}
	if on.Companions && (target != "" || len(c.arm.Installed) == 0) {
		names := map[string]bool{}
		for _, s := range []gateSide{b, c} {
			for _, sk := range s.arm.Installed {
				if sk.Name != target {
					names[sk.Name] = true
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			bs, inB := b.skill(name)
			cs, inC := c.skill(name)
			switch {
			case !inC:
				add("companion %s only in the baseline (revision %s)", name, plan.Short(bs.Digest))
			case !inB:
				add("companion %s only in the candidate (revision %s)", name, plan.Short(cs.Digest))
			case bs.Digest != cs.Digest:
				add("companion %s: revision %s and %s", name, plan.Short(bs.Digest), plan.Short(cs.Digest))
			}
		}
	}

	ba, ca := b.rep.Agent, c.rep.Agent
	bo, co := b.arm.Observed, c.arm.Observed
	type field struct {
		on         bool
		name, x, y string
	}
	for _, f := range []field{
		{on.Provider, "agent provider", ba.Provider, ca.Provider},
		{on.Provider, "agent host", ba.Host, ca.Host},
		{on.Model, "agent model", ba.Model, ca.Model},
		{on.Adapter, "agent kind", ba.Kind, ca.Kind},
		{on.Adapter, "agent image", ba.Image, ca.Image},
		{on.Adapter, "agent configuration", plan.Short(ba.Digest), plan.Short(ca.Digest)},
	} {
		if f.on && f.x != f.y {
			add("%s differs: %q and %q", f.name, f.x, f.y)
		}
	}
	for _, f := range []struct {
		on   bool
		name string
		x, y []string
	}{
		{on.Model, "model answered", bo.Models, co.Models},
		{on.Adapter, "agent CLI version (image label)", bo.AgentVersions, co.AgentVersions},
		{on.Adapter, "agent CLI version (transcript)", bo.CLIVersions, co.CLIVersions},
		{on.GitRevision, "git revision", gitRevisions(bo), gitRevisions(co)},
	} {
		if f.on && !slices.Equal(f.x, f.y) {
			add("%s differs: %s and %s", f.name, orNoneList(f.x), orNoneList(f.y))
		}
	}
	if on.Judge {
		switch bj, cj := b.rep.Judge, c.rep.Judge; {
		case bj == nil && cj == nil:
		case bj == nil:
			add("judge differs: only the candidate has one")
		case cj == nil:
			add("judge differs: only the baseline has one")
		case *bj != *cj:
			add("judge differs: %s and %s", judgeName(bj), judgeName(cj))
		}
	}

	if on.CaseSet {
		bad = append(bad, caseSetPairing(b, c)...)
	}
	if on.RunKeys {
		if b.rep.Trials != c.rep.Trials {
			add("trials differ: %d and %d", b.rep.Trials, c.rep.Trials)
		}
		if b.arm.Cells != c.arm.Cells {
			add("run count differs: %d and %d cells", b.arm.Cells, c.arm.Cells)
		}
		bk, ck := b.runKeys(), c.runKeys()
		for _, x := range b.rep.Cases {
			if ks, ok := ck[x.ID]; ok && !slices.Equal(bk[x.ID], ks) {
				add("case %s: run keys differ: trials %v and %v", x.ID, bk[x.ID], ks)
			}
		}
	}
	// Availability and sample counts are compared between complete arms:
	// an invalid or missing cell already fails the gate (invalidRun), and
	// it also moves the samples.
	if on.Metrics && b.complete() && c.complete() {
		both := len(b.arm.Installed) > 0 && len(c.arm.Installed) > 0
		names := map[string]bool{}
		for m := range b.arm.Metrics {
			names[m] = true
		}
		for m := range c.arm.Metrics {
			names[m] = true
		}
		for _, m := range slices.Sorted(maps.Keys(names)) {
			if !pairedMetric(m, both) {
				continue
			}
			bm, inB := b.arm.Metrics[m]
			cm, inC := c.arm.Metrics[m]
			switch {
			case !inC:
				add("metric %s only in the baseline", m)
			case !inB:
				add("metric %s only in the candidate", m)
			case bm.Samples != cm.Samples:
				add("metric %s samples differ: %d and %d", m, bm.Samples, cm.Samples)
			}
		}
	}
	return bad
}

// gitRevisions lists the distinct revisions an arm's rollouts ran at.
func gitRevisions(o ObservedIdentity) []string {
	var out []string
	for _, g := range o.Git {
		if !slices.Contains(out, g.Revision) {
			out = append(out, g.Revision)
		}
	}
	return out
}

func judgeName(j *JudgeIdentity) string {
	s := j.Provider
	if j.Model != "" {
		s += " " + j.Model
	}
	if j.Host != "" {
		s += " at " + j.Host
	}
	return fmt.Sprintf("%s (%s, %s)", s, j.Mode, plan.Short(j.Digest))
}

// caseSetPairing compares the case sets: the case-set digest, then each
// case only one run has, then each case whose digest differs, with the
// fields that differ.
func caseSetPairing(b, c gateSide) []string {
	if b.rep.CaseSet == c.rep.CaseSet {
		return nil
	}
	bad := []string{fmt.Sprintf("case-set digest differs: %s and %s", plan.Short(b.rep.CaseSet), plan.Short(c.rep.CaseSet))}
	bc, cc := map[string]CaseReport{}, map[string]CaseReport{}
	for _, x := range b.rep.Cases {
		bc[x.ID] = x
	}
	for _, x := range c.rep.Cases {
		cc[x.ID] = x
	}
	bp, cp := caseIndex(b.plan), caseIndex(c.plan)
	ids := map[string]bool{}
	for id := range bc {
		ids[id] = true
	}
	for id := range cc {
		ids[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		x, inB := bc[id]
		y, inC := cc[id]
		switch {
		case !inC:
			bad = append(bad, "case "+id+" only in the baseline")
		case !inB:
			bad = append(bad, "case "+id+" only in the candidate")
		case x.Digest != y.Digest:
			var fields []string
			if pb, pc := bp[id], cp[id]; pb != nil && pc != nil {
				fields = plan.CaseChanges(*pb, *pc)
			}
			if len(fields) == 0 {
				bad = append(bad, fmt.Sprintf("case %s: digest differs: %s and %s", id, plan.Short(x.Digest), plan.Short(y.Digest)))
			} else {
				bad = append(bad, fmt.Sprintf("case %s: %s differ", id, strings.Join(fields, ", ")))
			}
		}
	}
	return bad
}

// referencePairing checks SkillOpt's selected target reference: both arms
// install the target, and its trees differ at that one file only.
func referencePairing(b, c gateSide, target, ref string) []string {
	cs, _ := c.skill(target)
	ct, ok := c.skillTree(cs)
	if !ok {
		return []string{fmt.Sprintf("target reference %s: the candidate's plan has no tree of %s", ref, target)}
	}
	if _, ok := ct.Files[ref]; !ok {
		return []string{fmt.Sprintf("target reference %s is not a file of the candidate's %s", ref, target)}
	}
	bs, ok := b.skill(target)
	if !ok {
		return []string{fmt.Sprintf("target reference %s: the baseline arm %s does not install the target %s", ref, b.arm.Name, target)}
	}
	bt, ok := b.skillTree(bs)
	if !ok {
		return []string{fmt.Sprintf("target reference %s: the baseline's plan has no tree of %s", ref, target)}
	}
	var outside []string
	for _, ch := range plan.DiffTrees(bt, ct) {
		if ch.Path != ref {
			outside = append(outside, ch.Path+" "+ch.Change)
		}
	}
	if len(outside) > 0 {
		return []string{fmt.Sprintf("target reference %s: the target %s also differs at %s", ref, target, strings.Join(outside, ", "))}
	}
	return nil
}
