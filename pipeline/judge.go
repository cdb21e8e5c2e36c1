package pipeline

import "fmt"

// ApplyRubric adds a rubric judgement to a cell's deterministic result.
//
// A valid judgement adds one check of kind "judge" per criterion, so
// reports list them; the cell passes only when it passed deterministically
// and every criterion passes: a judge never passes a failed cell. Score
// stays the deterministic checks' fraction; the criteria's is j.Score.
//
// An invalid judgement (a missing, duplicate, extra or malformed result,
// or an unreadable reply) makes the cell invalid, like an infrastructure
// error: it counts in invalidRun, leaves taskSuccess and the other quality
// metrics, and makes the verdict INCOMPLETE. It never passes.
func ApplyRubric(r CellResult, pc PlanCase, j CellJudgement) CellResult {
	if r.Judge != nil { // judged before: back to the deterministic grade
		checks := []CheckResult{}
		for _, ch := range r.Checks {
			if ch.Kind != CheckJudge {
				checks = append(checks, ch)
			}
		}
		r.Checks, r.Status, r.Passed = checks, r.Judge.Status, r.Judge.DeterministicPassed
		if r.Status != StatusInvalid {
			r.Error = ""
		}
	}
	j.Status, j.DeterministicPassed = r.Status, r.Passed
	if !j.Valid {
		j.Criteria, j.Score = nil, 0
		r.Status, r.Passed = StatusInvalid, false
		r.Error = "judge: " + j.Reason
		r.Judge = &j
		return r
	}
	passed := 0
	all := true
	for i, text := range pc.Rubric {
		var c CriterionResult
		if i < len(j.Criteria) {
			c = j.Criteria[i]
		}
		ch := CheckResult{Name: fmt.Sprintf("rubric %d: %s", i, text), Kind: CheckJudge, Passed: c.Pass, Detail: c.Evidence}
		if c.Pass {
			passed++
		} else {
			all = false
		}
		r.Checks = append(r.Checks, ch)
	}
	if len(pc.Rubric) > 0 {
		j.Score = float64(passed) / float64(len(pc.Rubric))
	}
	r.Passed = r.Passed && all
	r.Judge = &j
	return r
}

// MarkJudgingIncomplete makes a verdict INCOMPLETE when judgements the plan
// asks for are missing (a judge call failed or the run was interrupted).
func MarkJudgingIncomplete(v *Verdict, notJudged int, what string) {
	if notJudged == 0 {
		return
	}
	v.Reasons = append(v.Reasons, fmt.Sprintf("INCOMPLETE %d %s not judged", notJudged, what))
	v.Verdict = VerdictIncomplete
	v.ExitCode = ExitCode(VerdictIncomplete)
}
