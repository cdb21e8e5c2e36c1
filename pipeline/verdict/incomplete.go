package verdict

import (
	"fmt"
	"strings"
)

// NotJudged is a judgement the plan asks for that the store lacks: what it
// judges (a cell, or a pair in one order) and why it is missing.
type NotJudged struct {
	Name string
	// Why is the stored failure of the last judge call, or "" when none
	// was recorded (the run stopped before asking).
	Why string
}

// notJudgedListed caps the names a reason lists for one cause.
const notJudgedListed = 5

// MarkJudgingIncomplete makes a verdict INCOMPLETE when judgements the plan
// asks for are missing (a judge call failed or the run was interrupted).
// Its reason names what was not judged and why, one cause at a time:
//
//	INCOMPLETE 2 cells not judged: a/forced/1, a/none/1 (judge command ./judge.sh: exit status 1: no key)
func MarkJudgingIncomplete(v *Verdict, missing []NotJudged, what string) {
	if len(missing) == 0 {
		return
	}
	var causes []string
	names := map[string][]string{}
	for _, m := range missing {
		why := m.Why
		if why == "" {
			why = "not asked: judging did not finish"
		}
		if _, ok := names[why]; !ok {
			causes = append(causes, why)
		}
		names[why] = append(names[why], m.Name)
	}
	var parts []string
	for _, why := range causes {
		ns := names[why]
		list := strings.Join(ns[:min(len(ns), notJudgedListed)], ", ")
		if len(ns) > notJudgedListed {
			list += fmt.Sprintf(" and %d more", len(ns)-notJudgedListed)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", list, why))
	}
	v.Reasons = append(v.Reasons, fmt.Sprintf("INCOMPLETE %d %s not judged: %s", len(missing), what, strings.Join(parts, "; ")))
	if v.Verdict != VerdictIncomplete {
		v.Resumable = true // a rerun judges what is missing
	}
	v.Verdict = VerdictIncomplete
	v.ExitCode = ExitCode(VerdictIncomplete)
}
