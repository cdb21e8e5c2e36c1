package pipeline

import (
	"math"
	"slices"
	"strings"
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
// them only when both install one.
var skillArmMetrics = map[string]bool{MetricOpenedSkill: true}

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
func alignResults(p *Plan, results []CellResult) []CellResult {
	byID := make(map[string]CellResult, len(results))
	for _, r := range results {
		id := r.Cell
		if id == "" {
			id = CellID(r.Case, r.Arm, r.Trial)
		}
		byID[id] = r
	}
	out := make([]CellResult, len(p.Cells))
	for i, c := range p.Cells {
		r, ok := byID[c.ID]
		if !ok {
			r = CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: StatusMissing}
		}
		if r.Status == StatusTimeout && p.Policy.TimeoutsIncomplete {
			r.Status, r.Passed = StatusInvalid, false
			r.Error = timeoutIncomplete
		}
		out[i] = r
	}
	return out
}

// timeoutIncomplete is the error of a timed-out cell that the policy counts as incomplete.
const timeoutIncomplete = "timed out: the policy counts a timeout as incomplete, not as a failed trial"

// caseIndex maps case IDs to the plan's cases.
func caseIndex(p *Plan) map[string]*PlanCase {
	m := make(map[string]*PlanCase, len(p.Cases))
	for i := range p.Cases {
		m[p.Cases[i].ID] = &p.Cases[i]
	}
	return m
}

// armSkillNames lists the installed names of an arm's skills.
func armSkillNames(p *Plan, arm PlanArm) []string {
	names := []string{}
	for _, key := range arm.Skills {
		names = append(names, p.Skills[key].Name)
	}
	return names
}

// passAtKRuleK is the k of pass@k metrics: the passAtK rule's, else 1.
func passAtKRuleK(p *Plan) int {
	if r := p.Policy.PassAtK; r != nil && r.K > 0 {
		return r.K
	}
	return 1
}

// buildArmReports computes every arm's report from cells aligned with the
// plan's cells.
func buildArmReports(p *Plan, cells []CellResult) []ArmReport {
	cases := caseIndex(p)
	k := passAtKRuleK(p)
	byArm := map[string][]CellResult{}
	for _, r := range cells {
		byArm[r.Arm] = append(byArm[r.Arm], r)
	}
	arms := make([]ArmReport, 0, len(p.Arms))
	for _, a := range p.Arms {
		rs := byArm[a.Name]
		ar := ArmReport{
			Name:        a.Name,
			Skills:      armSkillNames(p, a),
			Installed:   InstalledSkills(p, a),
			Observed:    emptyObserved(),
			Cells:       len(rs),
			Statuses:    map[string]int{},
			FilesLoaded: map[string]int{},
		}
		if len(a.Skills) > 0 {
			ar.Activation = a.Activation
		}
		for _, key := range a.Skills {
			ar.SkillBytes += p.Skills[key].Bytes
		}
		for _, r := range rs {
			ar.Statuses[r.Status]++
		}
		ar.Metrics = armMetrics(p, cases, len(a.Skills) > 0, rs, k)
		ar.Cost = armCost(rs)
		ar.FilesLoaded, ar.Evidence = armRouting(rs)
		arms = append(arms, ar)
	}
	return arms
}

// armMetrics computes an arm's quality metrics over its cells. Only valid
// cells count, except in invalidRun.
func armMetrics(p *Plan, cases map[string]*PlanCase, installsSkills bool, cells []CellResult, k int) map[string]Metric {
	metrics := map[string]Metric{}
	var (
		task, invalid, noChange, fixture  passCounter
		halluFail, markdown, verification passCounter
		opened                            passCounter
		violated, observed                int // prohibitedOutcome
		skills, refs                      RoutingTally
		valid                             int
		splitScores                       = map[string][]float64{}
		kindScores                        = map[string][]float64{}
	)
	for _, r := range cells {
		if r.Status != StatusMissing {
			invalid.add(r.Status == StatusInvalid)
		}
		if !r.Valid() {
			continue
		}
		pc := cases[r.Case]
		if pc == nil {
			continue
		}
		valid++
		task.add(r.Passed)
		if name, ok := splitMetrics[pc.Split]; ok {
			splitScores[name] = append(splitScores[name], r.Score)
		}
		if name, ok := kindScoreMetrics[pc.Kind]; ok {
			kindScores[name] = append(kindScores[name], r.Score)
		}
		if pc.Kind == kindNoChange {
			noChange.add(r.Passed)
		}
		if pc.Fixture != "" {
			fixture.add(r.Passed)
		}
		if slices.Contains(pc.Tags, tagAntiHallucination) {
			halluFail.add(!r.Passed)
		}
		if slices.Contains(pc.Tags, tagMarkdown) {
			markdown.add(r.Passed)
		}
		if slices.Contains(pc.Tags, tagVerification) {
			verification.add(r.Passed)
		}
		for _, ch := range r.Checks {
			if ch.Negative {
				observed++
				if !ch.Passed {
					violated++
				}
			}
		}
		for _, t := range []RoutingTally{r.Routing.Skills, r.Routing.References} {
			observed += t.Forbidden
			violated += len(t.ForbiddenSeen)
		}
		skills.TP, skills.FP, skills.FN = skills.TP+r.Routing.Skills.TP, skills.FP+r.Routing.Skills.FP, skills.FN+r.Routing.Skills.FN
		refs.TP, refs.FP, refs.FN = refs.TP+r.Routing.References.TP, refs.FP+r.Routing.References.FP, refs.FN+r.Routing.References.FN
		if installsSkills {
			opened.add(r.Telemetry.OpenedSkill)
		}
	}
	task.set(metrics, MetricTaskSuccess)
	invalid.set(metrics, MetricInvalidRun)
	for name, xs := range splitScores {
		if m, ok := meanMetric(xs); ok {
			metrics[name] = m
		}
	}
	for name, xs := range kindScores {
		if m, ok := meanMetric(xs); ok {
			metrics[name] = m
		}
	}
	noChange.set(metrics, MetricNoChange)
	fixture.set(metrics, MetricFixture)
	halluFail.set(metrics, MetricHallucination)
	markdown.set(metrics, MetricMarkdownPreservation)
	verification.set(metrics, MetricVerification)
	if m, ok := rateMetric(violated, observed); ok {
		metrics[MetricProhibitedOutcome] = m
	}
	if valid > 0 {
		metrics[MetricSkillPrecision] = microRate(skills.TP, skills.TP+skills.FP, valid)
		metrics[MetricSkillRecall] = microRate(skills.TP, skills.TP+skills.FN, valid)
		metrics[MetricReferencePrecision] = microRate(refs.TP, refs.TP+refs.FP, valid)
		metrics[MetricReferenceRecall] = microRate(refs.TP, refs.TP+refs.FN, valid)
	}
	opened.set(metrics, MetricOpenedSkill)
	for split, m := range weightedPass(cases, cells, k) {
		metrics[MetricPassAtK+split] = m[0]
		metrics[MetricPassHatK+split] = m[1]
	}
	return metrics
}

// microRate is a micro-averaged routing precision or recall: tp of den,
// and 1 when den is 0 (nothing observed: no false selection; nothing
// expected: nothing missed). Its samples are the cells it covers; its
// standard error and interval are over den and absent when den is 0.
func microRate(tp, den, cells int) Metric {
	if den == 0 {
		return Metric{Value: 1, Samples: cells}
	}
	m, _ := rateMetric(tp, den)
	m.Samples = cells
	return m
}

// weightedPass computes, per split, the weighted pass@k and pass^k of an
// arm's valid cells: Σ weight × estimate(n, c, k) / Σ weight over the
// split's cases that have a valid trial. Samples are the valid cells.
func weightedPass(cases map[string]*PlanCase, cells []CellResult, k int) map[string][2]Metric {
	type tally struct{ n, c int }
	perCase := map[string]*tally{}
	var order []string
	for _, r := range cells {
		if !r.Valid() || cases[r.Case] == nil {
			continue
		}
		t := perCase[r.Case]
		if t == nil {
			t = &tally{}
			perCase[r.Case] = t
			order = append(order, r.Case)
		}
		t.n++
		if r.Passed {
			t.c++
		}
	}
	type sums struct {
		at, hat, w float64
		cells      int
	}
	bySplit := map[string]*sums{}
	for _, id := range order {
		pc, t := cases[id], perCase[id]
		s := bySplit[pc.Split]
		if s == nil {
			s = &sums{}
			bySplit[pc.Split] = s
		}
		s.at += pc.Weight * PassAtKEstimate(t.n, t.c, k)
		s.hat += pc.Weight * PassHatK(t.n, t.c, k)
		s.w += pc.Weight
		s.cells += t.n
	}
	out := map[string][2]Metric{}
	for split, s := range bySplit {
		if s.w <= 0 {
			continue
		}
		out[split] = [2]Metric{{Value: s.at / s.w, Samples: s.cells}, {Value: s.hat / s.w, Samples: s.cells}}
	}
	return out
}

// armCost computes an arm's cost metrics, means over its valid cells;
// optional measurements only over the cells that report them.
func armCost(cells []CellResult) map[string]Metric {
	series := map[string][]float64{}
	put := func(name string, v float64) { series[name] = append(series[name], v) }
	for _, r := range cells {
		if !r.Valid() {
			continue
		}
		c, t := r.Cost, r.Telemetry
		put("agentSeconds", c.AgentSeconds)
		put("totalSeconds", c.TotalSeconds)
		put("changedFiles", float64(c.ChangedFiles))
		put("linesAdded", float64(c.LinesAdded))
		put("linesDeleted", float64(c.LinesDeleted))
		put("answerChars", float64(c.AnswerChars))
		if c.USD != nil {
			put("usd", *c.USD)
		}
		if t.ToolCalls != nil {
			put("toolCalls", float64(*t.ToolCalls))
		}
		if t.Turns != nil {
			put("turns", float64(*t.Turns))
		}
		if j := r.Judge; j != nil {
			put("judgeSeconds", j.Seconds)
			if j.Tokens != nil {
				put("judgeTokensInput", float64(j.Tokens.Input))
				put("judgeTokensOutput", float64(j.Tokens.Output))
			}
		}
		if tk := t.Tokens; tk != nil {
			put("tokensInput", float64(tk.Input))
			put("tokensOutput", float64(tk.Output))
			put("tokensCacheRead", float64(tk.CacheRead))
			put("tokensCacheWrite", float64(tk.CacheWrite))
		}
	}
	cost := map[string]Metric{}
	for name, xs := range series {
		if m, ok := meanMetric(xs); ok {
			cost[name] = m
		}
	}
	return cost
}

// evidenceRank orders evidence levels, strongest first.
var evidenceRank = map[string]int{
	EvidenceObserved:     0,
	EvidenceInferred:     1,
	EvidenceReported:     2,
	EvidenceUnobservable: 3,
}

// armRouting counts the skill files an arm's valid cells loaded (a skill
// as NAME/SKILL.md, a reference as NAME/PATH) and finds the weakest
// routing evidence among them.
func armRouting(cells []CellResult) (files map[string]int, evidence string) {
	files = map[string]int{}
	weakest := -1
	for _, r := range cells {
		if !r.Valid() {
			continue
		}
		for _, e := range r.Telemetry.Skills {
			files[e.Name+"/SKILL.md"]++
		}
		for _, e := range r.Telemetry.References {
			files[e.Name]++
		}
		for _, ev := range []string{r.Routing.Skills.Evidence, r.Routing.References.Evidence} {
			if rank, ok := evidenceRank[ev]; ok && rank > weakest {
				weakest, evidence = rank, ev
			}
		}
	}
	return files, evidence
}

// trialOutcome is a cell's result as the case × arm grid shows it.
func trialOutcome(r CellResult) TrialOutcome {
	var failed []string
	for _, ch := range r.Checks {
		if !ch.Passed {
			failed = append(failed, ch.Name)
		}
	}
	return TrialOutcome{Cell: r.Cell, Trial: r.Trial, Status: r.Status, Passed: r.Passed, Score: r.Score, Rollout: r.Rollout, Failed: failed}
}

// BuildReport builds a run's report from its plan and one result per plan
// cell (status missing for a cell with no rollout), with no pairwise
// judgement. The caller sets StandIn.
func BuildReport(p *Plan, results []CellResult) *Report {
	return BuildJudgedReport(p, results, nil)
}

// BuildJudgedReport is BuildReport with the judge's pairwise judgements,
// which the efficacy and judgeAgreement rules read.
func BuildJudgedReport(p *Plan, results []CellResult, pairwise []PairwiseResult) *Report {
	cells := alignResults(p, results)
	rep := &Report{
		Suite:   p.Suite.Name,
		Plan:    p.Digest,
		Harness: Version(),
		CaseSet: CaseSetDigest(p.Cases),
		Agent: AgentIdentity{
			Kind:     p.Agent.Kind,
			Image:    p.Agent.Image,
			Model:    p.Agent.Model,
			Provider: p.Agent.Provider,
			Host:     upstreamHost(p.Agent.Upstream),
			Digest:   p.Agent.Digest,
		},
		Observed: emptyObserved(),
		Policy:   p.Policy.Name,
		Trials:   p.Suite.Trials,
		Pairwise: pairwise,
	}
	if p.Judge != nil {
		rep.Judge = &JudgeIdentity{Provider: p.Judge.Provider, Model: p.Judge.Model, Host: upstreamHost(p.Judge.Upstream), Mode: p.Judge.Mode, Digest: p.Judge.Digest}
	}
	rep.Arms = buildArmReports(p, cells)
	byCase := map[string]map[string][]TrialOutcome{}
	for _, r := range cells {
		arms := byCase[r.Case]
		if arms == nil {
			arms = map[string][]TrialOutcome{}
			byCase[r.Case] = arms
		}
		arms[r.Arm] = append(arms[r.Arm], trialOutcome(r))
	}
	for _, pc := range p.Cases {
		trials := byCase[pc.ID]
		if trials == nil {
			trials = map[string][]TrialOutcome{}
		}
		rep.Cases = append(rep.Cases, CaseReport{
			ID: pc.ID, Digest: CaseDigest(pc), Description: pc.Description, Kind: pc.Kind, Split: pc.Split,
			Safety: pc.Safety, Weight: pc.Weight, Trials: trials,
		})
	}
	rep.Verdict = EvaluatePolicy(p, cells, rep.Arms, pairwise)
	return rep
}
