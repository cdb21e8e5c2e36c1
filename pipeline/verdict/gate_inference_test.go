package verdict

import (
	"slices"
	"strings"
	"testing"
)

// The paired gate carries the inference of the candidate run's arm against
// the baseline run's on its comparisons, paired on (case, trial) across the
// two runs, as a single run's rules do; and a candidate suite whose policy
// has a significance rule has it read on the gate's inference: 3 cases
// cannot show an improvement beyond noise (the smallest two-sided mid-p of
// three cases is 1/8).
func TestGateInference(t *testing.T) {
	opts := skilloptGate(t)
	baseline := gateSpec{trials: 3, target: "old"}.run(t, grid{"train1": "FFF", "unseen1": "FFF", "adv1": "PFF"}, nil)
	cand := gateSpec{trials: 3, target: "new", policy: "policies.skillopt & {significance: {}}"}
	candidate := cand.run(t, grid{"train1": "PPP", "unseen1": "PPP", "adv1": "PPP"}, nil)
	v, err := Gate(baseline, candidate, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nonRegression", "improvement"} {
		inf := rule(t, v, name).Inference
		if inf == nil || inf.N != 3 || inf.TrialsPerCase != 3 || inf.Unit != "case" || inf.Estimate != 0.8889 || inf.P != 0.125 {
			t.Errorf("%s inference %+v", name, inf)
		}
	}
	sig := rule(t, v, "significance")
	if sig.Met || !slices.Equal(sig.Reasons, []string{"NOT-SIGNIFICANT improvement"}) || !strings.Contains(sig.Detail, "improvement: +0.889") {
		t.Errorf("significance %+v", sig)
	}
	if v.Verdict != VerdictFail {
		t.Errorf("verdict %s %v", v.Verdict, v.Reasons)
	}
	// Without the rule in the candidate's policy, the gate passes on the
	// source system's rules alone, the inference beside them.
	plain := gateSpec{trials: 3, target: "new"}.run(t, grid{"train1": "PPP", "unseen1": "PPP", "adv1": "PPP"}, nil)
	if v, _ := Gate(baseline, plain, opts); v.Verdict != VerdictPass || slices.ContainsFunc(v.Rules, func(o RuleOutcome) bool { return o.Rule == "significance" }) {
		t.Errorf("without significance: %s %+v", v.Verdict, v.Rules)
	}
}
