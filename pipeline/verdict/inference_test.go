package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
)

// upliftSuite is an advisory suite of n positive cases and one no-change
// control, one trial each: forced wins the first wins cases alone, none
// and forced tie on the others.
func upliftSuite(t *testing.T, n, wins int, policy string) Verdict {
	t.Helper()
	_, r := upliftRun(t, n, wins, policy)
	return r.Verdict
}

// upliftRun is upliftSuite's plan and report.
func upliftRun(t *testing.T, n, wins int, policy string) (*plan.Plan, *Report) {
	t.Helper()
	var cases strings.Builder
	g := grid{"n1/none": "P", "n1/forced": "P", "n1/automatic": "P"}
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		fmt.Fprintf(&cases, "\t\t%s: {prompt: \"p\", routing: skills: required: [\"cl\"], assert: [], rubric: []}\n", id)
		g[id+"/none"], g[id+"/forced"], g[id+"/automatic"] = "F", "F", "F"
		if i < wins {
			g[id+"/forced"], g[id+"/automatic"] = "P", "P"
		}
	}
	cases.WriteString(`		n1: {prompt: "p", kind: "no-change", writes: [], routing: skills: required: ["cl"], assert: [], rubric: []}`)
	p := policySuite{trials: 1, policy: policy, arms: advisoryArms, cases: cases.String()}.compile(t)
	return p, BuildReport(p, synth(t, p, g, routed))
}

// A previous run's discordance per comparison: 10 of uplift's 12 paired
// trials disagree, none of retention's.
func TestRunDiscordance(t *testing.T) {
	p, r := upliftRun(t, 12, 10, "policies.advisory")
	d := RunDiscordance(p, r)
	if len(d) != 2 || d["uplift"] != 10.0/12 || d["retention"] != 0 {
		t.Errorf("RunDiscordance = %v", d)
	}
	cps := PlanPower(p, PowerAssumptions{Alpha: 0.05, Power: 0.8, ByRule: d})
	if len(cps) != 2 || cps[0].Discordance == nil || *cps[0].Discordance != 10.0/12 || cps[1].Discordance != nil {
		t.Fatalf("PlanPower %+v", cps)
	}
	if cps[0].Cases != 12 || cps[0].Detectable == nil || cps[0].CasesForThreshold == nil || *cps[0].CasesForThreshold <= 12 {
		t.Errorf("uplift power %+v", cps[0])
	}
}

// The uplift rule carries the paired inference of its arms, computed as
// package inference computes it on the same cells; the rule's own verdict
// and texts are unchanged, and an underpowered sample is a warning only.
func TestInferenceBesideTheRules(t *testing.T) {
	v := upliftSuite(t, 12, 10, "policies.advisory")
	if v.Verdict != VerdictPass {
		t.Fatalf("verdict %s %v", v.Verdict, v.Reasons)
	}
	up := rule(t, v, "uplift")
	var pairs []inference.Pair
	for i := range 12 {
		pairs = append(pairs, inference.Pair{Case: fmt.Sprintf("t%02d", i), Trial: 1, Candidate: i < 10})
	}
	want, _ := inference.Compare(pairs, "")
	inf := up.Inference
	if inf == nil || inf.Estimate != want.Estimate || inf.P != want.P || inf.CI95 != want.CI95 || inf.Method != inference.MethodMcNemar {
		t.Fatalf("uplift inference %+v, want %+v", inf, want)
	}
	// 10 of 10 discordant cases: mid-p = 2 · ½ · 2⁻¹⁰.
	if inf.N != 12 || inf.TrialsPerCase != 1 || inf.P != 0.0009766 || inf.Estimate != 0.8333 || inf.Baseline != "none" || inf.Candidate != "forced" {
		t.Errorf("uplift inference %+v", inf)
	}
	if inf.Threshold == nil || *inf.Threshold != 0.1 || inf.Detectable == nil || *inf.Detectable <= 0.1 {
		t.Errorf("threshold %v, detectable %v: want 0.1 and more than it at 12 cases", inf.Threshold, inf.Detectable)
	}
	if len(v.Warnings) != 1 || !strings.HasPrefix(v.Warnings[0], "UNDERPOWERED uplift: 12 cases × 1 trial detect 0.") {
		t.Errorf("warnings %q, want one UNDERPOWERED uplift", v.Warnings)
	}
	if r := rule(t, v, "retention"); r.Inference == nil || r.Inference.Baseline != "forced" || r.Inference.Candidate != "automatic" || r.Inference.Estimate != 0 {
		t.Errorf("retention inference %+v", r.Inference)
	}
	for _, name := range []string{"routing", "restraint", "forbidden"} {
		if rule(t, v, name).Inference != nil {
			t.Errorf("%s compares no two arms' pass rates, has inference", name)
		}
	}
}

func TestUnderpowered(t *testing.T) {
	th, small, big := 0.1, 0.08, 0.3
	for _, c := range []struct {
		inf  *Inference
		want string
	}{
		{&Inference{Result: inference.Result{N: 200, TrialsPerCase: 1}, Threshold: &th, Detectable: &small}, ""},
		{&Inference{Result: inference.Result{N: 20, TrialsPerCase: 3}, Threshold: &th, Detectable: &big}, "UNDERPOWERED uplift: 20 cases × 3 trials detect 0.30, the rule asks 0.10"},
		{&Inference{Result: inference.Result{N: 3, TrialsPerCase: 3}, Threshold: &th}, "UNDERPOWERED uplift: 3 cases × 3 trials detect no difference, the rule asks 0.10"},
		{&Inference{Result: inference.Result{N: 3, TrialsPerCase: 3}}, ""},
		{nil, ""},
	} {
		if got := underpowered("uplift", c.inf); got != c.want {
			t.Errorf("underpowered(%+v) = %q, want %q", c.inf, got, c.want)
		}
	}
}

// The significance rule gates on the inference: twelve cases with ten
// discordant wins clear it; three do not, and fail the verdict through it
// alone.
func TestSignificanceRule(t *testing.T) {
	v := upliftSuite(t, 12, 10, "policies.advisory & {significance: {}}")
	if s := rule(t, v, "significance"); !s.Met || v.Verdict != VerdictPass || !strings.HasPrefix(s.Detail, "uplift: +0.833, 95% [0.40") {
		t.Errorf("12 cases: %s, significance %+v", v.Verdict, s)
	}
	v = upliftSuite(t, 3, 3, "policies.advisory & {significance: {}}")
	expect(t, v, VerdictFail, []string{"NOT-SIGNIFICANT uplift"}, nil)
	if !rule(t, v, "uplift").Met {
		t.Error("uplift of three wins out of three is met by its own rule")
	}
	// Without the interval condition, p alone decides: 3 of 3 is p 0.125.
	v = upliftSuite(t, 3, 3, "policies.advisory & {significance: {interval: false, alpha: 0.2}}")
	if !rule(t, v, "significance").Met {
		t.Errorf("alpha 0.2, no interval: %+v", rule(t, v, "significance"))
	}
}

// TestInferenceLevelsMatchTheSchema: the levels read for a stored plan made
// before the schema gave them are the schema's defaults, so the two cannot
// drift apart.
func TestInferenceLevelsMatchTheSchema(t *testing.T) {
	p := policySuite{trials: 1, policy: "policies.advisory", arms: advisoryArms, cases: `
		a: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
	got := p.Policy.Inference
	if got.Alpha != priorAlpha || got.Power != priorPower {
		t.Errorf("schema's #InferenceLevels gives α %v, power %v; a plan without them is read at α %v, power %v", got.Alpha, got.Power, priorAlpha, priorPower)
	}
	if significanceAlpha(p.Policy) != got.Alpha || detectPower(p.Policy) != got.Power {
		t.Errorf("the verdict does not read the policy's levels")
	}
}
