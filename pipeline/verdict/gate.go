package verdict

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
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
	// Required lists the metrics every pair is compared on, whether or not both
	// runs have them.
	Required []string
	// Pairing switches the conditions two runs must share.
	Pairing suite.Pairing
}

// GateRun is one side of the paired gate: a run's plan and the report
// rebuilt from it and its store (never a report file, which anyone can
// edit).
type GateRun struct {
	Plan   *plan.Plan
	Report *Report
}

// gateSide is one run's compared arm.
type gateSide struct {
	role string
	plan *plan.Plan
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
			if t.Status != grade.StatusMissing && t.Status != "" {
				set[c.Split] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// complete: every cell of the arm ran and none is invalid.
func (s gateSide) complete() bool {
	return s.arm.Statuses[grade.StatusInvalid] == 0 && s.arm.Statuses[grade.StatusMissing] == 0
}

// skill is the arm's installed skill of that name.
func (s gateSide) skill(name string) (plan.InstalledSkill, bool) {
	for _, sk := range s.arm.Installed {
		if sk.Name == name {
			return sk, true
		}
	}
	return plan.InstalledSkill{}, false
}

// installs reports whether the arm installs a skill of that name with that
// tree digest.
func (s gateSide) installs(sk plan.InstalledSkill) bool {
	got, ok := s.skill(sk.Name)
	return ok && got.Digest == sk.Digest
}

// skillTree is the plan's tree of an installed skill.
func (s gateSide) skillTree(sk plan.InstalledSkill) (plan.Tree, bool) {
	ps, ok := s.plan.Skills[sk.Key]
	return ps.Tree, ok
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
	fail := suite.RuleBase{Enabled: true, Severity: SeverityFail}
	var rules []RuleOutcome

	o := ruleOutcome("invalidRun", fail)
	var parts []string
	for _, s := range []gateSide{b, c} {
		inv, miss := s.arm.Statuses[grade.StatusInvalid], s.arm.Statuses[grade.StatusMissing]
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
	for _, m := range append(slices.Clone(opts.Required), opts.Improve...) {
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
				if t.Status != grade.StatusInvalid && t.Status != grade.StatusMissing {
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

	attachGateInference(rules, b, c)
	// The candidate suite's significance rule reads the gate's inference
	// as it reads a single run's.
	if r := c.plan.Policy.Significance; r != nil && r.Enabled {
		rules = append(rules, significance(r, rules))
	}
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

// SkillOptGateOptions takes the paired gate's thresholds and pairing
// conditions from the schema's skillopt preset.
func SkillOptGateOptions() (GateOptions, error) {
	p, err := suite.PresetPolicy("skillopt")
	if err != nil {
		return GateOptions{}, err
	}
	if p.SkillSize == nil || p.RunKeys == nil || p.Improvement == nil || p.NonRegression == nil || p.Pairing == nil {
		return GateOptions{}, fmt.Errorf("read skillopt preset: it lacks skillSize, runKeys, improvement, nonRegression or pairing")
	}
	return GateOptions{
		MaxRatio: p.SkillSize.MaxRatio, MinRunKeys: p.RunKeys.Min, Improve: p.Improvement.Metrics,
		Required: p.NonRegression.Required, Pairing: *p.Pairing,
	}, nil
}
