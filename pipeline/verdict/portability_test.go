package verdict

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// agentSetPlan is BaseSuite on two agents, "echo" and "printf", with three
// cases of three trials and the portability rule.
func agentSetPlan(t *testing.T) *plan.Plan {
	f := suitetest.Edit(t, "suite/suite.cue", `agent: agents.command & {command: ["sh", "-c", "echo hi"]}`, `agentSet: {
		echo: agents.command & {command: ["sh", "-c", "echo hi"]}
		printf: agents.command & {command: ["sh", "-c", "printf hi"]}
	}`)
	f["suite/suite.cue"] = strings.Replace(f["suite/suite.cue"], `policy: policies.advisory & {uplift: minPoints: 15}`, `policy: policies.advisory & {uplift: minPoints: 15, portability: requireUpliftOnEvery: true, retention: enabled: false, routing: enabled: false, restraint: enabled: false, forbidden: enabled: false}`, 1)
	f["suite/cases.cue"] = strings.Replace(strings.Replace(f["suite/cases.cue"], "cases: a: {", "cases: {a: _c, b: _c, c: _c}\n\t_c: {", 1), "\n\t\trubric: [\"The entry is under Unreleased.\"]", "", 1)
	root := suitetest.WriteSuite(t, f)
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	return p
}

// Known answers: with the skill, echo passes every trial it failed
// without (+100 points, the skill observed); printf passes every trial
// either way (+0, inferred). The portability rule fails naming printf
// alone; the heterogeneity test relabels 3 cases' differences (1 on echo,
// 0 on printf): 2 of the 2^3 relabellings are as extreme, p = 0.25.
func TestPortabilityKnownAnswers(t *testing.T) {
	p := agentSetPlan(t)
	var results []grade.CellResult
	for _, c := range p.Cells {
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: grade.StatusCompleted}
		r.Passed = c.Agent == "printf" || c.Arm == "forced"
		if c.Arm == "forced" {
			ev := map[string]string{"echo": grade.EvidenceObserved, "printf": grade.EvidenceInferred}[c.Agent]
			r.Telemetry.Skills = []grade.RoutingEvent{{Name: "cl", Evidence: ev}}
		}
		results = append(results, r)
	}
	rep := BuildReport(p, results)
	pt := rep.Portability
	if pt == nil || len(pt.Agents) != 2 || pt.Agents[0].Agent != "echo" || pt.Agents[1].Agent != "printf" {
		t.Fatalf("portability %+v", pt)
	}
	for i, want := range []struct {
		none, forced, uplift float64
		evidence             string
	}{{0, 1, 1, grade.EvidenceObserved}, {1, 1, 0, grade.EvidenceInferred}} {
		a := pt.Agents[i]
		if a.PassRates["none"].Value != want.none || a.PassRates["forced"].Value != want.forced || a.PassRates["forced"].Samples != 9 {
			t.Errorf("%s: pass rates %v", a.Agent, a.PassRates)
		}
		if a.Uplift == nil || a.Uplift.Estimate != want.uplift || a.Uplift.N != 3 || a.Uplift.TrialsPerCase != 3 {
			t.Errorf("%s: uplift %+v, want %+.0f over 3 cases × 3", a.Agent, a.Uplift, want.uplift)
		}
		if a.Activation["forced"][want.evidence] != 9 || a.Baseline != "none" || a.Treatment != "forced" {
			t.Errorf("%s: activation %v, arms %s → %s", a.Agent, a.Activation, a.Baseline, a.Treatment)
		}
	}
	if pt.Agents[0].Verdict != VerdictPass || pt.Agents[1].Verdict != VerdictFail {
		t.Errorf("agents' verdicts %s, %s; want PASS, FAIL: %q", pt.Agents[0].Verdict, pt.Agents[1].Verdict, rep.Verdict.Reasons)
	}
	if h := pt.Heterogeneity; h == nil || h.P != 0.25 || h.N != 3 || h.Groups != 2 || h.Statistic != 0.5 {
		t.Errorf("heterogeneity %+v, want p 0.25 over 3 cases", h)
	}
	v := rep.Verdict
	var named []string
	for _, r := range v.Reasons {
		if strings.HasPrefix(r, "NO-UPLIFT-ON ") {
			named = append(named, r)
		}
	}
	if v.Verdict != VerdictFail || len(named) != 1 || !strings.HasPrefix(named[0], "NO-UPLIFT-ON printf: forced 100.0% vs none 100.0%") {
		t.Errorf("verdict %s, reasons %q; want FAIL naming printf alone", v.Verdict, v.Reasons)
	}
	if !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.HasPrefix(r, "printf: ") }) {
		t.Errorf("reasons %q: want printf's own uplift rule's, named", v.Reasons)
	}
	rows, note := PortabilityRows(pt)
	if len(rows) != 2 || rows[0][3] != "+100.0 points (forced − none, 3 cases × 3 trials)" || !strings.Contains(note, "p = 0.25 over 3 cases") {
		t.Errorf("rows %q, note %q", rows, note)
	}
}
