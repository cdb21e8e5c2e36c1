package verdict

import (
	"math"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// near reports whether two figures agree to 1e-4 (hand computation).
func near(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestWilson(t *testing.T) {
	for _, c := range []struct {
		s, n   int
		lo, hi float64
	}{
		// p = 0.5, z² = 3.8415: centre 0.5, half-width 0.2634.
		{5, 10, 0.2366, 0.7634},
		// no success: [0, z²/(n+z²)] = [0, 0.2775].
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		// 17/20: centre (0.85 + 0.0960)/1.1921 = 0.7936, half 0.1536.
		{17, 20, 0.6396, 0.9476},
		{0, 0, 0, 1},
	} {
		lo, hi := Wilson(c.s, c.n)
		if !near(lo, c.lo) || !near(hi, c.hi) {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.s, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, _ := Wilson(0, 7); lo != 0 {
		t.Errorf("Wilson(0, 7) lower bound = %g, want exactly 0", lo)
	}
	if _, hi := Wilson(7, 7); hi != 1 {
		t.Errorf("Wilson(7, 7) upper bound = %g, want exactly 1", hi)
	}
}

func TestPassAtKEstimate(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{3, 1, 1, 1.0 / 3},         // k = 1 is the pass rate
		{5, 2, 2, 0.7},             // 1 − C(3,2)/C(5,2) = 1 − 3/10
		{10, 3, 5, 1 - 21.0/252},   // 1 − C(7,5)/C(10,5)
		{200, 10, 10, 0.408548},    // 1 − C(190,10)/C(200,10): large n stays finite
		{3, 1, 3, 1},               // n − c < k: any draw of 3 holds the pass
		{3, 0, 5, 0},               // nothing passed
		{4, 4, 2, 1},               // everything passed
		{0, 0, 1, 0},               // no trial
		{1000, 500, 100, 1 - 0.0},  // C(500,100)/C(1000,100) underflows to ~0 without overflow
		{20, 19, 1, 19.0 / 20.0},   // k = 1 again
		{6, 3, 3, 1 - 1.0/20.0},    // 1 − C(3,3)/C(6,3)
		{6, 2, 4, 1 - 1.0/15.0},    // 1 − C(4,4)/C(6,4)
		{8, 1, 8, 1},               // n − c = 7 < 8
		{8, 0, 8, 0},               // n − c = 8, c = 0
		{5, 5, 5, 1},               // all pass
		{100, 1, 1, 0.01},          // rare pass
		{100, 1, 50, 0.5},          // 1 − C(99,50)/C(100,50) = 1 − 50/100
		{10, 5, 1, 0.5},            // pass rate
		{10, 5, 10, 1},             // n − c = 5 < 10
		{7, 2, 3, 1 - 10.0/35.0},   // 1 − C(5,3)/C(7,3)
		{9, 3, 3, 1 - 20.0/84.0},   // 1 − C(6,3)/C(9,3)
		{12, 4, 4, 1 - 70.0/495.0}, // 1 − C(8,4)/C(12,4)
	} {
		if got := PassAtKEstimate(c.n, c.c, c.k); !near(got, c.want) || math.IsNaN(got) {
			t.Errorf("PassAtKEstimate(%d, %d, %d) = %.6f, want %.6f", c.n, c.c, c.k, got, c.want)
		}
	}
}

func TestPassHatK(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{5, 3, 2, 0.3},            // C(3,2)/C(5,2) = 3/10
		{5, 1, 2, 0},              // fewer passes than k
		{3, 3, 3, 1},              // all pass
		{10, 5, 1, 0.5},           // k = 1 is the pass rate
		{10, 8, 3, 56.0 / 120},    // C(8,3)/C(10,3)
		{2, 2, 3, 1},              // fewer trials than k, all passed
		{2, 1, 3, 0},              // fewer trials than k, not all passed
		{0, 0, 1, 0},              // no trial
		{6, 4, 4, 1.0 / 15.0},     // C(4,4)/C(6,4)
		{9, 6, 2, 15.0 / 36.0},    // C(6,2)/C(9,2)
		{12, 9, 3, 84.0 / 220},    // C(9,3)/C(12,3)
		{100, 99, 50, 50.0 / 100}, // C(99,50)/C(100,50) = 50/100
	} {
		if got := PassHatK(c.n, c.c, c.k); !near(got, c.want) {
			t.Errorf("PassHatK(%d, %d, %d) = %.6f, want %.6f", c.n, c.c, c.k, got, c.want)
		}
	}
}

// metricsSuite has a case per metric source: splits, kinds, tags, a
// fixture; a skill arm and a no-skill arm, and an arm never run.
var metricsSuite = policySuite{trials: 2, policy: "policies.passAtK & {passAtK: k: 2}", arms: `
		forced: {skills: ["new"], activation: "forced"}
		none:   {skills: []}
		ghost:  {skills: ["old"]}`, cases: `
		unseen: {prompt: "p", split: "valid-unseen", fixture: "fixtures/repo", tags: ["markdown"], routing: {}, assert: [], rubric: []}
		adv:    {prompt: "p", split: "adversarial", kind: "composition", tags: ["anti-hallucination", "verification"], routing: {}, assert: [], rubric: []}
		quiet:  {prompt: "p", split: "validation", kind: "no-change", weight: 3, routing: {}, assert: [], rubric: []}`}

func TestArmMetrics(t *testing.T) {
	p := metricsSuite.compile(t)
	in, out := int64(100), int64(40)
	res := synth(t, p, grid{
		"unseen/forced": "PF", "unseen/none": "FF", "unseen/ghost": "MM",
		"adv/forced": "PI", "adv/none": "FT", "adv/ghost": "MM",
		"quiet/forced": "PP", "quiet/none": "PF", "quiet/ghost": "MM",
	}, func(r *grade.CellResult) {
		switch r.Arm {
		case "forced":
			r.Telemetry.OpenedSkill = r.Case != "quiet"
			r.Telemetry.Skills = []grade.RoutingEvent{{Name: "cl", Evidence: grade.EvidenceObserved}}
			r.Telemetry.References = []grade.RoutingEvent{{Name: "cl/references/format.md", Evidence: grade.EvidenceInferred}}
			r.Routing.Skills = grade.RoutingTally{TP: 1, Evidence: grade.EvidenceObserved}
			r.Routing.References = grade.RoutingTally{FP: 1, Evidence: grade.EvidenceInferred}
			// tokens only where the provider reported them.
			if r.Case == "unseen" {
				r.Telemetry.Tokens = &grade.Tokens{Input: in, Output: out}
				in, out = in+100, out+20
			}
		case "none":
			// nothing observed, one expected: precision 1, recall 0.
			r.Routing.Skills = grade.RoutingTally{FN: 1, Evidence: grade.EvidenceUnobservable}
		}
		if r.Case == "adv" && r.Valid() {
			r.Checks = append(r.Checks, grade.CheckResult{Name: "no secrets", Kind: grade.CheckFile, Negative: true, Passed: r.Arm == "forced"})
			r.Routing.References.Forbidden = 1
			if r.Arm == "none" && r.Trial == 1 {
				r.Routing.References.ForbiddenSeen = []string{"cl/references/x.md"}
			}
		}
	})
	r := BuildReport(p, res)
	arms := map[string]ArmReport{}
	for _, a := range r.Arms {
		arms[a.Name] = a
	}
	forced, none, ghost := arms["forced"], arms["none"], arms["ghost"]

	check := func(arm, name string, got map[string]Metric, value float64, samples int) {
		t.Helper()
		m, ok := got[name]
		if !ok {
			t.Errorf("%s: no %s", arm, name)
			return
		}
		if !near(m.Value, value) || m.Samples != samples {
			t.Errorf("%s %s = %.4f (%d samples), want %.4f (%d)", arm, name, m.Value, m.Samples, value, samples)
		}
	}
	absent := func(arm, name string, got map[string]Metric) {
		t.Helper()
		if m, ok := got[name]; ok {
			t.Errorf("%s %s = %+v, want it omitted", arm, name, m)
		}
	}
	// forced: 6 cells, 1 invalid; valid: unseen P F, adv P, quiet P P.
	check("forced", MetricTaskSuccess, forced.Metrics, 4.0/5, 5)
	check("forced", MetricInvalidRun, forced.Metrics, 1.0/6, 6)
	check("forced", MetricValidUnseen, forced.Metrics, 0.75, 2)
	check("forced", "adversarial", forced.Metrics, 1, 1)
	check("forced", "composition", forced.Metrics, 1, 1)
	check("forced", "validation", forced.Metrics, 1, 2)
	check("forced", MetricNoChange, forced.Metrics, 1, 2)
	check("forced", MetricFixture, forced.Metrics, 0.5, 2)
	check("forced", MetricMarkdownPreservation, forced.Metrics, 0.5, 2)
	check("forced", MetricHallucination, forced.Metrics, 0, 1)
	check("forced", MetricVerification, forced.Metrics, 1, 1)
	// adv's valid forced cell: one negative check passed, one forbidden
	// reference not seen: 0 of 2.
	check("forced", MetricProhibitedOutcome, forced.Metrics, 0, 2)
	check("forced", MetricSkillPrecision, forced.Metrics, 1, 5)
	check("forced", MetricSkillRecall, forced.Metrics, 1, 5) // nothing expected
	check("forced", MetricReferencePrecision, forced.Metrics, 0, 5)
	check("forced", MetricOpenedSkill, forced.Metrics, 3.0/5, 5)
	// pass@2 per split: unseen (n 2, c 1) = 1; validation (2, 2) = 1;
	// adversarial (1, 1) = 1 (fewer trials than k). pass^2: unseen 0,
	// validation 1, adversarial 1.
	check("forced", MetricPassAtK+"valid-unseen", forced.Metrics, 1, 2)
	check("forced", MetricPassHatK+"valid-unseen", forced.Metrics, 0, 2)
	check("forced", MetricPassAtK+"validation", forced.Metrics, 1, 2)
	check("forced", MetricPassHatK+"adversarial", forced.Metrics, 1, 1)
	for _, name := range []string{"transfer", MetricFrozen, "train", "validSeen", "safety", "artifact"} {
		absent("forced", name, forced.Metrics)
	}

	// none: valid unseen F F, adv F T, quiet P F.
	check("none", MetricTaskSuccess, none.Metrics, 1.0/6, 6)
	check("none", MetricInvalidRun, none.Metrics, 0, 6)
	check("none", MetricHallucination, none.Metrics, 1, 2)
	// adv: two negative checks failed, two forbidden references, one seen.
	check("none", MetricProhibitedOutcome, none.Metrics, 3.0/4, 4)
	check("none", MetricSkillPrecision, none.Metrics, 1, 6) // nothing observed
	check("none", MetricSkillRecall, none.Metrics, 0, 6)
	// a timed-out cell scores 0: composition mean of 0.5 and 0.
	check("none", "composition", none.Metrics, 0.25, 2)
	absent("none", MetricOpenedSkill, none.Metrics) // installs no skill
	if m := none.Metrics[MetricSkillPrecision]; m.StdErr != nil || m.CI95 != nil {
		t.Errorf("precision over no observation has an error estimate: %+v", m)
	}

	// ghost: every cell missing: no quality metric at all, not even invalidRun.
	if len(ghost.Metrics) != 0 || len(ghost.Cost) != 0 {
		t.Errorf("an arm never run has metrics %v, cost %v; want none", ghost.Metrics, ghost.Cost)
	}
	if ghost.Statuses[grade.StatusMissing] != 6 || ghost.Cells != 6 {
		t.Errorf("ghost statuses = %v (cells %d), want 6 missing", ghost.Statuses, ghost.Cells)
	}

	// rates carry a standard error and a Wilson interval; means a standard
	// error from two samples up, no interval.
	ts := forced.Metrics[MetricTaskSuccess]
	if ts.StdErr == nil || !near(*ts.StdErr, math.Sqrt(0.8*0.2/5)) || ts.CI95 == nil {
		t.Errorf("taskSuccess error estimates = %+v", ts)
	} else if lo, hi := Wilson(4, 5); ts.CI95[0] != lo || ts.CI95[1] != hi {
		t.Errorf("taskSuccess CI95 = %v, want Wilson(4, 5)", *ts.CI95)
	}
	vu := forced.Metrics[MetricValidUnseen]
	// scores 1 and 0.5: sample sd 0.3536, over √2: 0.25.
	if vu.StdErr == nil || !near(*vu.StdErr, 0.25) || vu.CI95 != nil {
		t.Errorf("validUnseen error estimates = %+v, want stderr 0.25 and no interval", vu)
	}
	if adv := forced.Metrics["adversarial"]; adv.StdErr != nil {
		t.Errorf("a mean of one sample has a standard error: %+v", adv)
	}

	// tokens: only the 2 cells that reported them; never a missing count as 0.
	check("forced cost", "tokensInput", forced.Cost, 150, 2)
	check("forced cost", "tokensOutput", forced.Cost, 50, 2)
	check("forced cost", "agentSeconds", forced.Cost, 0, 5)
	absent("none cost", "tokensInput", none.Cost)
	absent("forced cost", "toolCalls", forced.Cost)
	absent("forced cost", "usd", forced.Cost)

	if got := forced.FilesLoaded["cl/SKILL.md"]; got != 5 {
		t.Errorf("forced loaded cl/SKILL.md %d times, want 5", got)
	}
	if got := forced.FilesLoaded["cl/references/format.md"]; got != 5 {
		t.Errorf("forced loaded the reference %d times, want 5", got)
	}
	if forced.Evidence != grade.EvidenceInferred || none.Evidence != grade.EvidenceUnobservable || ghost.Evidence != "" {
		t.Errorf("evidence = %q, %q, %q; want inferred, unobservable, none", forced.Evidence, none.Evidence, ghost.Evidence)
	}
}

func TestBuildReport(t *testing.T) {
	p := metricsSuite.compile(t)
	res := synth(t, p, grid{
		"unseen/forced": "PF", "unseen/none": "FF", "unseen/ghost": "PP",
		"adv/forced": "PI", "adv/none": "FT", "adv/ghost": "PP",
		"quiet/forced": "PP", "quiet/none": "PF", "quiet/ghost": "PM",
	}, nil)
	r := BuildReport(p, res)
	if r.Suite != "policy" || r.Plan != p.Digest || r.Policy != "passAtK" || r.Trials != 2 || r.StandIn != "" {
		t.Errorf("identity = %q %s %q %d %q", r.Suite, r.Plan, r.Policy, r.Trials, r.StandIn)
	}
	if r.Agent.Kind != "command" || r.Agent.Provider != "none" || r.Agent.Digest != p.Agent.Digest || r.Judge != nil {
		t.Errorf("agent = %+v, judge = %+v", r.Agent, r.Judge)
	}
	var names []string
	for _, a := range r.Arms {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, ","); got != "forced,none,ghost" {
		t.Errorf("arms = %s, want plan order", got)
	}
	forced, none, ghost := r.Arms[0], r.Arms[1], r.Arms[2]
	if strings.Join(forced.Skills, ",") != "cl" || forced.Activation != "forced" || forced.SkillBytes != 110 {
		t.Errorf("forced = %v %q %d", forced.Skills, forced.Activation, forced.SkillBytes)
	}
	if none.Skills == nil || len(none.Skills) != 0 || none.Activation != "" || none.SkillBytes != 0 {
		t.Errorf("none = %v %q %d; want no skill, no activation, 0 bytes", none.Skills, none.Activation, none.SkillBytes)
	}
	if ghost.SkillBytes != 100 || ghost.Activation != "automatic" {
		t.Errorf("ghost = %d %q", ghost.SkillBytes, ghost.Activation)
	}
	if forced.Statuses[grade.StatusCompleted] != 5 || forced.Statuses[grade.StatusInvalid] != 1 || none.Statuses[grade.StatusTimeout] != 1 || ghost.Statuses[grade.StatusMissing] != 1 {
		t.Errorf("statuses = %v %v %v", forced.Statuses, none.Statuses, ghost.Statuses)
	}
	var ids []string
	for _, c := range r.Cases {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, ","); got != "unseen,adv,quiet" {
		t.Errorf("cases = %s, want plan order", got)
	}
	quiet := r.Cases[2]
	if quiet.Kind != "no-change" || quiet.Split != "validation" || quiet.Weight != 3 || quiet.Safety {
		t.Errorf("quiet = %+v", quiet)
	}
	unseen := r.Cases[0].Trials["forced"]
	if len(unseen) != 2 || unseen[0].Trial != 1 || !unseen[0].Passed || unseen[1].Passed || strings.Join(unseen[1].Failed, ",") != "answer" || unseen[1].Cell != "unseen/forced/2" {
		t.Errorf("unseen forced trials = %+v", unseen)
	}
	if ts := r.Cases[2].Trials["ghost"]; ts[1].Status != grade.StatusMissing || ts[1].Rollout == "" {
		t.Errorf("a missing cell's outcome = %+v, want status missing with its planned rollout key", ts[1])
	}
	// validation pass@2: forced (2 of 2) and none (1 of 2) are both 1: Δ 0.
	expect(t, r.Verdict, VerdictIncomplete, []string{"INCOMPLETE 1 cells not run", "INVALID 1 cells"}, []string{"PASS@K-MARGINAL validation"})
}
