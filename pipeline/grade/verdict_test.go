package grade_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestJudgeInvalidRubricInReport: in a report, a cell made invalid by an unreadable
// rubric reply counts in invalidRun, not in taskSuccess, and makes the verdict
// INCOMPLETE.
func TestJudgeInvalidRubricInReport(t *testing.T) {
	p, root := grade.JudgePlan(t)
	skill, _ := grade.JudgeAttempts(t, p, root)
	pc := p.Cases[0]
	gradeCell := func(a grade.JudgeAttempt, status string) grade.CellResult {
		r, err := grade.GradeCell(p, pc, a.Cell, grade.GradeInput{Status: status, Answer: a.Answer, World: a.World, RunChecks: a.Checks[1:2]})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	allPass := grade.CellJudgement{Valid: true, Criteria: []grade.CriterionResult{{0, true, "fixed"}, {1, true, "only that"}}}
	var results []grade.CellResult
	for _, c := range p.Cells {
		a := skill
		a.Cell = c
		r := grade.ApplyRubric(gradeCell(a, grade.StatusCompleted), pc, allPass)
		if c.ID == "fixit/armzeta/2" {
			r = grade.ApplyRubric(gradeCell(a, grade.StatusCompleted), pc, grade.CellJudgement{Valid: false, Reason: "no JSON"})
		}
		results = append(results, r)
	}
	rep := verdict.BuildReport(p, results)
	for _, a := range rep.Arms {
		want := map[string][2]float64{"armzeta": {0.5, 1}, "armeta": {0, 2}}[a.Name]
		if inv := a.Metrics[verdict.MetricInvalidRun]; inv.Value != want[0] || a.Metrics[verdict.MetricTaskSuccess].Samples != int(want[1]) {
			t.Errorf("arm %s: invalidRun %+v, taskSuccess %+v", a.Name, inv, a.Metrics[verdict.MetricTaskSuccess])
		}
	}
	if rep.Verdict.Verdict != verdict.VerdictIncomplete || !strings.Contains(strings.Join(rep.Verdict.Reasons, ","), "INVALID 1 cells") {
		t.Errorf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	for _, c := range rep.Cases[0].Trials["armzeta"] {
		if c.Trial == 1 && !c.Passed {
			t.Errorf("trial 1 failed: %v", c.Failed)
		}
	}
}

func TestJudgeMarkIncomplete(t *testing.T) {
	v := verdict.Verdict{Verdict: verdict.VerdictPass, Reasons: []string{}, ExitCode: 0}
	verdict.MarkJudgingIncomplete(&v, nil, "pairs")
	if v.Verdict != verdict.VerdictPass {
		t.Fatal(v)
	}
	var missing []verdict.NotJudged
	for i := 1; i <= 7; i++ {
		missing = append(missing, verdict.NotJudged{Name: fmt.Sprintf("a/x/%d", i), Why: "judge: POST http://127.0.0.1/v1/messages: HTTP 500: down"})
	}
	missing = append(missing, verdict.NotJudged{Name: "b/x/1"})
	verdict.MarkJudgingIncomplete(&v, missing, "cells")
	want := "INCOMPLETE 8 cells not judged: a/x/1, a/x/2, a/x/3, a/x/4, a/x/5 and 2 more (judge: POST http://127.0.0.1/v1/messages: HTTP 500: down); b/x/1 (not asked: judging did not finish)"
	if v.Verdict != verdict.VerdictIncomplete || v.ExitCode != 2 || v.Reasons[0] != want {
		t.Errorf("%+v\nwant reason %q", v, want)
	}
}
