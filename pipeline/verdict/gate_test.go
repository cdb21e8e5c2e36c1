package verdict

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// gateSpec is one run of the paired gate's tests: a one-arm suite ("skill")
// whose arm installs the target cl (old: 100 bytes, new: 110 bytes) and,
// when style is set, the companion skill style at that revision text.
type gateSpec struct {
	name    string // the suite's name; "gate" when empty
	trials  int
	target  string // "old", "new" or "" for a no-skill arm
	style   string // the companion's revision text; "" for none
	cases   string // CUE cases; skilloptCases when empty
	agent   string // CUE agent fields beside the command preset
	judge   string // a CUE judge, when set
	comment string // a line in the suite, to change its plan alone
	policy  string // the suite's policy; policies.skillopt when empty
}

func (g gateSpec) plan(t *testing.T) *plan.Plan {
	t.Helper()
	if g.name == "" {
		g.name = "gate"
	}
	if g.cases == "" {
		g.cases = skilloptCases
	}
	if g.policy == "" {
		g.policy = "policies.skillopt"
	}
	var skills []string
	if g.target != "" {
		skills = append(skills, `"`+g.target+`"`)
	}
	if g.style != "" {
		skills = append(skills, `"style"`)
	}
	judge := ""
	if g.judge != "" {
		judge = "judge: " + g.judge
	}
	src := fmt.Sprintf(`package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

// %s
schema.#Suite & {
	name: %q
	skills: {
		old:    {path: "../skills/old", name: "cl"}
		new:    {path: "../skills/new", name: "cl"}
		style: {path: "../skills/style", name: "style"}
	}
	agent: agents.command & {command: ["sh", "-c", "echo hi"]%s}
	%s
	trials: %d
	arms: skill: {skills: [%s]}
	cases: {
%s
	}
	policy: %s
}
`, g.comment, g.name, g.agent, judge, g.trials, strings.Join(skills, ", "), g.cases, g.policy)
	root := suitetest.WriteSuite(t, map[string]string{
		"skills/old/SKILL.md":        padTo(t, "---\nname: cl\ndescription: Old.\n---\n", 100),
		"skills/new/SKILL.md":        padTo(t, "---\nname: cl\ndescription: New.\n---\n", 110),
		"skills/style/SKILL.md":      "---\nname: style\ndescription: Keeps the house style.\n---\n" + g.style + "\n",
		"suite/fixtures/repo/README": "fixture\n",
		"suite/suite.cue":            src,
	})
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatalf("compile suite: %s", suite.PrintError(err, root))
	}
	return p
}

// run builds the side's report from a grid of the arm "skill" (cases
// train1, unseen1, adv1 unless the cases say otherwise).
func (g gateSpec) run(t *testing.T, gr grid, tweak func(*grade.CellResult)) GateRun {
	t.Helper()
	p := g.plan(t)
	full := grid{}
	for k, v := range gr {
		full[k+"/skill"] = v
	}
	return GateRun{Plan: p, Report: BuildReport(p, synth(t, p, full, tweak))}
}

// skilloptGate reads the gate's thresholds and pairing conditions from the
// schema's skillopt preset, as the gate command does: Go holds none.
func skilloptGate(t *testing.T) GateOptions {
	t.Helper()
	opts, err := SkillOptGateOptions()
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// refused fails unless err refuses the pair naming each wanted line.
func refused(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the runs were gated; want a refusal naming %q", want)
	}
	lines := strings.Split(err.Error(), "\n\t")
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
			}
		}
		if !found {
			t.Errorf("the refusal has no line %q:\n%v", w, err)
		}
	}
}

func TestGate(t *testing.T) {
	opts := skilloptGate(t)
	if opts.MaxRatio != 1.1 || opts.MinRunKeys != 3 || !opts.Pairing.CaseSet || !opts.Pairing.Companions || len(opts.Improve) == 0 {
		t.Fatalf("skillopt gate options from CUE = %+v", opts)
	}
	base, cand := gateSpec{trials: 3, target: "old"}, gateSpec{trials: 3, target: "new"}
	baseline := base.run(t, grid{"train1": "PPF", "unseen1": "PPF", "adv1": "PFF"}, nil)

	t.Run("improves within 110%", func(t *testing.T) {
		candidate := cand.run(t, grid{"train1": "PPP", "unseen1": "PPF", "adv1": "PPF"}, nil)
		v, err := Gate(baseline, candidate, opts)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictPass, nil, nil)
		golden(t, "gate_pass", v)
	})
	t.Run("regressions, invalid cells, size", func(t *testing.T) {
		candidate := cand.run(t, grid{"train1": "PPP", "unseen1": "PFF", "adv1": "FFI"}, nil)
		o := opts
		o.MaxRatio = 1.05 // a stricter bound from the caller's CUE
		v, err := Gate(baseline, candidate, o)
		if err != nil {
			t.Fatal(err)
		}
		// taskSuccess 5/9 → 4/8 and validUnseen 0.833 → 0.667 regress;
		// adversarial 0.667 → 0.5 regresses, and with it the pass@k and
		// pass^k of its split and of valid-unseen; fixture (unseen1's)
		// falls; hallucination and invalidRun (lower is better) rise;
		// nothing improves; adv1 has 2 valid run keys; 110 bytes is over
		// 105% of 100.
		expect(t, v, VerdictFail, []string{
			"INVALID-RUN candidate",
			"NON-REGRESSION taskSuccess", "NON-REGRESSION validUnseen", "NON-REGRESSION adversarial",
			"NON-REGRESSION fixture", "NON-REGRESSION hallucination", "NON-REGRESSION invalidRun",
			"NON-REGRESSION passAtK.adversarial", "NON-REGRESSION passAtK.valid-unseen", "NON-REGRESSION passHatK.adversarial", "NON-REGRESSION passHatK.valid-unseen",
			"NO-IMPROVEMENT", "RUN-KEYS candidate adv1", "SKILL-SIZE",
		}, nil)
		golden(t, "gate_fail", v)
	})
	t.Run("equal needs allowEqual", func(t *testing.T) {
		o := opts
		o.BaselineArm, o.CandidateArm = "skill", "skill"
		v, err := Gate(baseline, baseline, o)
		refused(t, err, "baseline and candidate are the same arm of the same plan",
			"the candidate arm skill installs the baseline arm's cl unchanged (revision "+plan.Short(baseline.Plan.Skills["old"].Digest)+"): no variant to gate")
		same := cand.run(t, grid{"train1": "PPF", "unseen1": "PPF", "adv1": "PFF"}, nil)
		if v, err = Gate(baseline, same, opts); err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictFail, []string{"NO-IMPROVEMENT"}, nil)
		o = opts
		o.AllowEqual = true
		v, _ = Gate(baseline, same, o)
		expect(t, v, VerdictPass, nil, nil)
	})
	t.Run("a no-skill baseline is not size comparable", func(t *testing.T) {
		none := gateSpec{trials: 3}.run(t, grid{"train1": "FFF", "unseen1": "PFF", "adv1": "FFF"}, nil)
		candidate := cand.run(t, grid{"train1": "PPP", "unseen1": "PPF", "adv1": "PPF"}, nil)
		v, err := Gate(none, candidate, opts)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictPass, nil, nil)
		if size := rule(t, v, "skillSize"); !size.Met || strings.Join(size.Flags, ",") != "sizeComparable=false" {
			t.Errorf("skillSize = %+v", size)
		}
		_, err = Gate(candidate, none, opts)
		refused(t, err, "the candidate arm skill installs no skill")
	})
	t.Run("a no-skill baseline is not judged on skill routing", func(t *testing.T) {
		// The baseline routes to nothing: its precisions and recalls are
		// vacuously 1, its skill never opened. The candidate routes to a
		// skill not required and misses a required reference: 1 → 0 on
		// every routing family, which a side without a skill cannot have.
		none := gateSpec{trials: 3}.run(t, grid{"train1": "FFF", "unseen1": "PFF", "adv1": "FFF"}, nil)
		candidate := cand.run(t, grid{"train1": "PPP", "unseen1": "PPF", "adv1": "PPF"}, func(r *grade.CellResult) {
			r.Routing.Skills = grade.RoutingTally{FP: 1, FN: 1}
			r.Routing.References = grade.RoutingTally{FP: 1, FN: 1}
		})
		for _, m := range []string{MetricSkillPrecision, MetricSkillRecall, MetricReferencePrecision, MetricReferenceRecall} {
			if b, c := none.Report.Arms[0].Metrics[m], candidate.Report.Arms[0].Metrics[m]; b.Value != 1 || c.Value != 0 {
				t.Fatalf("%s: baseline %v, candidate %v; want 1 and 0", m, b, c)
			}
		}
		v, err := Gate(none, candidate, opts)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictPass, nil, nil)
		// Both installing a skill, the same fall regresses.
		routed := cand.run(t, grid{"train1": "PPF", "unseen1": "PPF", "adv1": "PFF"}, func(r *grade.CellResult) {
			r.Routing.Skills = grade.RoutingTally{FP: 1, FN: 1}
		})
		o := opts
		o.AllowEqual = true
		v, err = Gate(baseline, routed, o)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, v, VerdictFail, []string{"NON-REGRESSION skillPrecision", "NON-REGRESSION skillRecall"}, nil)
	})
	t.Run("one run key needs allowSingleRun", func(t *testing.T) {
		b := gateSpec{trials: 1, target: "old"}.run(t, grid{"train1": "F", "unseen1": "P", "adv1": "F"}, nil)
		c := gateSpec{trials: 1, target: "new"}.run(t, grid{"train1": "P", "unseen1": "P", "adv1": "F"}, nil)
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

// TestGateProtectsLowerIsBetter: a rate of failures regresses when it
// rises, even when everything else improves.
func TestGateProtectsLowerIsBetter(t *testing.T) {
	opts := skilloptGate(t)
	base, cand := gateSpec{trials: 3, target: "old"}, gateSpec{trials: 3, target: "new"}
	// Every cell holds one authored negative expectation; the candidate
	// violates it in two cells, the baseline in none.
	negative := func(violated ...string) func(*grade.CellResult) {
		return func(r *grade.CellResult) {
			passed := true
			for _, id := range violated {
				if r.Cell == id {
					passed = false
				}
			}
			r.Checks = append(r.Checks, grade.CheckResult{Name: "file notes.md notContains secret", Kind: grade.CheckFile, Negative: true, Passed: passed})
		}
	}
	g := grid{"train1": "PPF", "unseen1": "PPF", "adv1": "PFF"}
	baseline := base.run(t, g, negative())
	candidate := cand.run(t, grid{"train1": "PPP", "unseen1": "PPP", "adv1": "PPF"}, negative("train1/skill/1", "adv1/skill/3"))
	if b, c := baseline.Report.Arms[0].Metrics[MetricProhibitedOutcome], candidate.Report.Arms[0].Metrics[MetricProhibitedOutcome]; b.Value != 0 || c.Value != 2.0/9 {
		t.Fatalf("prohibitedOutcome %v → %v", b, c)
	}
	v, err := Gate(baseline, candidate, opts)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, v, VerdictFail, []string{"NON-REGRESSION prohibitedOutcome"}, nil)
	if d := rule(t, v, "nonRegression").Detail; !strings.Contains(d, "prohibitedOutcome 0.0000 → 0.2222") {
		t.Errorf("nonRegression detail: %s", d)
	}
	// The same figures the other way round are an improvement.
	v, err = Gate(gateSpec{trials: 3, target: "old"}.run(t, g, negative("train1/skill/1", "adv1/skill/3")), cand.run(t, grid{"train1": "PPP", "unseen1": "PPP", "adv1": "PPF"}, negative()), opts)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, v, VerdictPass, nil, nil)
	for _, m := range []string{MetricHallucination, MetricProhibitedOutcome, MetricInvalidRun} {
		if d, ok := MetricDirection(m); !ok || d != DirectionLower {
			t.Errorf("%s: direction %q", m, d)
		}
	}
	if d, ok := MetricDirection("passAtK.validation"); !ok || d != DirectionHigher {
		t.Errorf("passAtK.validation: direction %q", d)
	}
}

func TestGateRefusesUnpairedRuns(t *testing.T) {
	opts := skilloptGate(t)
	g := grid{"train1": "PPF", "unseen1": "PPF", "adv1": "PFF"}
	baseline := gateSpec{trials: 3, target: "old", style: "v1"}.run(t, g, nil)

	t.Run("a held-out case edited under the same ID", func(t *testing.T) {
		edited := strings.Replace(skilloptCases,
			`unseen1: {prompt: "p", split: "valid-unseen", fixture: "fixtures/repo", routing: {}, assert: [], rubric: []}`,
			`unseen1: {prompt: "an easier task", split: "valid-unseen", fixture: "fixtures/repo", routing: {}, assert: [{answer: contains: "ok"}], rubric: []}`, 1)
		if edited == skilloptCases {
			t.Fatal("the case did not change")
		}
		candidate := gateSpec{trials: 3, target: "new", style: "v1", cases: edited}.run(t, grid{"train1": "PPP", "unseen1": "PPP", "adv1": "PPF"}, nil)
		_, err := Gate(baseline, candidate, opts)
		refused(t, err, "case unseen1: prompt, assert differ")
		if !strings.Contains(err.Error(), "case-set digest differs: ") {
			t.Errorf("no case-set line:\n%v", err)
		}
		// Switched off by the pairing data, the condition is not checked.
		o := opts
		o.Pairing.CaseSet = false
		if _, err := Gate(baseline, candidate, o); err != nil {
			t.Errorf("caseSet off: %v", err)
		}
	})
	t.Run("a companion at another revision", func(t *testing.T) {
		candidate := gateSpec{trials: 3, target: "new", style: "v2"}.run(t, g, nil)
		_, err := Gate(baseline, candidate, opts)
		refused(t, err, "the candidate arm skill changes 2 skills (cl, style): name the target, the others are companions that must not change")
		o := opts
		o.Target = "cl"
		_, err = Gate(baseline, candidate, o)
		b, c := baseline.Plan.Skills["style"].Digest, candidate.Plan.Skills["style"].Digest
		refused(t, err, fmt.Sprintf("companion style: revision %s and %s", plan.Short(b), plan.Short(c)))
		without := gateSpec{trials: 3, target: "new"}.run(t, g, nil)
		_, err = Gate(baseline, without, opts)
		refused(t, err, fmt.Sprintf("companion style only in the baseline (revision %s)", plan.Short(b)))
	})
	t.Run("suite, phase, agent, judge, trials, cases", func(t *testing.T) {
		cases := strings.Replace(skilloptCases, "adv1:", "adv2:", 1)
		candidate := gateSpec{name: "other", trials: 2, target: "new", style: "v1", cases: cases,
			agent: `, model: "m2"`, judge: `{provider: "command", command: ["true"]}`}.run(t, grid{"train1": "PP", "unseen1": "PP", "adv2": "PP"}, nil)
		_, err := Gate(baseline, candidate, opts)
		refused(t, err,
			`benchmark differs: suite "gate" and "other"`,
			`agent model differs: "" and "m2"`,
			`agent configuration differs: "`+plan.Short(baseline.Plan.Agent.Digest)+`" and "`+plan.Short(candidate.Plan.Agent.Digest)+`"`,
			"judge differs: only the candidate has one",
			"case adv1 only in the baseline", "case adv2 only in the candidate",
			"trials differ: 3 and 2", "run count differs: 9 and 6 cells",
			"case train1: run keys differ: trials [1 2 3] and [1 2]",
		)
	})
	t.Run("observed identity", func(t *testing.T) {
		candidate := gateSpec{trials: 3, target: "new", style: "v1"}.run(t, g, nil)
		b, c := baseline, candidate
		br, cr := *b.Report, *c.Report
		br.Arms = append([]ArmReport{}, br.Arms...)
		cr.Arms = append([]ArmReport{}, cr.Arms...)
		br.Arms[0].Observed = ObservedIdentity{Models: []string{"m-1"}, CLIVersions: []string{"2.0.1"}, Git: []plan.GitRevision{{Revision: "aaa"}}}
		cr.Arms[0].Observed = ObservedIdentity{Models: []string{"m-1", "m-2"}, CLIVersions: []string{"2.0.2"}, Git: []plan.GitRevision{{Revision: "bbb", Dirty: true}}}
		b.Report, c.Report = &br, &cr
		_, err := Gate(b, c, opts)
		refused(t, err, "model answered differs: m-1 and m-1, m-2", "agent CLI version (transcript) differs: 2.0.1 and 2.0.2", "git revision differs: aaa and bbb")
	})
	t.Run("metric families and samples", func(t *testing.T) {
		cases := skilloptCases + "\n\t\tmd1: {prompt: \"p\", split: \"train\", tags: [\"markdown\"], routing: {}, assert: [], rubric: []}"
		b := gateSpec{trials: 3, target: "old", style: "v1", cases: cases}.run(t, grid{"train1": "PPF", "unseen1": "PPF", "adv1": "PFF", "md1": "PPP"}, nil)
		c := gateSpec{trials: 3, target: "new", style: "v1"}.run(t, g, nil)
		o := opts
		o.Pairing.CaseSet, o.Pairing.RunKeys = false, false
		_, err := Gate(b, c, o)
		refused(t, err, "metric markdownPreservation only in the baseline", "metric taskSuccess samples differ: 12 and 9", "metric train samples differ: 6 and 3")
	})
	t.Run("the target and its reference", func(t *testing.T) {
		candidate := gateSpec{trials: 3, target: "new", style: "v1"}.run(t, g, nil)
		o := opts
		o.Reference = "references/format.md"
		_, err := Gate(baseline, candidate, o)
		refused(t, err, "target reference references/format.md is not a file of the candidate's cl")
		o.Reference = "SKILL.md"
		if _, err := Gate(baseline, candidate, o); err != nil {
			t.Errorf("the target differs at SKILL.md only: %v", err)
		}
		o.Target = "style"
		_, err = Gate(baseline, candidate, o)
		refused(t, err, "companion cl: revision "+plan.Short(baseline.Plan.Skills["old"].Digest)+" and "+plan.Short(candidate.Plan.Skills["new"].Digest))
		o.Target = "gone"
		_, err = Gate(baseline, candidate, o)
		refused(t, err, "the candidate arm skill does not install the target gone")
	})
	t.Run("arms", func(t *testing.T) {
		candidate := gateSpec{trials: 3, target: "new", style: "v1"}.run(t, g, nil)
		o := opts
		o.BaselineArm = "gone"
		if _, err := Gate(baseline, candidate, o); err == nil || !strings.Contains(err.Error(), "the baseline run has no arm gone") {
			t.Errorf("a missing arm: %v", err)
		}
		if _, err := Gate(baseline, candidate, GateOptions{MaxRatio: 1.1}); err == nil || !strings.Contains(err.Error(), "MinRunKeys") {
			t.Errorf("no thresholds: %v", err)
		}
	})
}
