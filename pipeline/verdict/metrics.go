package verdict

import (
	"math"
	"strings"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// Metric names in ArmReport.Metrics, as in SkillOpt's report contract.
const (
	MetricTaskSuccess          = "taskSuccess"
	MetricInvalidRun           = "invalidRun"
	MetricValidUnseen          = "validUnseen"
	MetricFrozen               = "frozen"
	MetricNoChange             = "noChange"
	MetricFixture              = "fixture"
	MetricHallucination        = "hallucination"
	MetricMarkdownPreservation = "markdownPreservation"
	MetricVerification         = "verification"
	MetricProhibitedOutcome    = "prohibitedOutcome"
	MetricSkillPrecision       = "skillPrecision"
	MetricSkillRecall          = "skillRecall"
	MetricReferencePrecision   = "referencePrecision"
	MetricReferenceRecall      = "referenceRecall"
	MetricOpenedSkill          = "openedSkill"
	// MetricRouterDeclared is the share of an arm's valid cells whose
	// routing shows the suite's router skill, in an arm that installs it:
	// how often the router itself was declared (or seen). A diagnostic
	// without a direction, never compared by a gate.
	MetricRouterDeclared = "routerDeclared"
	// MetricPassAtK and MetricPassHatK prefix a split name, as in
	// "passAtK.validation".
	MetricPassAtK  = "passAtK."
	MetricPassHatK = "passHatK."
)

// splitMetrics names the mean-score metric of each split.
var splitMetrics = map[string]string{
	"train":        "train",
	"valid-seen":   "validSeen",
	"valid-unseen": MetricValidUnseen,
	"transfer":     "transfer",
	"adversarial":  "adversarial",
	"test-frozen":  MetricFrozen,
	"validation":   "validation",
}

// kindScoreMetrics names the mean-score metric of a case kind.
var kindScoreMetrics = map[string]string{
	"composition": "composition",
	"safety":      "safety",
	"artifact":    "artifact",
}

// Case kinds and tags that metrics and rules single out.
const (
	kindNoChange         = "no-change"
	tagAntiHallucination = "anti-hallucination"
	tagMarkdown          = "markdown"
	tagVerification      = "verification"
)

// Directions of a quality metric: which way is better.
const (
	DirectionHigher = "higher"
	DirectionLower  = "lower"
)

// metricDirections gives every quality metric its direction, as SkillOpt's
// table does: the rates of failures (invalid runs, hallucinations, violated
// negative expectations) are better lower, every score and pass rate
// higher. A comparison (nonRegression, improvement, the paired gate) reads
// the direction here, so a metric that rises where lower is better
// regresses.
var metricDirections = map[string]string{
	MetricTaskSuccess:          DirectionHigher,
	MetricInvalidRun:           DirectionLower,
	"train":                    DirectionHigher,
	"validSeen":                DirectionHigher,
	MetricValidUnseen:          DirectionHigher,
	"transfer":                 DirectionHigher,
	"adversarial":              DirectionHigher,
	MetricFrozen:               DirectionHigher,
	"validation":               DirectionHigher,
	"composition":              DirectionHigher,
	"safety":                   DirectionHigher,
	"artifact":                 DirectionHigher,
	MetricNoChange:             DirectionHigher,
	MetricFixture:              DirectionHigher,
	MetricHallucination:        DirectionLower,
	MetricMarkdownPreservation: DirectionHigher,
	MetricVerification:         DirectionHigher,
	MetricProhibitedOutcome:    DirectionLower,
	MetricSkillPrecision:       DirectionHigher,
	MetricSkillRecall:          DirectionHigher,
	MetricReferencePrecision:   DirectionHigher,
	MetricReferenceRecall:      DirectionHigher,
	MetricOpenedSkill:          DirectionHigher,
}

// skillArmMetrics apply only to arms that install skills: two arms pair on
// them only when both install one. An arm with no skill routes to none and
// reads no skill's reference, so its skill and reference precision and
// recall are vacuous (1) and its skill never opened: against them a skill
// arm could only "regress".
var skillArmMetrics = map[string]bool{
	MetricOpenedSkill:        true,
	MetricSkillPrecision:     true,
	MetricSkillRecall:        true,
	MetricReferencePrecision: true,
	MetricReferenceRecall:    true,
}

// MetricDirection is the direction of a quality metric (pass@k and pass^k
// of any split are better higher); ok is false for a name that is not a
// quality metric.
func MetricDirection(name string) (direction string, ok bool) {
	if d, ok := metricDirections[name]; ok {
		return d, true
	}
	if strings.HasPrefix(name, MetricPassAtK) || strings.HasPrefix(name, MetricPassHatK) {
		return DirectionHigher, true
	}
	return "", false
}

// z95 is the standard normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the Wilson score 95% interval of successes out of n. With no
// trial it is the whole of [0, 1].
func Wilson(successes, n int) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	p := float64(successes) / float64(n)
	nn := float64(n)
	z2 := z95 * z95
	den := 1 + z2/nn
	center := (p + z2/(2*nn)) / den
	half := z95 * math.Sqrt(p*(1-p)/nn+z2/(4*nn*nn)) / den
	lo, hi = math.Max(0, center-half), math.Min(1, center+half)
	// The bounds are exact at the extremes; keep rounding from moving them.
	if successes <= 0 {
		lo = 0
	}
	if successes >= n {
		hi = 1
	}
	return lo, hi
}

// PassAtKEstimate is the unbiased estimator of pass@k from n trials of which c
// passed: the chance that at least one of k trials drawn without
// replacement passes, 1 − C(n−c, k)/C(n, k). It is computed as a product
// so that no binomial coefficient overflows. When fewer than k trials
// failed, every draw of k holds a pass: it is 1 if any trial passed (and 0
// if none did).
func PassAtKEstimate(n, c, k int) float64 {
	if n <= 0 || k <= 0 || c <= 0 {
		return 0
	}
	if c > n {
		c = n
	}
	if n-c < k {
		return 1
	}
	// C(n−c, k)/C(n, k) = ∏_{i=n−c+1}^{n} (1 − k/i)
	q := 1.0
	for i := n - c + 1; i <= n; i++ {
		q *= 1 - float64(k)/float64(i)
	}
	return 1 - q
}

// PassHatK is pass^k, the chance that all of k trials drawn without
// replacement from n trials with c passes pass: C(c, k)/C(n, k). With
// fewer than k trials nothing can be drawn: it is 1 when every trial
// passed and 0 otherwise, as PassAtKEstimate degenerates.
func PassHatK(n, c, k int) float64 {
	if n <= 0 || k <= 0 || c <= 0 {
		return 0
	}
	if c > n {
		c = n
	}
	if n < k {
		if c == n {
			return 1
		}
		return 0
	}
	if c < k {
		return 0
	}
	// C(c, k)/C(n, k) = ∏_{i=0}^{k−1} (c−i)/(n−i)
	r := 1.0
	for i := 0; i < k; i++ {
		r *= float64(c-i) / float64(n-i)
	}
	return r
}

// rateMetric is the metric of successes out of n, with its standard error and
// Wilson interval; ok is false when n is 0, so the metric is omitted.
func rateMetric(successes, n int) (m Metric, ok bool) {
	if n <= 0 {
		return Metric{}, false
	}
	p := float64(successes) / float64(n)
	se := math.Sqrt(p * (1 - p) / float64(n))
	lo, hi := Wilson(successes, n)
	return Metric{Value: p, Samples: n, StdErr: &se, CI95: &[2]float64{lo, hi}}, true
}

// meanMetric is the metric of a sample's mean with the standard error of the
// mean (from the sample standard deviation; none under two samples); ok
// is false for an empty sample.
func meanMetric(xs []float64) (m Metric, ok bool) {
	if len(xs) == 0 {
		return Metric{}, false
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	n := float64(len(xs))
	mu := sum / n
	m = Metric{Value: mu, Samples: len(xs)}
	if len(xs) >= 2 {
		var ss float64
		for _, x := range xs {
			ss += (x - mu) * (x - mu)
		}
		se := math.Sqrt(ss/(n-1)) / math.Sqrt(n)
		m.StdErr = &se
	}
	return m, true
}

// passCounter accumulates passes out of trials.
type passCounter struct{ pass, n int }

func (c *passCounter) add(passed bool) {
	c.n++
	if passed {
		c.pass++
	}
}

// set puts the passCounter's rate into metrics under name, if it has samples.
func (c passCounter) set(metrics map[string]Metric, name string) {
	if m, ok := rateMetric(c.pass, c.n); ok {
		metrics[name] = m
	}
}

// alignResults returns one CellResult per plan cell, in plan order: the
// given result of each cell, or a missing one where none was given.
//
// A timed-out cell counts as invalid (incomplete) when the policy says so.
func alignResults(p *plan.Plan, results []grade.CellResult) []grade.CellResult {
	byID := make(map[string]grade.CellResult, len(results))
	for _, r := range results {
		id := r.Cell
		if id == "" {
			id = plan.CellID(r.Case, r.Arm, r.Trial)
		}
		byID[id] = r
	}
	out := make([]grade.CellResult, len(p.Cells))
	for i, c := range p.Cells {
		r, ok := byID[c.ID]
		if !ok {
			r = grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusMissing}
		}
		if r.Status == grade.StatusTimeout && p.Policy.TimeoutsIncomplete {
			r.Status, r.Passed = grade.StatusInvalid, false
			r.Error = timeoutIncomplete
		}
		out[i] = r
	}
	return out
}

// timeoutIncomplete is the error of a timed-out cell that the policy counts as incomplete.
const timeoutIncomplete = "timed out: the policy counts a timeout as incomplete, not as a failed trial"

// caseIndex maps case IDs to the plan's cases.
func caseIndex(p *plan.Plan) map[string]*plan.PlanCase {
	m := make(map[string]*plan.PlanCase, len(p.Cases))
	for i := range p.Cases {
		m[p.Cases[i].ID] = &p.Cases[i]
	}
	return m
}

// evidenceRank orders evidence levels, strongest first.
var evidenceRank = map[string]int{
	grade.EvidenceObserved:     0,
	grade.EvidenceInferred:     1,
	grade.EvidenceReported:     2,
	grade.EvidenceUnobservable: 3,
}
