package verdict

import (
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestForbiddenActions: with actions, the forbidden rule counts as
// chrisbanes/skills' evaluator does: a failed check it names, or a write
// outside the allowed paths of a case that is not a no-change control,
// once per cell; a failed notContains and a no-change control's write do
// not count.
func TestForbiddenActions(t *testing.T) {
	policy := `policies.advisory & {forbidden: {arms: ["none", "forced", "automatic"], actions: ["safety: no network command"]}}`
	p := policySuite{trials: 1, policy: policy, arms: advisoryArms, cases: advisoryCases}.compile(t)
	failed := func(name, kind string, negative bool) grade.CheckResult {
		return grade.CheckResult{Name: name, Kind: kind, Negative: negative}
	}
	run := func(tweak func(*grade.CellResult)) RuleOutcome {
		res := synth(t, p, grid{
			"t1/none": "F", "t1/forced": "P", "t1/automatic": "P", "t2/none": "F", "t2/forced": "P", "t2/automatic": "P",
			"n1/none": "F", "n1/forced": "P", "n1/automatic": "P",
		}, func(r *grade.CellResult) { routed(r); tweak(r) })
		return rule(t, BuildReport(p, res).Verdict, "forbidden")
	}
	// The baseline's negative control rewrote the workspace and a task
	// left a forbidden text: their evaluator calls neither a forbidden
	// action.
	if o := run(func(r *grade.CellResult) {
		if r.Arm == "none" && r.Case == "n1" {
			r.Checks = append(r.Checks, failed("workspace unchanged", grade.CheckWrites, false))
		}
		if r.Arm == "none" && r.Case == "t1" {
			r.Checks = append(r.Checks, failed("file x notContains TODO", grade.CheckFile, true), failed("forbidden command evidence: rm", grade.CheckTrajectory, true))
		}
	}); !o.Met || o.Detail != "forbidden actions (max 0): none: 0; forced: 0; automatic: 0" {
		t.Errorf("no forbidden action: %+v", o)
	}
	// A safety check and an undeclared write, each in the baseline too,
	// count once per cell.
	o := run(func(r *grade.CellResult) {
		if r.Case == "t1" && r.Arm != "automatic" {
			r.Checks = append(r.Checks, failed("safety: no network command", grade.CheckTrajectory, true), failed("writes", grade.CheckWrites, false))
		}
	})
	if o.Met || strings.Join(o.Reasons, ",") != "FORBIDDEN none,FORBIDDEN forced" || o.Detail != "forbidden actions (max 0): none: 1; forced: 1; automatic: 0" {
		t.Errorf("forbidden actions: %+v", o)
	}
}

// TestRoutingAllowed: a skill the case allows counts for precision, not
// for recall.
func TestRoutingAllowed(t *testing.T) {
	p := policySuite{trials: 1, policy: "policies.advisory", arms: advisoryArms, cases: `
		t1: {prompt: "p", routing: skills: {required: ["cl"], allowed: ["other"]}, assert: [], rubric: []}`}.compile(t)
	if got := p.Cases[0].Routing.Skills.Allowed; strings.Join(got, ",") != "other" {
		t.Fatalf("allowed %v", got)
	}
	tally := grade.TallyRouting(p, p.Cases[0], []grade.RoutingEvent{{Name: "cl", Evidence: grade.EvidenceReported}, {Name: "other", Evidence: grade.EvidenceReported}}, nil)
	if tally.Skills.TP != 1 || tally.Skills.Allowed != 0 || tally.Skills.FP != 0 {
		// "other" is not a suite skill here: it is ignored, never allowed or FP.
		t.Errorf("tally %+v", tally.Skills)
	}
	pc := p.Cases[0]
	pc.Routing.Skills = suite.Expectation{Required: []string{"zz"}, Allowed: []string{"cl"}}
	if s := grade.TallyRouting(p, pc, []grade.RoutingEvent{{Name: "cl", Evidence: grade.EvidenceReported}}, nil).Skills; s.Allowed != 1 || s.TP != 0 || s.FP != 0 || s.FN != 1 {
		t.Errorf("an allowed suite skill: %+v", s)
	}
	res := synth(t, p, grid{"t1/none": "F", "t1/forced": "P", "t1/automatic": "P"}, func(r *grade.CellResult) {
		r.Routing.Skills = grade.RoutingTally{TP: 1, Allowed: 1, Observed: []string{"cl", "other"}, Evidence: grade.EvidenceReported}
		if r.Arm == "automatic" {
			r.Routing.Skills = grade.RoutingTally{Allowed: 1, FN: 1, Observed: []string{"other"}, Evidence: grade.EvidenceReported}
		}
	})
	o := rule(t, BuildReport(p, res).Verdict, "routing")
	if strings.Join(o.Reasons, ",") != "ROUTING-RECALL automatic" || !strings.Contains(o.Detail, "precision 100.0% (TP 0, FP 0, allowed 1;") {
		t.Errorf("routing: %+v", o)
	}
}
