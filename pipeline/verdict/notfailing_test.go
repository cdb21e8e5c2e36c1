package verdict

import (
	"slices"
	"testing"
)

// TestUncoveredIsAReasonThatFailsNothing: at severity warn an uncovered
// case is listed among the verdict's reasons, last, and in NotFailing,
// never among the warnings, and the verdict passes; at severity fail it
// fails the verdict like any reason. Other warn rules stay warnings.
func TestUncoveredIsAReasonThatFailsNothing(t *testing.T) {
	uncovered := func(sev string) RuleOutcome {
		return RuleOutcome{Rule: "uncovered", Severity: sev, Reasons: []string{"UNCOVERED empty"}}
	}
	opened := RuleOutcome{Rule: "openedSkill", Severity: SeverityWarn, Reasons: []string{"OPENED-SKILL after 43%"}}
	regression := RuleOutcome{Rule: "regression", Severity: "fail", Reasons: []string{"REGRESSION stats"}}

	v := decideVerdict(nil, []RuleOutcome{uncovered(SeverityWarn), opened})
	if v.Verdict != VerdictPass || v.ExitCode != 0 || !slices.Equal(v.Reasons, []string{"UNCOVERED empty"}) ||
		!slices.Equal(v.NotFailing, []string{"UNCOVERED empty"}) || !slices.Equal(v.Warnings, []string{"OPENED-SKILL after 43%"}) {
		t.Errorf("warn: %s (exit %d) reasons %q not failing %q warnings %q", v.Verdict, v.ExitCode, v.Reasons, v.NotFailing, v.Warnings)
	}
	v = decideVerdict(nil, []RuleOutcome{uncovered(SeverityWarn), regression})
	if v.Verdict != VerdictFail || !slices.Equal(v.Reasons, []string{"REGRESSION stats", "UNCOVERED empty"}) {
		t.Errorf("warn beside a regression: %s reasons %q", v.Verdict, v.Reasons)
	}
	v = decideVerdict(nil, []RuleOutcome{uncovered("fail")})
	if v.Verdict != VerdictFail || !slices.Equal(v.Reasons, []string{"UNCOVERED empty"}) || len(v.NotFailing) != 0 {
		t.Errorf("fail: %s reasons %q not failing %q", v.Verdict, v.Reasons, v.NotFailing)
	}
}
