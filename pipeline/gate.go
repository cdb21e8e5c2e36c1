package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// GateOptions configure the paired candidate gate. Thresholds and the
// pairing conditions come from the caller (from CUE data, the skillopt
// preset): Go has none.
type GateOptions struct {
	// BaselineArm and CandidateArm name the compared arm of each run;
	// empty selects a run's only arm.
	BaselineArm  string
	CandidateArm string
	// Target names the target skill when the candidate arm changes more
	// than one skill; empty finds it.
	Target string
	// Reference, when set, is the one file of the target skill (a path in
	// its tree) the candidate may change: SkillOpt's selected target
	// reference.
	Reference string
	// AllowEqual drops the strict-improvement requirement.
	AllowEqual bool
	// AllowSingleRun drops the run-key minimum to one (smoke and debug only).
	AllowSingleRun bool
	// AllowLonger drops the size bound.
	AllowLonger bool
	// MaxRatio bounds the candidate's target skill bytes over the
	// baseline's when both install the target.
	MaxRatio float64
	// MinRunKeys is the least number of valid trials per case.
	MinRunKeys int
	// Improve lists the metrics whose strict improvement counts.
	Improve []string
	// Pairing switches the conditions two runs must share.
	Pairing Pairing
}

// GateRun is one side of the paired gate: a run's plan and the report
// rebuilt from it and its store (never a report file, which anyone can
// edit).
type GateRun struct {
	Plan   *Plan
	Report *Report
}

// gateRequired are the metrics SkillOpt's gate always requires not to
// regress.
var gateRequired = []string{MetricTaskSuccess, MetricValidUnseen}

// gateSide is one run's compared arm.
type gateSide struct {
	role string
	plan *Plan
	rep  *Report
	arm  *ArmReport
}

// pickArm finds a report's compared arm: the named one, or its only arm.
func pickArm(role string, r *Report, name string) (*ArmReport, error) {
	if name == "" {
		if len(r.Arms) != 1 {
			names := make([]string, len(r.Arms))
			for i, a := range r.Arms {
				names[i] = a.Name
			}
			return nil, fmt.Errorf("the %s run has %d arms (%s): name one", role, len(r.Arms), strings.Join(names, ", "))
		}
		return &r.Arms[0], nil
	}
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i], nil
		}
	}
	return nil, fmt.Errorf("the %s run has no arm %s", role, name)
}

// runKeys lists, per case, the trial numbers of the arm's cells.
func (s gateSide) runKeys() map[string][]int {
	out := map[string][]int{}
	for _, c := range s.rep.Cases {
		var trials []int
		for _, t := range c.Trials[s.arm.Name] {
			trials = append(trials, t.Trial)
		}
		out[c.ID] = trials
	}
	return out
}

// phase is the splits the arm's cells that ran cover, sorted.
func (s gateSide) phase() []string {
	set := map[string]bool{}
	for _, c := range s.rep.Cases {
		for _, t := range c.Trials[s.arm.Name] {
			if t.Status != StatusMissing && t.Status != "" {
				set[c.Split] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// complete: every cell of the arm ran and none is invalid.
func (s gateSide) complete() bool {
	return s.arm.Statuses[StatusInvalid] == 0 && s.arm.Statuses[StatusMissing] == 0
}

// skill is the arm's installed skill of that name.
func (s gateSide) skill(name string) (InstalledSkill, bool) {
	for _, sk := range s.arm.Installed {
		if sk.Name == name {
			return sk, true
		}
	}
	return InstalledSkill{}, false
}

// installs reports whether the arm installs a skill of that name with that
// tree digest.
func (s gateSide) installs(sk InstalledSkill) bool {
	got, ok := s.skill(sk.Name)
	return ok && got.Digest == sk.Digest
}

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

// skillTree is the plan's tree of an installed skill.
func (s gateSide) skillTree(sk InstalledSkill) (Tree, bool) {
	ps, ok := s.plan.Skills[sk.Key]
	return ps.Tree, ok
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
			add("the candidate arm %s installs the baseline arm's %s unchanged (revision %s): no variant to gate", c.arm.Name, target, short(cs.Digest))
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
				add("companion %s only in the baseline (revision %s)", name, short(bs.Digest))
			case !inB:
				add("companion %s only in the candidate (revision %s)", name, short(cs.Digest))
			case bs.Digest != cs.Digest:
				add("companion %s: revision %s and %s", name, short(bs.Digest), short(cs.Digest))
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
		{on.Adapter, "agent configuration", short(ba.Digest), short(ca.Digest)},
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
	return fmt.Sprintf("%s (%s, %s)", s, j.Mode, short(j.Digest))
}

// caseSetPairing compares the case sets: the case-set digest, then each
// case only one run has, then each case whose digest differs, with the
// fields that differ.
func caseSetPairing(b, c gateSide) []string {
	if b.rep.CaseSet == c.rep.CaseSet {
		return nil
	}
	bad := []string{fmt.Sprintf("case-set digest differs: %s and %s", short(b.rep.CaseSet), short(c.rep.CaseSet))}
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
				fields = CaseChanges(*pb, *pc)
			}
			if len(fields) == 0 {
				bad = append(bad, fmt.Sprintf("case %s: digest differs: %s and %s", id, short(x.Digest), short(y.Digest)))
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
	for _, ch := range DiffTrees(bt, ct) {
		if ch.Path != ref {
			outside = append(outside, ch.Path+" "+ch.Change)
		}
	}
	if len(outside) > 0 {
		return []string{fmt.Sprintf("target reference %s: the target %s also differs at %s", ref, target, strings.Join(outside, ", "))}
	}
	return nil
}

// Gate is SkillOpt's paired candidate gate over one arm of a baseline run
// and one of a candidate run, each rebuilt from its plan and store. It
// refuses, with an error naming every difference, two runs that do not
// pair on a condition opts.Pairing switches on. Otherwise the verdict is
// PASS or FAIL: no invalid or missing cell in either; no regression of any
// paired metric, each by its direction (a rate of failures such as
// hallucination or prohibitedOutcome regresses when it rises); at least
// one strict improvement of a metric in opts.Improve unless AllowEqual;
// MinRunKeys valid trials per case unless AllowSingleRun; and the
// candidate's target skill bytes within MaxRatio of the baseline's when
// both install the target (else sizeComparable=false).
func Gate(baseline, candidate GateRun, opts GateOptions) (Verdict, error) {
	if baseline.Report == nil || candidate.Report == nil || baseline.Plan == nil || candidate.Plan == nil {
		return Verdict{}, errors.New("gate: need a baseline and a candidate run, each with its plan and report")
	}
	ba, err := pickArm("baseline", baseline.Report, opts.BaselineArm)
	if err != nil {
		return Verdict{}, fmt.Errorf("gate: %w", err)
	}
	ca, err := pickArm("candidate", candidate.Report, opts.CandidateArm)
	if err != nil {
		return Verdict{}, fmt.Errorf("gate: %w", err)
	}
	minKeys := opts.MinRunKeys
	if opts.AllowSingleRun {
		minKeys = 1
	}
	if minKeys < 1 {
		return Verdict{}, errors.New("gate: no run-key minimum given (MinRunKeys)")
	}
	if !opts.AllowLonger && opts.MaxRatio <= 0 {
		return Verdict{}, errors.New("gate: no size bound given (MaxRatio)")
	}
	b := gateSide{"baseline", baseline.Plan, baseline.Report, ba}
	c := gateSide{"candidate", candidate.Plan, candidate.Report, ca}
	if bad := pairing(b, c, opts); len(bad) > 0 {
		return Verdict{}, fmt.Errorf("gate: the runs do not pair:\n\t%s", strings.Join(bad, "\n\t"))
	}
	fail := RuleBase{Enabled: true, Severity: SeverityFail}
	var rules []RuleOutcome

	o := ruleOutcome("invalidRun", fail)
	var parts []string
	for _, s := range []gateSide{b, c} {
		inv, miss := s.arm.Statuses[StatusInvalid], s.arm.Statuses[StatusMissing]
		if m, ok := s.arm.Metrics[MetricInvalidRun]; inv > 0 || (ok && m.Value > 0) {
			o.fail("INVALID-RUN " + s.role)
		}
		if miss > 0 {
			o.fail(fmt.Sprintf("INCOMPLETE %s %d cells not run", s.role, miss))
		}
		parts = append(parts, fmt.Sprintf("%s %s: %d of %d cells invalid, %d not run", s.role, s.arm.Name, inv, s.arm.Cells, miss))
	}
	o.Detail = joinDetails(parts)
	rules = append(rules, o)

	// Every metric both arms have is protected, the required and the
	// improvable ones first.
	both := len(ba.Installed) > 0 && len(ca.Installed) > 0
	var checked []string
	for _, m := range append(slices.Clone(gateRequired), opts.Improve...) {
		if !slices.Contains(checked, m) {
			checked = append(checked, m)
		}
	}
	var rest []string
	for m := range ba.Metrics {
		if _, ok := ca.Metrics[m]; ok && pairedMetric(m, both) && !slices.Contains(checked, m) {
			rest = append(rest, m)
		}
	}
	protected := append(slices.Clone(checked), slices.Sorted(slices.Values(rest))...)
	o = ruleOutcome("nonRegression", fail)
	o.Reasons, o.Detail, o.Met = gateRegression(ba.Metrics, ca.Metrics, protected)
	rules = append(rules, o)

	o = ruleOutcome("improvement", fail)
	improved, detail := improvesAny(ba.Metrics, ca.Metrics, checked, opts.AllowEqual)
	if !improved {
		o.fail("NO-IMPROVEMENT")
	}
	o.Detail = detail
	rules = append(rules, o)

	o = ruleOutcome("runKeys", fail)
	for _, s := range []gateSide{b, c} {
		for _, cs := range s.rep.Cases {
			n := 0
			for _, t := range cs.Trials[s.arm.Name] {
				if t.Status != StatusInvalid && t.Status != StatusMissing {
					n++
				}
			}
			if n < minKeys {
				o.fail(fmt.Sprintf("RUN-KEYS %s %s", s.role, cs.ID))
			}
		}
	}
	o.Detail = fmt.Sprintf("every case needs at least %d valid run keys in each run", minKeys)
	if opts.AllowSingleRun {
		o.Detail += " (allowSingleRun)"
	}
	rules = append(rules, o)

	o = ruleOutcome("skillSize", fail)
	if target, why := gateTarget(b, c, opts.Target); target == "" {
		o.fail("SKILL-SIZE")
		o.Detail = "no target skill to measure: " + why
	} else {
		baseBytes, baseInstalls := targetBytes(b, target)
		candBytes, candInstalls := targetBytes(c, target)
		met, flags, detail := sizeWithin(baseInstalls, candInstalls, baseBytes, candBytes, opts.MaxRatio, opts.AllowLonger)
		if !met {
			o.fail("SKILL-SIZE")
		}
		o.Flags, o.Detail = flags, "target "+target+": "+detail
	}
	rules = append(rules, o)

	return decideVerdict(nil, rules), nil
}

// targetBytes are the complete file bytes of the arm's target skill tree;
// ok is false when the arm does not install it.
func targetBytes(s gateSide, target string) (int64, bool) {
	sk, ok := s.skill(target)
	if !ok {
		return 0, false
	}
	t, ok := s.skillTree(sk)
	return t.Bytes, ok
}

// gateRegression is the gate's non-regression check over the protected
// metrics both arms have, each by its direction: task success must be in
// one of them; a metric one arm lacks is listed in the detail (pairing
// refuses it between complete arms).
func gateRegression(base, cand map[string]Metric, metrics []string) (reasons []string, detail string, met bool) {
	var paired []string
	for _, m := range metrics {
		_, inB := base[m]
		_, inC := cand[m]
		if inB && inC {
			paired = append(paired, m)
		}
	}
	reasons, detail, _ = regressesNone(base, cand, paired, "baseline", "candidate")
	reasons = slices.DeleteFunc(reasons, func(r string) bool { return r == "NON-REGRESSION no paired metric" })
	_, inB := base[MetricTaskSuccess]
	_, inC := cand[MetricTaskSuccess]
	if !inB && !inC {
		reasons = append(reasons, "NON-REGRESSION missing "+MetricTaskSuccess)
	}
	var absent []string
	for _, m := range metrics {
		if _, ok := base[m]; !ok {
			if _, ok := cand[m]; !ok {
				absent = append(absent, m)
			}
		}
	}
	if len(absent) > 0 {
		detail += "; in neither run: " + strings.Join(absent, ", ")
	}
	return reasons, detail, len(reasons) == 0
}
