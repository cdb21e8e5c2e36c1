package verdict

import (
	"slices"
	"strings"
	"testing"
)

// replicateArms: forced-2 repeats forced.
const replicateArms = advisoryArms + `
		"forced-2": {replicateOf: "forced"}`

// A replicate that agrees with its original trial for trial measures a
// flip rate of 0. The verdict may still flip: a case that passed 3 of 3
// trials may fail the next time (its Jeffreys posterior's mean chance is
// 0.875), and the advisory rules over 3 cases turn on a single trial.
func TestNoiseFloorQuiet(t *testing.T) {
	p := policySuite{trials: 3, policy: "policies.advisory & {noiseFloor: {}}", arms: replicateArms, cases: advisoryCases}.compile(t)
	g := grid{
		"t1/none": "FFF", "t1/forced": "PPP", "t1/automatic": "PPP", "t1/forced-2": "PPP",
		"t2/none": "FFF", "t2/forced": "PPP", "t2/automatic": "PPP", "t2/forced-2": "PPP",
		"n1/none": "PPP", "n1/forced": "PPP", "n1/automatic": "PPP", "n1/forced-2": "PPP",
	}
	v := BuildReport(p, synth(t, p, g, routed)).Verdict
	nf := v.NoiseFloor
	if nf == nil || len(nf.Replicates) != 1 {
		t.Fatalf("noise floor %+v", nf)
	}
	rn := nf.Replicates[0]
	if rn.Arm != "forced-2" || rn.Of != "forced" || rn.FlipRate != 0 || rn.Pairs != 9 || rn.Flips != 0 || len(rn.Cases) != 3 {
		t.Errorf("replicate %+v", rn)
	}
	vf := nf.VerdictFlip
	if vf.Draws != 500 || vf.Verdicts[VerdictPass]+vf.Verdicts[VerdictFail] != 1000 || vf.Probability <= 0.1 {
		t.Errorf("verdict flip %+v", vf)
	}
	r := rule(t, v, "noiseFloor")
	if r.Met || !slices.Equal(r.Reasons, []string{"VERDICT-UNSTABLE"}) || !strings.HasPrefix(r.Detail, "forced-2 against forced: flip rate 0.0% over 3 cases (0 of 9 trial pairs differ); verdict flip ") {
		t.Errorf("noiseFloor %+v", r)
	}
}

// A replicate that differs from its original on 2 of 3 trials of t1 and
// none of the others flips at 2/9 per case; the uplift stands at
// 0.5 ± noise, so some resampled runs fail it and the verdict's flip
// probability is above the policy's bound.
func TestNoiseFloorNoisy(t *testing.T) {
	p := policySuite{trials: 3, policy: "policies.advisory & {noiseFloor: {}}", arms: replicateArms, cases: advisoryCases}.compile(t)
	g := grid{
		"t1/none": "PFF", "t1/forced": "PPF", "t1/automatic": "PPP", "t1/forced-2": "PFP",
		"t2/none": "FFP", "t2/forced": "FPF", "t2/automatic": "PPP", "t2/forced-2": "FPF",
		"n1/none": "PPP", "n1/forced": "PPP", "n1/automatic": "PPP", "n1/forced-2": "PPP",
	}
	v := BuildReport(p, synth(t, p, g, routed)).Verdict
	rn := v.NoiseFloor.Replicates[0]
	want := []float64{0.6667, 0, 0}
	var got []float64
	for _, c := range rn.Cases {
		got = append(got, c.FlipRate)
	}
	if rn.FlipRate != 0.2222 || rn.Flips != 2 || !slices.Equal(got, []float64{0, 0.6667, 0}) {
		t.Errorf("replicate %+v (want case rates n1, t1, t2 = %v)", rn, want)
	}
	vf := v.NoiseFloor.VerdictFlip
	if vf.Probability <= 0.1 || vf.Verdicts[VerdictFail] == 0 || vf.Verdicts[VerdictPass] == 0 {
		t.Errorf("verdict flip %+v", vf)
	}
	r := rule(t, v, "noiseFloor")
	t.Logf("noiseFloor: %s", r.Detail)
	if r.Met || !slices.Equal(r.Reasons, []string{"NOISY forced-2", "VERDICT-UNSTABLE"}) {
		t.Errorf("noiseFloor %+v", r)
	}
	// Byte for byte: the same evidence gives the same figures.
	again := BuildReport(p, synth(t, p, g, routed)).Verdict.NoiseFloor
	if again.VerdictFlip.Probability != vf.Probability || again.VerdictFlip.Verdicts[VerdictPass] != vf.Verdicts[VerdictPass] {
		t.Errorf("again %+v, first %+v", again.VerdictFlip, vf)
	}
}

// A resampled run decides the significance rule on its own inference (no
// detectable difference is asked), and no noise floor of its own.
func TestResampledRunReadsSignificance(t *testing.T) {
	p := policySuite{trials: 3, policy: "policies.advisory & {significance: {}, noiseFloor: {}}", arms: replicateArms, cases: advisoryCases}.compile(t)
	g := grid{
		"t1/none": "FFF", "t1/forced": "PPP", "t1/automatic": "PPP", "t1/forced-2": "PPP",
		"t2/none": "FFF", "t2/forced": "PPP", "t2/automatic": "PPP", "t2/forced-2": "PPP",
		"n1/none": "PPP", "n1/forced": "PPP", "n1/automatic": "PPP", "n1/forced-2": "PPP",
	}
	v := evaluateRun(p, synth(t, p, g, routed), nil, nil, nil, true)
	if v.NoiseFloor != nil || slices.ContainsFunc(v.Rules, func(o RuleOutcome) bool { return o.Rule == "noiseFloor" }) {
		t.Errorf("a resampled run measured a noise floor: %+v", v)
	}
	sig := rule(t, v, "significance")
	up := rule(t, v, "uplift")
	if up.Inference == nil || up.Inference.Detectable != nil || !strings.Contains(sig.Detail, "uplift: +1.000") {
		t.Errorf("uplift %+v, significance %+v", up.Inference, sig)
	}
}
