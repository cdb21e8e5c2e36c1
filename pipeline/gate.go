package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// GateOptions configure the paired candidate gate. Thresholds come from
// the caller (from CUE data, such as the skillopt preset): Go has none.
type GateOptions struct {
	// BaselineArm and CandidateArm name the compared arm of each report;
	// empty selects a report's only arm.
	BaselineArm  string
	CandidateArm string
	// AllowEqual drops the strict-improvement requirement.
	AllowEqual bool
	// AllowSingleRun drops the run-key minimum to one (smoke and debug only).
	AllowSingleRun bool
	// AllowLonger drops the size bound.
	AllowLonger bool
	// MaxRatio bounds candidate skill bytes over baseline skill bytes when
	// both install a skill.
	MaxRatio float64
	// MinRunKeys is the least number of valid trials per case.
	MinRunKeys int
	// Protected lists metrics that must not regress when both reports have
	// them (frozen for a release gate, ...).
	Protected []string
}

// gateRequired are the metrics SkillOpt's gate always requires not to
// regress.
var gateRequired = []string{MetricTaskSuccess, MetricValidUnseen}

// gateSide is one report's compared arm.
type gateSide struct {
	role string
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
			return nil, fmt.Errorf("the %s report has %d arms (%s): name one", role, len(r.Arms), strings.Join(names, ", "))
		}
		return &r.Arms[0], nil
	}
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i], nil
		}
	}
	return nil, fmt.Errorf("the %s report has no arm %s", role, name)
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

// pairing lists every way two reports fail to pair: SkillOpt compares only
// runs of one case set, trial matrix, agent and judge.
func pairing(b, c gateSide) []string {
	var bad []string
	bc, cc := map[string]bool{}, map[string]bool{}
	for _, x := range b.rep.Cases {
		bc[x.ID] = true
	}
	for _, x := range c.rep.Cases {
		cc[x.ID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(bc)) {
		if !cc[id] {
			bad = append(bad, "case "+id+" only in the baseline")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(cc)) {
		if !bc[id] {
			bad = append(bad, "case "+id+" only in the candidate")
		}
	}
	if b.rep.Trials != c.rep.Trials {
		bad = append(bad, fmt.Sprintf("trials differ: %d and %d", b.rep.Trials, c.rep.Trials))
	} else {
		bk, ck := b.runKeys(), c.runKeys()
		for _, x := range b.rep.Cases {
			if cc[x.ID] && !slices.Equal(bk[x.ID], ck[x.ID]) {
				bad = append(bad, fmt.Sprintf("case %s: run keys differ: trials %v and %v", x.ID, bk[x.ID], ck[x.ID]))
			}
		}
	}
	ba, ca := b.rep.Agent, c.rep.Agent
	for _, f := range []struct{ name, x, y string }{
		{"kind", ba.Kind, ca.Kind},
		{"image", ba.Image, ca.Image},
		{"model", ba.Model, ca.Model},
		{"provider", ba.Provider, ca.Provider},
		{"digest", string(ba.Digest), string(ca.Digest)},
	} {
		if f.x != f.y {
			bad = append(bad, fmt.Sprintf("agent %s differs: %q and %q", f.name, f.x, f.y))
		}
	}
	switch bj, cj := b.rep.Judge, c.rep.Judge; {
	case bj == nil && cj == nil:
	case bj == nil || cj == nil:
		bad = append(bad, "only one report has a judge")
	case *bj != *cj:
		bad = append(bad, fmt.Sprintf("judge differs: %s/%s/%s %s and %s/%s/%s %s", bj.Provider, bj.Model, bj.Mode, short(bj.Digest), cj.Provider, cj.Model, cj.Mode, short(cj.Digest)))
	}
	if b.rep.Plan == c.rep.Plan && b.arm.Name == c.arm.Name {
		bad = append(bad, "baseline and candidate are the same arm of the same plan")
	}
	if len(c.arm.Skills) == 0 {
		bad = append(bad, "the candidate arm "+c.arm.Name+" installs no skill")
	}
	return bad
}

// Gate is SkillOpt's paired candidate gate over a baseline and a candidate
// report (one arm of each). It refuses, with an error naming every
// mismatch, two reports that do not pair. Otherwise the verdict is PASS or
// FAIL: no invalid or missing cell in either, no regression of task
// success, valid-unseen score or a protected metric, at least one strict
// improvement unless AllowEqual, MinRunKeys valid trials per case unless
// AllowSingleRun, and candidate skill bytes within MaxRatio of the
// baseline's when both install a skill (else sizeComparable=false).
func Gate(baseline, candidate *Report, opts GateOptions) (Verdict, error) {
	if baseline == nil || candidate == nil {
		return Verdict{}, errors.New("gate: need a baseline and a candidate report")
	}
	ba, err := pickArm("baseline", baseline, opts.BaselineArm)
	if err != nil {
		return Verdict{}, fmt.Errorf("gate: %w", err)
	}
	ca, err := pickArm("candidate", candidate, opts.CandidateArm)
	if err != nil {
		return Verdict{}, fmt.Errorf("gate: %w", err)
	}
	b, c := gateSide{"baseline", baseline, ba}, gateSide{"candidate", candidate, ca}
	if bad := pairing(b, c); len(bad) > 0 {
		return Verdict{}, fmt.Errorf("gate: the reports do not pair:\n\t%s", strings.Join(bad, "\n\t"))
	}
	minKeys := opts.MinRunKeys
	if opts.AllowSingleRun {
		minKeys = 1
	}
	if minKeys < 1 {
		return Verdict{}, errors.New("gate: no run-key minimum given (MinRunKeys)")
	}
	if !opts.AllowLonger && opts.MaxRatio <= 0 && len(ba.Skills) > 0 {
		return Verdict{}, errors.New("gate: no size bound given (MaxRatio)")
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

	o = ruleOutcome("nonRegression", fail)
	var checked []string
	for _, m := range append(slices.Clone(gateRequired), opts.Protected...) {
		if !slices.Contains(checked, m) {
			checked = append(checked, m)
		}
	}
	o.Reasons, o.Detail, o.Met = gateRegression(ba.Metrics, ca.Metrics, checked)
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
	o.Detail = fmt.Sprintf("every case needs at least %d valid run keys in each report", minKeys)
	if opts.AllowSingleRun {
		o.Detail += " (allowSingleRun)"
	}
	rules = append(rules, o)

	o = ruleOutcome("skillSize", fail)
	met, flags, detail := sizeWithin(len(ba.Skills) > 0, len(ca.Skills) > 0, ba.SkillBytes, ca.SkillBytes, opts.MaxRatio, opts.AllowLonger)
	if !met {
		o.fail("SKILL-SIZE")
	}
	o.Flags, o.Detail = flags, detail
	rules = append(rules, o)

	return decideVerdict(nil, rules), nil
}

// gateRegression is the gate's non-regression check: task success must be
// in both reports; every other checked metric is compared when both have
// it, unpaired when one has it, and noted when neither does. Paired
// metrics must also have the same sample count.
func gateRegression(base, cand map[string]Metric, metrics []string) (reasons []string, detail string, met bool) {
	reasons, detail, _ = regressesNone(base, cand, metrics, "baseline", "candidate")
	reasons = slices.DeleteFunc(reasons, func(r string) bool { return r == "NON-REGRESSION no paired metric" })
	_, inB := base[MetricTaskSuccess]
	_, inC := cand[MetricTaskSuccess]
	if !inB && !inC {
		reasons = append(reasons, "NON-REGRESSION missing "+MetricTaskSuccess)
	}
	var absent []string
	for _, m := range metrics {
		b, okB := base[m]
		c, okC := cand[m]
		switch {
		case okB && okC && b.Samples != c.Samples:
			reasons = append(reasons, "METRIC-UNPAIRED "+m)
			detail += fmt.Sprintf("; %s samples differ: %d and %d", m, b.Samples, c.Samples)
		case !okB && !okC:
			absent = append(absent, m)
		}
	}
	if len(absent) > 0 {
		detail += "; in neither report: " + strings.Join(absent, ", ")
	}
	return reasons, detail, len(reasons) == 0
}
