package verdict

import (
	"fmt"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// invalidRun: the share of invalid cells among the cells run.
func (in *policyInput) invalidRun(r *suite.InvalidRun) RuleOutcome {
	o := ruleOutcome("invalidRun", r.RuleBase)
	var c passCounter
	for _, res := range in.cells {
		if res.Status != grade.StatusMissing {
			c.add(res.Status == grade.StatusInvalid)
		}
	}
	if c.n == 0 {
		o.notMeasured("no cell ran")
		return o
	}
	if exceeds(c.share(), r.Max) {
		o.fail("INVALID-RUN")
		o.because(fmt.Sprintf("%d of %d cells are invalid (%s, max %s): Docker, skillgate or the provider failed them, not the agent; run again to retry them.", c.pass, c.n, percent(c.share()), percent(r.Max)),
			in.cellsWhere("", nil, func(res grade.CellResult) bool { return res.Status == grade.StatusInvalid }))
	}
	o.Detail = fmt.Sprintf("%d of %d cells run are invalid (%s, max %s)", c.pass, c.n, percent(c.share()), percent(r.Max))
	return o
}

// metricBetter reports whether candidate is better than baseline on the metric
// (or as good, when orEqual), by the metric's direction.
func metricBetter(metric string, candidate, baseline float64, orEqual bool) bool {
	if d, _ := MetricDirection(metric); d == DirectionLower {
		candidate, baseline = -candidate, -baseline
	}
	if orEqual {
		return atLeast(candidate, baseline)
	}
	return exceeds(candidate, baseline)
}

// pairedMetrics compares listed metrics of two arms: those present in both,
// and those present in one only.
func pairedMetrics(base, cand map[string]Metric, metrics []string) (paired, unpaired []string) {
	for _, m := range metrics {
		_, inB := base[m]
		_, inC := cand[m]
		switch {
		case inB && inC:
			paired = append(paired, m)
		case inB || inC:
			unpaired = append(unpaired, m)
		}
	}
	return paired, unpaired
}

// nonRegression: every listed metric present in both arms does not regress.
func (in *policyInput) nonRegression(r *suite.NonRegression) RuleOutcome {
	o := ruleOutcome("nonRegression", r.RuleBase)
	if in.missing(&o, "NON-REGRESSION", r.Baseline, r.Candidate) {
		return o
	}
	base, cand := in.arms[r.Baseline].Metrics, in.arms[r.Candidate].Metrics
	o.Reasons, o.Detail, o.Met = regressesNone(base, cand, r.Metrics, r.Baseline, r.Candidate)
	return o
}

// regressesNone checks listed metrics: a paired one must not regress, an
// unpaired one fails as METRIC-UNPAIRED, and at least one must be paired.
func regressesNone(base, cand map[string]Metric, metrics []string, baseName, candName string) (reasons []string, detail string, met bool) {
	paired, unpaired := pairedMetrics(base, cand, metrics)
	reasons = []string{}
	var parts []string
	for _, m := range paired {
		b, c := base[m], cand[m]
		if !metricBetter(m, c.Value, b.Value, true) {
			reasons = append(reasons, "NON-REGRESSION "+m)
		}
		parts = append(parts, fmt.Sprintf("%s %.4f → %.4f", m, b.Value, c.Value))
	}
	for _, m := range unpaired {
		reasons = append(reasons, "METRIC-UNPAIRED "+m)
		side := baseName
		if _, ok := cand[m]; ok {
			side = candName
		}
		parts = append(parts, fmt.Sprintf("%s only in %s", m, side))
	}
	if len(paired) == 0 && len(unpaired) == 0 {
		reasons = append(reasons, "NON-REGRESSION no paired metric")
		parts = append(parts, "no listed metric in either arm")
	}
	return reasons, fmt.Sprintf("%s → %s: %s", baseName, candName, joinDetails(parts)), len(reasons) == 0
}

// improvement: at least one listed metric present in both arms improves.
func (in *policyInput) improvement(r *suite.Improvement) RuleOutcome {
	o := ruleOutcome("improvement", r.RuleBase)
	if in.missing(&o, "NO-IMPROVEMENT", r.Baseline, r.Candidate) {
		return o
	}
	base, cand := in.arms[r.Baseline].Metrics, in.arms[r.Candidate].Metrics
	improved, detail := improvesAny(base, cand, r.Metrics, r.AllowEqual)
	if !improved {
		o.fail("NO-IMPROVEMENT")
	}
	o.Detail = fmt.Sprintf("%s → %s: %s", r.Baseline, r.Candidate, detail)
	return o
}

// improvesAny reports whether a listed metric present in both improves
// strictly (or holds, when allowEqual).
func improvesAny(base, cand map[string]Metric, metrics []string, allowEqual bool) (bool, string) {
	paired, _ := pairedMetrics(base, cand, metrics)
	var gains []string
	for _, m := range paired {
		if metricBetter(m, cand[m].Value, base[m].Value, allowEqual) {
			gains = append(gains, m)
		}
	}
	how := "strictly improved"
	if allowEqual {
		how = "improved or equal (allowEqual)"
	}
	if len(gains) == 0 {
		return false, fmt.Sprintf("no paired metric %s (paired: %s)", how, orNoneList(paired))
	}
	return true, how + ": " + strings.Join(gains, ", ")
}

// orNoneList joins names, or says none.
func orNoneList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// runKeys: every case has at least min valid trials in every arm.
func (in *policyInput) runKeys(r *suite.RunKeys) RuleOutcome {
	o := ruleOutcome("runKeys", r.RuleBase)
	var parts []string
	for _, pc := range in.p.Cases {
		for _, a := range in.p.Arms {
			if c := in.panel(pc.ID, a.Name); c.n < r.Min {
				o.fail("RUN-KEYS " + pc.ID)
				o.because(fmt.Sprintf("Case %s has %d valid trials in %s; the gate needs at least %d run keys per case.", pc.ID, c.n, a.Name, r.Min),
					in.cellsWhere(a.Name, ofCase(pc.ID), func(res grade.CellResult) bool { return !res.Valid() }))
				parts = append(parts, fmt.Sprintf("%s: %d valid trials in %s", pc.ID, c.n, a.Name))
				break
			}
		}
	}
	if o.Met {
		o.Detail = fmt.Sprintf("every case has at least %d valid trials in every arm", r.Min)
	} else {
		o.Detail = joinDetails(parts) + fmt.Sprintf(" (min %d)", r.Min)
	}
	return o
}

// skillSize: the candidate's skill bytes within maxRatio of the baseline's
// when both install skills; not comparable otherwise.
func (in *policyInput) skillSize(r *suite.SkillSize) RuleOutcome {
	o := ruleOutcome("skillSize", r.RuleBase)
	var gone []string
	for _, a := range []string{r.Baseline, r.Candidate} {
		if in.planArms[a] == nil {
			gone = append(gone, a)
			o.fail("SKILL-SIZE missing arm " + a)
		}
	}
	if len(gone) > 0 {
		o.Detail = "the plan has no arm " + strings.Join(gone, ", ")
		return o
	}
	base, cand := in.arms[r.Baseline], in.arms[r.Candidate]
	met, flags, detail := sizeWithin(len(base.Skills) > 0, len(cand.Skills) > 0, base.SkillBytes, cand.SkillBytes, r.MaxRatio, r.AllowLonger)
	if !met {
		o.fail("SKILL-SIZE")
	}
	o.Flags, o.Detail = flags, detail
	return o
}

// sizeWithin is SkillOpt's artifact-size check.
func sizeWithin(baseInstalls, candInstalls bool, baseBytes, candBytes int64, maxRatio float64, allowLonger bool) (met bool, flags []string, detail string) {
	if !baseInstalls {
		return true, []string{"sizeComparable=false"}, fmt.Sprintf("the baseline installs no skill: size not comparable (candidate %d bytes)", candBytes)
	}
	if !candInstalls {
		return false, nil, "the candidate installs no skill"
	}
	ratio := float64(candBytes) / float64(baseBytes)
	detail = fmt.Sprintf("candidate %d bytes, baseline %d bytes: %s (max %s)", candBytes, baseBytes, percent(ratio), percent(maxRatio))
	if allowLonger {
		return true, nil, detail + ", allowLonger"
	}
	return atLeast(maxRatio*float64(baseBytes), float64(candBytes)), nil, detail
}
