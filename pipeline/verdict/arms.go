package verdict

import (
	"slices"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// armSkillNames lists the installed names of an arm's skills (every
// skill it installs in any case).
func armSkillNames(p *plan.Plan, arm plan.PlanArm) []string {
	names := []string{}
	for _, key := range plan.ArmSkills(p, arm) {
		names = append(names, p.Skills[key].Name)
	}
	return names
}

// passAtKRuleK is the k of pass@k metrics: the passAtK rule's, else 1.
func passAtKRuleK(p *plan.Plan) int {
	if r := p.Policy.PassAtK; r != nil && r.K > 0 {
		return r.K
	}
	return 1
}

// buildArmReports computes every arm's report from cells aligned with the
// plan's cells.
func buildArmReports(p *plan.Plan, cells []grade.CellResult) []ArmReport {
	cases := caseIndex(p)
	k := passAtKRuleK(p)
	byArm := map[string][]grade.CellResult{}
	for _, r := range cells {
		byArm[r.Arm] = append(byArm[r.Arm], r)
	}
	arms := make([]ArmReport, 0, len(p.Arms))
	for _, a := range p.Arms {
		rs := byArm[a.Name]
		skills := plan.ArmSkills(p, a)
		ar := ArmReport{
			Name:        a.Name,
			Skills:      armSkillNames(p, a),
			Installed:   plan.InstalledSkills(p, plan.PlanArm{Arm: suite.Arm{Skills: skills}}),
			Observed:    emptyObserved(),
			Cells:       len(rs),
			Statuses:    map[string]int{},
			FilesLoaded: map[string]int{},
		}
		if len(skills) > 0 {
			ar.Activation = a.Activation
		}
		for _, key := range skills {
			ar.SkillBytes += p.Skills[key].Bytes
		}
		for _, r := range rs {
			ar.Statuses[r.Status]++
		}
		ar.Metrics = armMetrics(p, cases, len(skills) > 0, rs, k)
		if p.Suite.Router != "" && slices.Contains(skills, p.Suite.Router) {
			var declared passCounter
			for _, r := range rs {
				if r.Valid() && cases[r.Case] != nil {
					declared.add(r.Routing.Skills.Router)
				}
			}
			declared.set(ar.Metrics, MetricRouterDeclared)
		}
		ar.Cost = armCost(rs)
		ar.FilesLoaded, ar.Evidence = armRouting(rs)
		arms = append(arms, ar)
	}
	return arms
}

// armMetrics computes an arm's quality metrics over its cells. Only valid
// cells count, except in invalidRun.
func armMetrics(p *plan.Plan, cases map[string]*plan.PlanCase, installsSkills bool, cells []grade.CellResult, k int) map[string]Metric {
	metrics := map[string]Metric{}
	var (
		task, invalid, noChange, fixture  passCounter
		halluFail, markdown, verification passCounter
		opened                            passCounter
		violated, observed                int // prohibitedOutcome
		skills, refs                      grade.RoutingTally
		valid                             int
		splitScores                       = map[string][]float64{}
		kindScores                        = map[string][]float64{}
	)
	for _, r := range cells {
		if r.Status != grade.StatusMissing {
			invalid.add(r.Status == grade.StatusInvalid)
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
		for _, t := range []grade.RoutingTally{r.Routing.Skills, r.Routing.References} {
			observed += t.Forbidden
			violated += len(t.ForbiddenSeen)
		}
		skills.TP, skills.FP, skills.FN, skills.Allowed = skills.TP+r.Routing.Skills.TP, skills.FP+r.Routing.Skills.FP, skills.FN+r.Routing.Skills.FN, skills.Allowed+r.Routing.Skills.Allowed
		refs.TP, refs.FP, refs.FN, refs.Allowed = refs.TP+r.Routing.References.TP, refs.FP+r.Routing.References.FP, refs.FN+r.Routing.References.FN, refs.Allowed+r.Routing.References.Allowed
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
		metrics[MetricSkillPrecision] = microRate(skills.TP+skills.Allowed, skills.TP+skills.Allowed+skills.FP, valid)
		metrics[MetricSkillRecall] = microRate(skills.TP, skills.TP+skills.FN, valid)
		metrics[MetricReferencePrecision] = microRate(refs.TP+refs.Allowed, refs.TP+refs.Allowed+refs.FP, valid)
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
func weightedPass(cases map[string]*plan.PlanCase, cells []grade.CellResult, k int) map[string][2]Metric {
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
func armCost(cells []grade.CellResult) map[string]Metric {
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

// armRouting counts the skill files an arm's valid cells loaded (a skill
// as NAME/SKILL.md, a reference as NAME/PATH) and finds the weakest
// routing evidence among them.
func armRouting(cells []grade.CellResult) (files map[string]int, evidence string) {
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
