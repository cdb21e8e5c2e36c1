package pipeline

import (
	"strings"
	"testing"
)

// gateSuite is a one-arm suite installing the given skill keys ("" for
// none), under the skillopt preset whose thresholds the gate's caller reads.
func gateSuite(skills string, trials int) policySuite {
	return policySuite{trials: trials, policy: "policies.skillopt & {nonRegression: enabled: false, improvement: enabled: false, skillSize: enabled: false}",
		arms: "\t\tskill: {skills: [" + skills + "]}", cases: skilloptCases}
}

// skilloptGateOptions reads the gate's thresholds from a plan's skillopt
// policy, as the gate command does: Go holds none.
func skilloptGateOptions(t *testing.T, p *Plan) GateOptions {
	t.Helper()
	if p.Policy.SkillSize == nil || p.Policy.RunKeys == nil {
		t.Fatal("plan has no skillopt policy")
	}
	return GateOptions{MaxRatio: p.Policy.SkillSize.MaxRatio, MinRunKeys: p.Policy.RunKeys.Min}
}

func TestGate(t *testing.T) {
	base := gateSuite(`"old"`, 3).compile(t)
	cand := gateSuite(`"new"`, 3).compile(t)
	opts := skilloptGateOptions(t, base)
	if opts.MaxRatio != 1.1 || opts.MinRunKeys != 3 {
		t.Fatalf("skillopt thresholds from CUE = %+v", opts)
	}
	baseline := BuildReport(base, synth(t, base, grid{"train1/skill": "PPF", "unseen1/skill": "PPF", "adv1/skill": "PFF"}, nil))

	t.Run("improves within 110%", func(t *testing.T) {
		candidate := BuildReport(cand, synth(t, cand, grid{"train1/skill": "PPP", "unseen1/skill": "PPF", "adv1/skill": "PPF"}, nil))
		v, err := Gate(baseline, candidate, opts)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictPass, nil, nil)
		golden(t, "gate_pass", v)
	})
	t.Run("regressions, invalid cells, size", func(t *testing.T) {
		candidate := BuildReport(cand, synth(t, cand, grid{"train1/skill": "PPP", "unseen1/skill": "PFF", "adv1/skill": "FFI"}, nil))
		o := opts
		o.MaxRatio = 1.05 // a stricter bound from the caller's CUE
		o.Protected = []string{"adversarial", MetricHallucination}
		v, err := Gate(baseline, candidate, o)
		if err != nil {
			t.Fatal(err)
		}
		// taskSuccess 5/9 → 4/8 and validUnseen 0.833 → 0.667 regress;
		// adversarial 0.667 → 0.5 regresses; hallucination (lower is better)
		// 2/3 → 2/2 regresses; nothing improves; adv1 has 2 valid run keys.
		expect(t, v, VerdictFail, []string{
			"INVALID-RUN candidate",
			"NON-REGRESSION taskSuccess", "NON-REGRESSION validUnseen", "NON-REGRESSION adversarial", "NON-REGRESSION hallucination",
			"METRIC-UNPAIRED taskSuccess", "METRIC-UNPAIRED adversarial", "METRIC-UNPAIRED hallucination",
			"NO-IMPROVEMENT", "RUN-KEYS candidate adv1", "SKILL-SIZE",
		}, nil)
		golden(t, "gate_fail", v)
	})
	t.Run("equal needs allowEqual", func(t *testing.T) {
		v, err := Gate(baseline, baseline, GateOptions{BaselineArm: "skill", CandidateArm: "skill", MaxRatio: opts.MaxRatio, MinRunKeys: 3})
		if err == nil || !strings.Contains(err.Error(), "same arm of the same plan") {
			t.Fatalf("gating an arm against itself: %v, %v", v, err)
		}
		same := BuildReport(cand, synth(t, cand, grid{"train1/skill": "PPF", "unseen1/skill": "PPF", "adv1/skill": "PFF"}, nil))
		v, err = Gate(baseline, same, opts)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictFail, []string{"NO-IMPROVEMENT"}, nil)
		o := opts
		o.AllowEqual = true
		v, _ = Gate(baseline, same, o)
		expect(t, v, VerdictPass, nil, nil)
	})
	t.Run("a no-skill baseline is not size comparable", func(t *testing.T) {
		none := gateSuite("", 3).compile(t)
		b := BuildReport(none, synth(t, none, grid{"train1/skill": "FFF", "unseen1/skill": "PFF", "adv1/skill": "FFF"}, nil))
		candidate := BuildReport(cand, synth(t, cand, grid{"train1/skill": "PPP", "unseen1/skill": "PPF", "adv1/skill": "PPF"}, nil))
		v, err := Gate(b, candidate, GateOptions{MinRunKeys: 3}) // no MaxRatio needed
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictPass, nil, nil)
		if size := rule(t, v, "skillSize"); !size.Met || strings.Join(size.Flags, ",") != "sizeComparable=false" {
			t.Errorf("skillSize = %+v", size)
		}
		if _, err := Gate(candidate, b, opts); err == nil || !strings.Contains(err.Error(), "candidate arm skill installs no skill") {
			t.Errorf("a candidate without a skill: %v", err)
		}
	})
	t.Run("one run key needs allowSingleRun", func(t *testing.T) {
		b1, c1 := gateSuite(`"old"`, 1).compile(t), gateSuite(`"new"`, 1).compile(t)
		b := BuildReport(b1, synth(t, b1, grid{"train1/skill": "F", "unseen1/skill": "P", "adv1/skill": "F"}, nil))
		c := BuildReport(c1, synth(t, c1, grid{"train1/skill": "P", "unseen1/skill": "P", "adv1/skill": "F"}, nil))
		v, err := Gate(b, c, opts)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictFail, []string{"RUN-KEYS baseline train1", "RUN-KEYS baseline unseen1", "RUN-KEYS baseline adv1", "RUN-KEYS candidate train1", "RUN-KEYS candidate unseen1", "RUN-KEYS candidate adv1"}, nil)
		o := opts
		o.AllowSingleRun = true
		v, _ = Gate(b, c, o)
		expect(t, v, VerdictPass, nil, nil)
	})
}

func TestGateRefusesUnpairedReports(t *testing.T) {
	base := gateSuite(`"old"`, 3).compile(t)
	cand := gateSuite(`"new"`, 3).compile(t)
	opts := skilloptGateOptions(t, base)
	g := grid{"train1/skill": "PPF", "unseen1/skill": "PPF", "adv1/skill": "PFF"}
	baseline := BuildReport(base, synth(t, base, g, nil))
	candidate := BuildReport(cand, synth(t, cand, g, nil))

	c := *candidate
	c.Cases = append([]CaseReport{}, candidate.Cases[1:]...)
	c.Cases = append(c.Cases, CaseReport{ID: "extra"})
	c.Trials = 5
	c.Agent.Model = "other-model"
	c.Agent.Image = "other/image"
	c.Judge = &JudgeIdentity{Provider: "scripted", Mode: "pairwise"}
	_, err := Gate(baseline, &c, opts)
	if err == nil {
		t.Fatal("unpaired reports gated")
	}
	for _, want := range []string{
		"case train1 only in the baseline", "case extra only in the candidate", "trials differ: 3 and 5",
		`agent image differs: "skillgate/sandbox" and "other/image"`, `agent model differs: "" and "other-model"`,
		"only one report has a judge",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}

	two := gateSuite(`"old"`, 3)
	two.arms += "\n\t\tnone: {skills: []}"
	p2 := two.compile(t)
	r2 := BuildReport(p2, synth(t, p2, grid{"train1/skill": "PPF", "unseen1/skill": "PPF", "adv1/skill": "PFF", "train1/none": "FFF", "unseen1/none": "FFF", "adv1/none": "FFF"}, nil))
	if _, err := Gate(r2, candidate, opts); err == nil || !strings.Contains(err.Error(), "the baseline report has 2 arms (skill, none): name one") {
		t.Errorf("an unnamed arm of a two-arm report: %v", err)
	}
	if _, err := Gate(r2, candidate, GateOptions{BaselineArm: "gone", MaxRatio: 1.1, MinRunKeys: 3}); err == nil || !strings.Contains(err.Error(), "no arm gone") {
		t.Errorf("a missing arm: %v", err)
	}
	if _, err := Gate(baseline, candidate, GateOptions{}); err == nil || !strings.Contains(err.Error(), "MinRunKeys") {
		t.Errorf("no thresholds: %v", err)
	}
	// Trials that differ per case (a shorter run of one case) do not pair.
	short := *candidate
	short.Cases = append([]CaseReport{}, candidate.Cases...)
	short.Cases[0].Trials = map[string][]TrialOutcome{"skill": candidate.Cases[0].Trials["skill"][:2]}
	if _, err := Gate(baseline, &short, opts); err == nil || !strings.Contains(err.Error(), "case train1: run keys differ: trials [1 2 3] and [1 2]") {
		t.Errorf("differing run keys: %v", err)
	}
}
