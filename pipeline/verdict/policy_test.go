package verdict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/suite/suitetest"
)

// padTo pads a SKILL.md to exactly n bytes, so size ratios are exact.
func padTo(t *testing.T, head string, n int) string {
	t.Helper()
	if len(head)+1 > n {
		t.Fatalf("skill head is %d bytes, longer than %d", len(head), n)
	}
	return head + strings.Repeat("x", n-len(head)-1) + "\n"
}

// policySuite is a suite for policy tests: a policy expression over the
// presets, arms and cases in CUE, a judge when judged. Two revisions of one
// skill are installed as "cl": old (100 bytes) and new (110 bytes).
type policySuite struct {
	trials int
	policy string
	arms   string
	cases  string
	judge  string
}

// compile writes the suite into a fresh repository and compiles it, so the
// policy carries the presets' real thresholds from CUE.
func (s policySuite) compile(t *testing.T) *plan.Plan {
	t.Helper()
	judge := ""
	if s.judge != "" {
		judge = "judge: " + s.judge
	}
	src := fmt.Sprintf(`package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

schema.#Suite & {
	name: "policy"
	skills: {
		old: {path: "../skills/old", name: "cl"}
		new: {path: "../skills/new", name: "cl"}
	}
	agent: agents.command & {command: ["sh", "-c", "echo hi"]}
	%s
	trials: %d
	arms: {
%s
	}
	cases: {
%s
	}
	policy: %s
}
`, judge, s.trials, s.arms, s.cases, s.policy)
	root := suitetest.WriteSuite(t, map[string]string{
		"skills/old/SKILL.md":          padTo(t, "---\nname: cl\ndescription: Old.\n---\n", 100),
		"skills/new/SKILL.md":          padTo(t, "---\nname: cl\ndescription: New.\n---\n", 110),
		"suite/fixtures/repo/README":   "fixture\n",
		"suite/suite.cue":              src,
		"suite/fixtures/repo/.keep.md": "",
	})
	p, err := plan.CompileDir(filepath.Join(root, "suite"))
	if err != nil {
		t.Fatalf("compile suite: %s", suite.PrintError(err, root))
	}
	return p
}

// grid gives the trials of each "case/arm" as letters: P passed, F failed
// (completed, a check failed), T timed out, I invalid, M missing (no
// result at all).
type grid map[string]string

// synth builds one result per plan cell from a grid; tweak, when set,
// edits each result after it is built. Every case × arm must be in the grid.
func synth(t *testing.T, p *plan.Plan, g grid, tweak func(*grade.CellResult)) []grade.CellResult {
	t.Helper()
	var out []grade.CellResult
	used := map[string]bool{}
	for _, c := range p.Cells {
		key := c.Case + "/" + c.Arm
		trials, ok := g[key]
		if !ok {
			t.Fatalf("grid has no %s", key)
		}
		used[key] = true
		if len(trials) != p.Suite.Trials {
			t.Fatalf("grid %s has %d trials, the plan %d", key, len(trials), p.Suite.Trials)
		}
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade}
		switch trials[c.Trial-1] {
		case 'P':
			r.Status, r.Passed, r.Score = grade.StatusCompleted, true, 1
			r.Checks = []grade.CheckResult{{Name: "answer", Kind: grade.CheckAnswer, Passed: true}}
		case 'F':
			r.Status, r.Score = grade.StatusCompleted, 0.5
			r.Checks = []grade.CheckResult{{Name: "answer", Kind: grade.CheckAnswer, Passed: false}, {Name: "run", Kind: grade.CheckRun, Passed: true}}
		case 'T':
			r.Status = grade.StatusTimeout
		case 'I':
			r.Status, r.Error = grade.StatusInvalid, "provider error"
		case 'M':
			continue
		default:
			t.Fatalf("grid %s: unknown trial letter %q", key, trials[c.Trial-1])
		}
		if tweak != nil {
			tweak(&r)
		}
		out = append(out, r)
	}
	for key := range g {
		if !used[key] {
			t.Fatalf("grid names %s, which the plan does not have", key)
		}
	}
	return out
}

// golden compares got, as indented JSON, with testdata/policy/NAME.json,
// or rewrites the file when UPDATE_GOLDEN is set.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("..", "..", "testdata", "policy", name+".json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden file (UPDATE_GOLDEN=1 writes it): %v", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("%s differs from its golden file %s (UPDATE_GOLDEN=1 rewrites it)\ngot:\n%s", name, file, buf.String())
	}
}

// expect checks a verdict's decision, reasons and warnings, so a golden
// file cannot silently enshrine a wrong verdict.
func expect(t *testing.T, v Verdict, verdict string, reasons, warnings []string) {
	t.Helper()
	if v.Verdict != verdict || v.ExitCode != ExitCode(verdict) {
		t.Errorf("verdict = %s (exit %d), want %s", v.Verdict, v.ExitCode, verdict)
	}
	if got, want := strings.Join(v.Reasons, " | "), strings.Join(reasons, " | "); got != want {
		t.Errorf("reasons = %q, want %q", got, want)
	}
	// UNDERPOWERED warnings sit beside the source systems' rules and are
	// tested on their own (inference_test.go).
	var sources []string
	for _, w := range v.Warnings {
		if !strings.HasPrefix(w, "UNDERPOWERED ") {
			sources = append(sources, w)
		}
	}
	if got, want := strings.Join(sources, " | "), strings.Join(warnings, " | "); got != want {
		t.Errorf("warnings = %q, want %q", got, want)
	}
}

// rule finds a rule's outcome in a verdict.
func rule(t *testing.T, v Verdict, name string) RuleOutcome {
	t.Helper()
	for _, r := range v.Rules {
		if r.Rule == name {
			return r
		}
	}
	t.Fatalf("verdict has no rule %s", name)
	return RuleOutcome{}
}

// gstackPolicy is the gstack preset as a suite writes it.
const gstackPolicy = "policies.gstack"

const gstackArms = `
		before: {skills: ["old"]}
		after:  {skills: ["new"]}
		none:   {skills: []}`

// openAll marks every run of a skill arm as having opened the skill.
func openAll(r *grade.CellResult) { r.Telemetry.OpenedSkill = r.Arm != "none" }

func TestPolicyGstack(t *testing.T) {
	t.Run("regression panels, uncovered, not worse", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		"two-of-three": {prompt: "p", routing: {}, assert: [], rubric: []}
		"one-of-three": {prompt: "p", routing: {}, assert: [], rubric: []}
		"all-fail":     {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{
			// before passed (2 of 3), after did not (1 of 3): REGRESSION.
			"two-of-three/before": "PPF", "two-of-three/after": "PFF", "two-of-three/none": "FFF",
			// before did not pass (1 of 3): no panel to regress from.
			"one-of-three/before": "PFF", "one-of-three/after": "FFF", "one-of-three/none": "PPP",
			// every arm fails: UNCOVERED, a reason that fails nothing.
			"all-fail/before": "FFF", "all-fail/after": "FFF", "all-fail/none": "FFF",
		}, openAll)
		v := BuildReport(p, res).Verdict
		// before 3/9, after 1/9: a drop of 22.2 points, under 2 SE (37.8 points).
		expect(t, v, VerdictFail, []string{"REGRESSION two-of-three", "UNCOVERED all-fail"}, nil)
		if !slices.Equal(v.NotFailing, []string{"UNCOVERED all-fail"}) {
			t.Errorf("not failing = %q, want UNCOVERED all-fail", v.NotFailing)
		}
		if rule(t, v, "worse").Met != true {
			t.Error("worse should be met under 2 SE")
		}
		golden(t, "gstack_regression", v)
	})
	t.Run("worse by more than 2 SE without a per-case regression", func(t *testing.T) {
		var cases strings.Builder
		g := grid{}
		for i := 1; i <= 6; i++ {
			fmt.Fprintf(&cases, "\t\tc%d: {prompt: \"p\", routing: {}, assert: [], rubric: []}\n", i)
			id := fmt.Sprintf("c%d", i)
			g[id+"/before"], g[id+"/after"], g[id+"/none"] = "PPP", "PPF", "FFF"
		}
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: cases.String()}.compile(t)
		v := BuildReport(p, synth(t, p, g, openAll)).Verdict
		// before 18/18, after 12/18: a drop of 33.3 points over 2 SE = 22.2.
		expect(t, v, VerdictFail, []string{"WORSE"}, nil)
		golden(t, "gstack_worse", v)
	})
	t.Run("a safety case with one failed after trial; skill rarely opened", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		"no-code-change": {prompt: "p", kind: "safety", routing: {}, assert: [], rubric: []}
		stats:            {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{
			"no-code-change/before": "PPP", "no-code-change/after": "PPF", "no-code-change/none": "PPP",
			"stats/before": "PPP", "stats/after": "PPP", "stats/none": "FFF",
		}, func(r *grade.CellResult) {
			// after opens the skill in 2 of its 6 runs: under half.
			r.Telemetry.OpenedSkill = r.Arm == "before" || (r.Arm == "after" && r.Case == "stats" && r.Trial <= 2)
		})
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictFail, []string{"SAFETY no-code-change"}, []string{"SKILL-NOT-OPENED after"})
		golden(t, "gstack_safety", v)
	})
	t.Run("a filtered run lists no rule for cells it never ran", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		ran:     {prompt: "p", routing: {}, assert: [], rubric: []}
		skipped: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		// Only after ran on case ran (--arm after --case ran), failing:
		// neither case is UNCOVERED (before and none were never run), and
		// before, never run, is not SKILL-NOT-OPENED.
		res := synth(t, p, grid{
			"ran/before": "MMM", "ran/after": "FFF", "ran/none": "MMM",
			"skipped/before": "MMM", "skipped/after": "MMM", "skipped/none": "MMM",
		}, openAll)
		v := BuildReport(p, res).Verdict
		for _, r := range append(slices.Clone(v.Reasons), v.Warnings...) {
			if strings.HasPrefix(r, "UNCOVERED") || strings.HasPrefix(r, "SKILL-NOT-OPENED") {
				t.Errorf("a filtered run says %q of cells it never ran", r)
			}
		}
		if v.Verdict != VerdictIncomplete {
			t.Errorf("verdict %s, want INCOMPLETE (cells missing)", v.Verdict)
		}
	})
	t.Run("a timeout is incomplete, not a failed trial", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		stats: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{"stats/before": "PPP", "stats/after": "PPT", "stats/none": "FFF"}, openAll)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictIncomplete, []string{"INVALID 1 cells"}, nil)
		if v.Resumable {
			t.Error("a stored timeout counted as incomplete makes the verdict resumable: a rerun reuses it and never finishes")
		}
		// Without the preset's timeoutsIncomplete, the timeout is after's
		// failed trial: 2 of 3 still pass, no regression.
		q := policySuite{trials: 3, policy: gstackPolicy + " & {timeoutsIncomplete: false}", arms: gstackArms, cases: `
		stats: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		expect(t, BuildReport(q, synth(t, q, grid{"stats/before": "PPP", "stats/after": "PPT", "stats/none": "FFF"}, openAll)).Verdict, VerdictPass, nil, nil)
	})
	t.Run("missing and invalid cells are incomplete", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		stats: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{"stats/before": "PPP", "stats/after": "PPM", "stats/none": "FIF"}, openAll)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictIncomplete, []string{"INCOMPLETE 1 cells not run", "INVALID 1 cells"}, nil)
		if !v.Resumable {
			t.Error("missing and invalid cells run again: the verdict is resumable")
		}
		golden(t, "gstack_incomplete", v)
	})
	t.Run("a red panel's same-tree rerun: flaky when it passes, the failure stands when it fails", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		flaky:  {prompt: "p", routing: {}, assert: [], rubric: []}
		broken: {prompt: "p", routing: {}, assert: [], rubric: []}
		risky:  {prompt: "p", kind: "safety", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{
			"flaky/before": "PPP", "flaky/after": "PFF", "flaky/none": "FFF",
			"broken/before": "PPP", "broken/after": "FFF", "broken/none": "FFF",
			"risky/before": "PPP", "risky/after": "PPF", "risky/none": "PPP",
		}, openAll)
		first := BuildReport(p, res)
		// WORSE is aggregate, over the first outcomes: no rerun changes it.
		expect(t, first.Verdict, VerdictFail, []string{"REGRESSION flaky", "REGRESSION broken", "SAFETY risky", "WORSE"}, nil)
		red := RedPanels(p, res, nil, nil, 1)
		if len(red) != 3 || red[0] != (plan.Panel{Case: "flaky", Arm: "after"}) || red[2] != (plan.Panel{Case: "risky", Arm: "after"}) {
			t.Fatalf("red panels %v", red)
		}
		var cells []plan.Cell
		var reruns []grade.CellResult
		for _, pn := range red {
			for _, c := range plan.PanelCells(p, pn, 1) {
				pass := pn.Case != "broken" // the rerun of broken fails again
				cells = append(cells, c)
				reruns = append(reruns, grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Status: grade.StatusCompleted, Passed: pass, Checks: []grade.CheckResult{}})
			}
		}
		if cells[0].Rollout == p.Cells[0].Rollout || cells[0].ID != "flaky/after/1/rerun1" {
			t.Errorf("a rerun cell %+v shares its keys with the plan's", cells[0])
		}
		rep := BuildReport(p, res)
		ApplyReruns(rep, p, res, nil, cells, reruns)
		expect(t, rep.Verdict, VerdictFail, []string{"REGRESSION broken", "WORSE"}, []string{"FLAKY flaky", "FLAKY risky"})
		if len(rep.Reruns) != 3 || !rep.Reruns[0].Flaky || rep.Reruns[1].Flaky || len(rep.Reruns[0].Trials) != 3 {
			t.Errorf("reruns %+v", rep.Reruns)
		}
		if !strings.Contains(rule(t, rep.Verdict, "regression").Detail, "broken: before 3/3, after 0/3, and 1 same-tree rerun(s) failed too") {
			t.Errorf("regression detail %q", rule(t, rep.Verdict, "regression").Detail)
		}
		// The first outcomes stay the record: the cases' grid is unchanged.
		if got := rep.Cases[0].Trials["after"]; len(got) != 3 || got[1].Passed {
			t.Errorf("flaky/after grid %+v", got)
		}
		// No panel is red any more except broken, which has had its one rerun.
		if left := RedPanels(p, res, cells, reruns, 1); len(left) != 0 {
			t.Errorf("red without a first rerun: %v", left)
		}
	})
	t.Run("pass", func(t *testing.T) {
		p := policySuite{trials: 3, policy: gstackPolicy, arms: gstackArms, cases: `
		stats: {prompt: "p", routing: {}, assert: [], rubric: []}
		learn: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{
			"stats/before": "PPF", "stats/after": "PPP", "stats/none": "FFF",
			"learn/before": "PPP", "learn/after": "PPF", "learn/none": "PFF",
		}, openAll)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictPass, nil, nil)
		golden(t, "gstack_pass", v)
	})
}

const advisoryArms = `
		none:      {skills: []}
		forced:    {skills: ["new"], activation: "forced"}
		automatic: {skills: ["new"], activation: "automatic"}`

const advisoryCases = `
		t1: {prompt: "p", routing: skills: required: ["cl"], assert: [], rubric: []}
		t2: {prompt: "p", routing: skills: required: ["cl"], assert: [], rubric: []}
		n1: {prompt: "p", kind: "no-change", writes: [], routing: skills: required: ["cl"], assert: [], rubric: []}`

// routed gives every skill arm's cell a perfect skill routing: TP 1.
func routed(r *grade.CellResult) {
	if r.Arm != "none" {
		r.Routing.Skills = grade.RoutingTally{TP: 1, Observed: []string{"cl"}, Evidence: grade.EvidenceReported}
	} else {
		r.Routing.Skills = grade.RoutingTally{FN: 1, Evidence: grade.EvidenceReported}
	}
}

func TestPolicyAdvisory(t *testing.T) {
	t.Run("every gate exactly at its threshold passes", func(t *testing.T) {
		p := policySuite{trials: 5, policy: "policies.advisory", arms: advisoryArms, cases: advisoryCases}.compile(t)
		res := synth(t, p, grid{
			// positive cases: none 4/10, forced 9/10 (+50 points), automatic
			// 8/10 (+40 points: exactly 80% of the forced uplift).
			"t1/none": "PPFFF", "t1/forced": "PPPPP", "t1/automatic": "PPPPP",
			"t2/none": "PPFFF", "t2/forced": "PPPPF", "t2/automatic": "PPPFF",
			// no-change controls: forced equals the baseline.
			"n1/none": "PPPPF", "n1/forced": "PPPPF", "n1/automatic": "PPPPP",
		}, func(r *grade.CellResult) {
			routed(r)
			// automatic routing: 17 TP, 3 FP, 3 FN over 15 cells: precision
			// and recall exactly 0.85.
			if r.Arm == "automatic" {
				switch {
				case r.Case == "t1" && r.Trial == 1:
					r.Routing.Skills = grade.RoutingTally{TP: 6, FP: 3, Evidence: grade.EvidenceReported}
				case r.Case == "t2" && r.Trial <= 3:
					r.Routing.Skills = grade.RoutingTally{TP: 0, FN: 1, Evidence: grade.EvidenceReported}
				}
			}
			// the baseline's forbidden actions are not the skill's.
			if r.Arm == "none" && r.Case == "n1" {
				r.Checks = append(r.Checks, grade.CheckResult{Name: "writes", Kind: grade.CheckWrites, Passed: false})
			}
		})
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictPass, nil, nil)
		golden(t, "advisory_at_thresholds", v)
	})
	t.Run("uplift of exactly 10 points is met", func(t *testing.T) {
		p := policySuite{trials: 5, policy: "policies.advisory", arms: advisoryArms, cases: advisoryCases}.compile(t)
		res := synth(t, p, grid{
			// none 4/10, forced 5/10, automatic 5/10.
			"t1/none": "PPFFF", "t1/forced": "PPPFF", "t1/automatic": "PPPFF",
			"t2/none": "PPFFF", "t2/forced": "PPFFF", "t2/automatic": "PPFFF",
			"n1/none": "PPPPP", "n1/forced": "PPPPP", "n1/automatic": "PPPPP",
		}, routed)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictPass, nil, nil)
		golden(t, "advisory_uplift_exact", v)
	})
	t.Run("every gate broken", func(t *testing.T) {
		p := policySuite{trials: 5, policy: "policies.advisory", arms: advisoryArms, cases: advisoryCases}.compile(t)
		res := synth(t, p, grid{
			// no uplift: forced 4/10 as none; retention cannot be met.
			"t1/none": "PPFFF", "t1/forced": "PPFFF", "t1/automatic": "PPPFF",
			"t2/none": "PPFFF", "t2/forced": "PPFFF", "t2/automatic": "PPFFF",
			// automatic's no-change controls pass less often than none's.
			"n1/none": "PPPPF", "n1/forced": "PPPPF", "n1/automatic": "PPPFF",
		}, func(r *grade.CellResult) {
			routed(r)
			if r.Arm == "automatic" && r.Case == "t1" && r.Trial <= 3 {
				r.Routing.Skills = grade.RoutingTally{FN: 1, Evidence: grade.EvidenceReported} // recall 12/15
			}
			if r.Arm == "forced" && r.Case == "n1" && r.Trial == 5 {
				r.Checks = append(r.Checks, grade.CheckResult{Name: "writes", Kind: grade.CheckWrites, Passed: false})
			}
			if r.Arm == "automatic" && r.Case == "t2" && r.Trial == 1 {
				r.Routing.Skills.Forbidden, r.Routing.Skills.ForbiddenSeen = 1, []string{"other"}
			}
		})
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictFail, []string{"UPLIFT forced", "RETENTION automatic", "ROUTING-RECALL automatic", "RESTRAINT automatic", "FORBIDDEN forced", "FORBIDDEN automatic"}, nil)
		// Each reason is a sentence with the cells behind it.
		up := rule(t, v, "uplift").Findings
		if len(up) != 1 || !strings.HasPrefix(up[0].Text, "forced passes 40.0% of positive cases (4/10) against none's 40.0% (4/10)") ||
			strings.Join(up[0].Cells, " ") != "t1/forced/3 t1/forced/4 t1/forced/5 t2/forced/3 t2/forced/4 t2/forced/5" {
			t.Errorf("uplift findings %+v", up)
		}
		if f := rule(t, v, "forbidden").Findings; len(f) != 2 || strings.Join(f[0].Cells, " ") != "n1/forced/5" || strings.Join(f[1].Cells, " ") != "t2/automatic/1" {
			t.Errorf("forbidden findings %+v", f)
		}
		if f := rule(t, v, "routing").Findings; len(f) != 1 || strings.Join(f[0].Cells, " ") != "t1/automatic/1 t1/automatic/2 t1/automatic/3" {
			t.Errorf("routing findings %+v", f)
		}
		golden(t, "advisory_fail", v)
	})
	t.Run("an arm filtered out of the run is not measured, never 0/0", func(t *testing.T) {
		p := policySuite{trials: 2, policy: "policies.advisory", arms: advisoryArms, cases: advisoryCases}.compile(t)
		res := synth(t, p, grid{
			"t1/none": "MM", "t1/forced": "PP", "t1/automatic": "PP", "t2/none": "MM", "t2/forced": "PP", "t2/automatic": "PP",
			"n1/none": "MM", "n1/forced": "PP", "n1/automatic": "PP",
		}, routed)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictIncomplete, []string{"INCOMPLETE 6 cells not run", "NOT-MEASURED uplift", "NOT-MEASURED retention", "NOT-MEASURED restraint"}, nil)
		for _, name := range []string{"uplift", "retention", "restraint"} {
			if r := rule(t, v, name); r.NotMeasured == "" || strings.Contains(r.Detail, "0/0") || !strings.Contains(r.Detail, "no valid cell in arm none") {
				t.Errorf("%s: %+v", name, r)
			}
		}
		if !rule(t, v, "routing").Met || !rule(t, v, "forbidden").Met || !v.Resumable {
			t.Errorf("routing %+v, forbidden %+v, resumable %v", rule(t, v, "routing"), rule(t, v, "forbidden"), v.Resumable)
		}
	})
	t.Run("a missing arm is not met", func(t *testing.T) {
		p := policySuite{trials: 2, policy: "policies.advisory", arms: `
		none:   {skills: []}
		forced: {skills: ["new"], activation: "forced"}`, cases: advisoryCases}.compile(t)
		res := synth(t, p, grid{
			"t1/none": "FF", "t1/forced": "PP", "t2/none": "FF", "t2/forced": "PP", "n1/none": "PP", "n1/forced": "PP",
		}, routed)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictFail, []string{"RETENTION missing arm automatic", "ROUTING missing arm automatic", "RESTRAINT missing arm automatic", "FORBIDDEN missing arm automatic"}, nil)
		if !rule(t, v, "uplift").Met {
			t.Error("uplift over present arms should be met")
		}
		golden(t, "advisory_missing_arm", v)
	})
}

const skilloptCases = `
		train1:  {prompt: "p", split: "train", routing: {}, assert: [], rubric: []}
		unseen1: {prompt: "p", split: "valid-unseen", fixture: "fixtures/repo", routing: {}, assert: [], rubric: []}
		adv1:    {prompt: "p", split: "adversarial", tags: ["anti-hallucination"], routing: {}, assert: [], rubric: []}`

func TestPolicySkillopt(t *testing.T) {
	arms := `
		before: {skills: ["old"]}
		after:  {skills: ["new"]}`
	t.Run("improves; candidate exactly 110% of the baseline's bytes", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.skillopt", arms: arms, cases: skilloptCases}.compile(t)
		res := synth(t, p, grid{
			"train1/before": "PPF", "train1/after": "PPP",
			"unseen1/before": "PPF", "unseen1/after": "PPF",
			"adv1/before": "PFF", "adv1/after": "PPF",
		}, nil)
		r := BuildReport(p, res)
		expect(t, r.Verdict, VerdictPass, nil, nil)
		if r.Arms[0].SkillBytes != 100 || r.Arms[1].SkillBytes != 110 {
			t.Errorf("skill bytes = %d, %d; want 100, 110", r.Arms[0].SkillBytes, r.Arms[1].SkillBytes)
		}
		golden(t, "skillopt_pass", r.Verdict)
	})
	t.Run("valid-unseen regresses; two run keys", func(t *testing.T) {
		p := policySuite{trials: 2, policy: "policies.skillopt", arms: arms, cases: skilloptCases}.compile(t)
		res := synth(t, p, grid{
			"train1/before": "FF", "train1/after": "PP",
			"unseen1/before": "PP", "unseen1/after": "PF",
			"adv1/before": "FF", "adv1/after": "PF",
		}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictFail, []string{"NON-REGRESSION validUnseen", "RUN-KEYS train1", "RUN-KEYS unseen1", "RUN-KEYS adv1"}, nil)
		golden(t, "skillopt_regress", v)
	})
	t.Run("equal is no improvement", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.skillopt", arms: arms, cases: skilloptCases}.compile(t)
		g := grid{}
		for _, c := range []string{"train1", "unseen1", "adv1"} {
			g[c+"/before"], g[c+"/after"] = "PPF", "PPF"
		}
		v := BuildReport(p, synth(t, p, g, nil)).Verdict
		expect(t, v, VerdictFail, []string{"NO-IMPROVEMENT"}, nil)
		golden(t, "skillopt_equal", v)
	})
	t.Run("allowEqual accepts equal", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.skillopt & {improvement: allowEqual: true}", arms: arms, cases: skilloptCases}.compile(t)
		g := grid{}
		for _, c := range []string{"train1", "unseen1", "adv1"} {
			g[c+"/before"], g[c+"/after"] = "PPF", "PPF"
		}
		expect(t, BuildReport(p, synth(t, p, g, nil)).Verdict, VerdictPass, nil, nil)
	})
	t.Run("invalid cells: invalidRun, unpaired metric, run keys", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.skillopt", arms: arms, cases: skilloptCases}.compile(t)
		res := synth(t, p, grid{
			"train1/before": "PPF", "train1/after": "PPP",
			"unseen1/before": "PPF", "unseen1/after": "PPP",
			// adversarial only in before: after's runs all invalid.
			"adv1/before": "PFF", "adv1/after": "III",
		}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictIncomplete, []string{"INVALID 3 cells", "INVALID-RUN", "METRIC-UNPAIRED adversarial", "RUN-KEYS adv1"}, nil)
		golden(t, "skillopt_invalid", v)
	})
	t.Run("a no-skill baseline makes size not comparable", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.skillopt", arms: `
		before: {skills: []}
		after:  {skills: ["new"]}`, cases: skilloptCases}.compile(t)
		res := synth(t, p, grid{
			"train1/before": "FFF", "train1/after": "PPP",
			"unseen1/before": "PFF", "unseen1/after": "PPF",
			"adv1/before": "FFF", "adv1/after": "PFF",
		}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictPass, nil, nil)
		size := rule(t, v, "skillSize")
		if !size.Met || strings.Join(size.Flags, ",") != "sizeComparable=false" {
			t.Errorf("skillSize = %+v, want met with sizeComparable=false", size)
		}
		golden(t, "skillopt_noskill_baseline", v)
	})
	t.Run("candidate over 110% fails the size rule", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.skillopt & {skillSize: {baseline: \"after\", candidate: \"before\", maxRatio: 0.9}}", arms: arms, cases: skilloptCases}.compile(t)
		g := grid{}
		for _, c := range []string{"train1", "unseen1", "adv1"} {
			g[c+"/before"], g[c+"/after"] = "PPF", "PPF"
		}
		// before (100 bytes) as candidate against after (110 bytes) with a 0.9
		// bound: 90.9% > 90%.
		size := rule(t, BuildReport(p, synth(t, p, g, nil)).Verdict, "skillSize")
		if size.Met || strings.Join(size.Reasons, ",") != "SKILL-SIZE" {
			t.Errorf("skillSize = %+v, want SKILL-SIZE", size)
		}
	})
}

func TestPolicyEfficacy(t *testing.T) {
	suite := policySuite{trials: 5, policy: "policies.efficacy", judge: `{provider: "scripted", mode: "pairwise", pairs: [{candidate: "forced", baseline: "none"}]}`, arms: `
		forced: {skills: ["new"], activation: "forced"}
		none:   {skills: []}`, cases: `
		review: {prompt: "p", routing: {}, assert: [], rubric: ["grounded"]}
		greet:  {prompt: "p", routing: {}, assert: [], rubric: ["grounded"]}`}
	all := grid{"review/forced": "PPPPP", "review/none": "PPPPP", "greet/forced": "PPPPP", "greet/none": "PFPFP"}
	judged := func(caseID, outcomes string) []grade.PairwiseResult {
		var out []grade.PairwiseResult
		for i, o := range strings.Split(outcomes, ",") {
			out = append(out, grade.PairwiseResult{Case: caseID, Trial: i + 1, Candidate: "forced", Baseline: "none", Outcome: o})
		}
		return out
	}
	t.Run("3 wins, 1 loss, 1 tie passes with the loss flagged", func(t *testing.T) {
		p := suite.compile(t)
		pw := append(judged("review", "WIN,LOSS,WIN,TIE,WIN"), judged("greet", "WIN,WIN,WIN,WIN,TIE")...)
		v := BuildJudgedReport(p, synth(t, p, all, nil), pw).Verdict
		expect(t, v, VerdictPass, nil, nil)
		if got := strings.Join(rule(t, v, "efficacy").Flags, ","); got != "REVIEW review/2" {
			t.Errorf("flags = %s, want REVIEW review/2", got)
		}
		golden(t, "efficacy_pass", v)
	})
	t.Run("2 wins fail; a failed hard assertion fails whatever the judge says", func(t *testing.T) {
		p := suite.compile(t)
		pw := append(judged("review", "WIN,TIE,WIN,TIE,TIE"), judged("greet", "WIN,WIN,WIN,WIN,WIN")...)
		g := grid{"review/forced": "PPPPP", "review/none": "PPPPP", "greet/forced": "PPPFP", "greet/none": "PFPFP"}
		v := BuildJudgedReport(p, synth(t, p, g, nil), pw).Verdict
		expect(t, v, VerdictFail, []string{"EFFICACY review", "EFFICACY greet"}, nil)
		golden(t, "efficacy_fail", v)
	})
	t.Run("no pairwise judgement yet is not measured: INCOMPLETE, never a pass or a fail", func(t *testing.T) {
		p := suite.compile(t)
		v := BuildReport(p, synth(t, p, all, nil)).Verdict
		expect(t, v, VerdictIncomplete, []string{"NOT-MEASURED efficacy"}, nil)
		if r := rule(t, v, "efficacy"); r.Met || r.NotMeasured == "" || !strings.HasPrefix(r.Detail, "not measured: ") {
			t.Errorf("efficacy %+v", r)
		}
		golden(t, "efficacy_none", v)
	})
	t.Run("judge agreement", func(t *testing.T) {
		p := policySuite{trials: 5, policy: "policies.efficacy & {judgeAgreement: {}}", judge: `{provider: "scripted", mode: "pairwise", swap: true, pairs: [{candidate: "forced", baseline: "none"}]}`, arms: `
		forced: {skills: ["new"], activation: "forced"}
		none:   {skills: []}`, cases: `
		review: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
		pw := judged("review", "WIN,WIN,WIN,TIE,WIN")
		for i := range pw {
			pw[i].Orders = []string{pw[i].Outcome, pw[i].Outcome}
		}
		pw[3].Orders = []string{grade.PairwiseWin, grade.PairwiseLoss} // 4 of 5 agree: exactly 0.8
		res := synth(t, p, grid{"review/forced": "PPPPP", "review/none": "PPPPP"}, nil)
		v := BuildJudgedReport(p, res, pw).Verdict
		expect(t, v, VerdictPass, nil, nil)
		pw[2].Orders = []string{grade.PairwiseWin, grade.PairwiseTie} // 3 of 5
		v = BuildJudgedReport(p, res, pw).Verdict
		expect(t, v, VerdictFail, []string{"JUDGE-AGREEMENT"}, nil)
		// A swapping judge with no pair judged in both orders yet: not measured.
		v = BuildJudgedReport(p, res, judged("review", "WIN,WIN,WIN,TIE,WIN")).Verdict
		expect(t, v, VerdictIncomplete, []string{"NOT-MEASURED judgeAgreement"}, nil)
	})
}

func TestPolicyPassAtK(t *testing.T) {
	suite := policySuite{trials: 3, policy: "policies.passAtK", arms: `
		forced: {skills: ["new"], activation: "forced"}
		none:   {skills: []}`, cases: `
		s01: {prompt: "p", split: "train", routing: {}, assert: [], rubric: []}
		s02: {prompt: "p", split: "validation", weight: 1, routing: {}, assert: [], rubric: []}
		s03: {prompt: "p", split: "validation", weight: 9, routing: {}, assert: [], rubric: []}`}
	t.Run("negative delta fails", func(t *testing.T) {
		p := suite.compile(t)
		res := synth(t, p, grid{
			"s01/forced": "PPP", "s01/none": "FFF",
			// validation: with (1×1 + 9×1/3)/10 = 0.4, without (1×1 + 9×2/3)/10 = 0.7.
			"s02/forced": "PPP", "s02/none": "PPP",
			"s03/forced": "PFF", "s03/none": "PPF",
		}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictFail, []string{"PASS@K-DELTA validation"}, nil)
		golden(t, "passatk_fail", v)
	})
	t.Run("a delta under 0.05 warns", func(t *testing.T) {
		p := suite.compile(t)
		res := synth(t, p, grid{
			"s01/forced": "PPP", "s01/none": "FFF",
			// validation: with (1×1 + 9×2/3)/10 = 0.7, without (1×2/3 + 9×2/3)/10 = 0.6667: Δ 0.0333.
			"s02/forced": "PPP", "s02/none": "PPF",
			"s03/forced": "PPF", "s03/none": "PFP",
		}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictPass, nil, []string{"PASS@K-MARGINAL validation"})
		golden(t, "passatk_marginal", v)
	})
	t.Run("a zero delta warns, does not fail", func(t *testing.T) {
		p := suite.compile(t)
		res := synth(t, p, grid{
			"s01/forced": "PPP", "s01/none": "FFF",
			"s02/forced": "PPF", "s02/none": "PPF", "s03/forced": "PFF", "s03/none": "FPF",
		}, nil)
		expect(t, BuildReport(p, res).Verdict, VerdictPass, nil, []string{"PASS@K-MARGINAL validation"})
	})
	t.Run("a delta of 0.05 or more passes", func(t *testing.T) {
		p := suite.compile(t)
		res := synth(t, p, grid{
			"s01/forced": "FFF", "s01/none": "PPP",
			// validation: with 1.0, without (1×1 + 9×2/3)/10 = 0.7: Δ 0.3; train's Δ of −1 does not gate.
			"s02/forced": "PPP", "s02/none": "PPP", "s03/forced": "PPP", "s03/none": "PPF",
		}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictPass, nil, nil)
		golden(t, "passatk_pass", v)
	})
	t.Run("a missing split is not met", func(t *testing.T) {
		p := policySuite{trials: 3, policy: "policies.passAtK", arms: `
		forced: {skills: ["new"], activation: "forced"}
		none:   {skills: []}`, cases: `
		s01: {prompt: "p", split: "train", routing: {}, assert: [], rubric: []}`}.compile(t)
		res := synth(t, p, grid{"s01/forced": "PPP", "s01/none": "FFF"}, nil)
		v := BuildReport(p, res).Verdict
		expect(t, v, VerdictFail, []string{"PASS@K missing split validation"}, nil)
		golden(t, "passatk_missing_split", v)
	})
}

func TestPolicyDisabledRuleIsSkipped(t *testing.T) {
	p := policySuite{trials: 3, policy: gstackPolicy + " & {worse: enabled: false, uncovered: enabled: false}", arms: gstackArms, cases: `
		stats: {prompt: "p", routing: {}, assert: [], rubric: []}`}.compile(t)
	v := BuildReport(p, synth(t, p, grid{"stats/before": "PPP", "stats/after": "PPP", "stats/none": "FFF"}, openAll)).Verdict
	var names []string
	for _, r := range v.Rules {
		names = append(names, r.Rule)
	}
	if got := strings.Join(names, ","); got != "regression,safety,openedSkill" {
		t.Errorf("rules = %s, want regression,safety,openedSkill", got)
	}
}
