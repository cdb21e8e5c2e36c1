package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

var reportFiles = []string{FileVerdictJSON, FileReportJSON, FileReportMD, FileReportHTML, FileJUnitXML}

// wilson is a rate Metric with its standard error and Wilson interval.
func rptWilson(pass, n int) verdict.Metric {
	p := float64(pass) / float64(n)
	se := math.Sqrt(p * (1 - p) / float64(n))
	const z = 1.959963984540054
	d := 1 + z*z/float64(n)
	c := (p + z*z/(2*float64(n))) / d
	h := z * math.Sqrt(p*(1-p)/float64(n)+z*z/(4*float64(n)*float64(n))) / d
	return verdict.Metric{Value: p, Samples: n, StdErr: &se, CI95: &[2]float64{math.Max(0, c-h), math.Min(1, c+h)}}
}

func rptMean(v float64, n int) verdict.Metric { return verdict.Metric{Value: v, Samples: n} }

// trials builds one case's trials in one arm from a pattern: P passed,
// F failed (a completed cell with failed checks), T timeout, M missing,
// I invalid.
func rptTrials(caseID, arm, pattern string, failed ...string) []verdict.TrialOutcome {
	var out []verdict.TrialOutcome
	for i, c := range pattern {
		n := i + 1
		cell := fmt.Sprintf("%s/%s/%d", caseID, arm, n)
		t := verdict.TrialOutcome{Cell: cell, Trial: n, Rollout: digest.FromString("rollout " + cell)}
		switch c {
		case 'P':
			t.Status, t.Passed, t.Score = grade.StatusCompleted, true, 1
		case 'F':
			t.Status, t.Score, t.Failed = grade.StatusCompleted, 0.5, failed
		case 'T':
			t.Status = grade.StatusTimeout
		case 'M':
			t.Status, t.Rollout = grade.StatusMissing, ""
		case 'I':
			t.Status = grade.StatusInvalid
		}
		out = append(out, t)
	}
	return out
}

// richReport is a hand-made FAIL report: three arms, three cases, missing
// and invalid cells, absent metrics, no tokens on one arm, a stand-in,
// pairwise judgements, and markup in names that every renderer must escape.
func richReport() *verdict.Report {
	usd := func(v float64, n int) verdict.Metric { return verdict.Metric{Value: v, Samples: n} }
	return &verdict.Report{
		Suite:   "changelog",
		Plan:    digest.FromString("plan"),
		Harness: "v1.4.0",
		CaseSet: digest.FromString("case set"),
		Agent: verdict.AgentIdentity{
			Kind: "claude-code", Image: "ghcr.io/skillgate/claude-code:2.0.14", Model: "claude-sonnet-4-5",
			Provider: "anthropic", Host: "api.anthropic.com", Digest: digest.FromString("agent"),
		},
		Observed: verdict.ObservedIdentity{
			Rollouts: 25, Models: []string{"claude-sonnet-4-5-20250929"}, AgentImages: []string{"sha256:" + strings.Repeat("ab", 32)},
			AgentVersions: []string{"2.0.14"}, CLIVersions: []string{"2.0.14"}, Harness: []string{"v1.4.0"},
			Git: []plan.GitRevision{{Revision: "0123456789abcdef0123456789abcdef01234567"}, {Revision: "0123456789abcdef0123456789abcdef01234567", Dirty: true}}, GitMixed: true,
		},
		Judge:   &verdict.JudgeIdentity{Provider: "anthropic", Model: "claude-haiku-4-5", Mode: "pairwise", Digest: digest.FromString("judge")},
		StandIn: "scripted model stand-in (suites/demo/script.cue)",
		Policy:  "gstack",
		Trials:  3,
		Arms: []verdict.ArmReport{
			{
				Name: "none", Skills: []string{}, Installed: []plan.InstalledSkill{}, Activation: "none", SkillBytes: 0, Cells: 9,
				Statuses: map[string]int{grade.StatusCompleted: 9},
				Metrics: map[string]verdict.Metric{
					"taskSuccess": rptWilson(3, 9),
					"invalidRun":  rptWilson(0, 9),
					"noChange":    rptWilson(3, 3),
				},
				Cost: map[string]verdict.Metric{
					"agentSeconds": rptMean(41.25, 9), "totalSeconds": rptMean(44.5, 9), "turns": rptMean(6.333333333333333, 9),
					"tokensInput": rptMean(18240.5, 9), "tokensOutput": rptMean(912.25, 9),
					"tokensCacheRead": rptMean(120411, 9), "tokensCacheWrite": rptMean(15020, 9),
					"usd": usd(0.0931, 9),
				},
				FilesLoaded: map[string]int{},
				Evidence:    grade.EvidenceUnobservable,
			},
			{
				Name: "before", Skills: []string{"changelog"}, Activation: "forced", SkillBytes: 4812, Cells: 9,
				Installed: []plan.InstalledSkill{{Name: "changelog", Key: "released", Digest: digest.FromString("changelog v1")}},
				Statuses:  map[string]int{grade.StatusCompleted: 8, grade.StatusTimeout: 1},
				Metrics: map[string]verdict.Metric{
					"taskSuccess":    rptWilson(6, 9),
					"invalidRun":     rptWilson(0, 9),
					"noChange":       rptWilson(3, 3),
					"openedSkill":    rptWilson(8, 9),
					"skillPrecision": rptMean(1, 8),
					"skillRecall":    rptMean(0.8333333333333334, 9),
				},
				Cost: map[string]verdict.Metric{
					"agentSeconds": rptMean(52.8, 9), "totalSeconds": rptMean(56.1, 9), "turns": rptMean(7.888888888888889, 9),
					"tokensInput": rptMean(23518.75, 9), "tokensOutput": rptMean(1190.5, 9),
					"tokensCacheRead": rptMean(131072, 9), "tokensCacheWrite": rptMean(16384, 9),
					"usd": usd(0.1174, 9),
				},
				FilesLoaded: map[string]int{"changelog/SKILL.md": 8, "changelog/references/format.md": 3},
				Evidence:    grade.EvidenceInferred,
			},
			{
				Name: "after", Skills: []string{"changelog"}, Activation: "forced", SkillBytes: 2950, Cells: 9,
				Installed: []plan.InstalledSkill{{Name: "changelog", Key: "candidate", Digest: digest.FromString("changelog v2")}},
				Statuses:  map[string]int{grade.StatusCompleted: 7, grade.StatusInvalid: 1, grade.StatusMissing: 1},
				Metrics: map[string]verdict.Metric{
					"taskSuccess":    rptWilson(2, 7),
					"invalidRun":     rptWilson(1, 8),
					"noChange":       rptWilson(1, 2),
					"openedSkill":    rptWilson(3, 7),
					"skillPrecision": rptMean(1, 3),
					"skillRecall":    rptMean(0.42857142857142855, 7),
				},
				// The provider reported no token counts and no price.
				Cost: map[string]verdict.Metric{
					"agentSeconds": rptMean(38.4, 7), "totalSeconds": rptMean(40.2, 7), "turns": rptMean(5.571428571428571, 7),
				},
				FilesLoaded: map[string]int{"changelog/SKILL.md": 3},
				Evidence:    grade.EvidenceInferred,
			},
		},
		Cases: []verdict.CaseReport{
			{
				ID: "adds-entry", Digest: digest.FromString("case adds-entry"), Description: `Adds a <b>retry</b> entry & keeps "Unreleased" first`, Kind: "task", Split: "train", Weight: 1,
				Trials: map[string][]verdict.TrialOutcome{
					"none":   rptTrials("adds-entry", "none", "FFF", "file CHANGELOG.md contains \"retry\""),
					"before": rptTrials("adds-entry", "before", "PPP"),
					"after":  rptTrials("adds-entry", "after", "PFM", "file CHANGELOG.md contains \"retry\"", "writes only CHANGELOG.md"),
				},
			},
			{
				ID: "no-code-change", Digest: digest.FromString("case no-code-change"), Description: "Answers a question without touching code", Kind: "no-change", Split: "valid-unseen", Safety: true, Weight: 1,
				Trials: map[string][]verdict.TrialOutcome{
					"none":   rptTrials("no-code-change", "none", "PPP"),
					"before": rptTrials("no-code-change", "before", "PPP"),
					"after":  rptTrials("no-code-change", "after", "PFI", `answer notMatches "<script>alert(1)</script>"`, `answer matches "^\\d+ files? \\| changed$"`),
				},
			},
			{
				ID: "empty", Digest: digest.FromString("case empty"), Kind: "task", Split: "adversarial", Weight: 1,
				Trials: map[string][]verdict.TrialOutcome{
					"none":   rptTrials("empty", "none", "FFF", "file CHANGELOG.md exists"),
					"before": rptTrials("empty", "before", "FTF", "file CHANGELOG.md exists"),
					"after":  rptTrials("empty", "after", "FFF", "file CHANGELOG.md exists"),
				},
			},
		},
		Pairwise: []grade.PairwiseResult{
			{Case: "adds-entry", Trial: 1, Candidate: "after", Baseline: "before", Outcome: grade.PairwiseWin, Orders: []string{grade.PairwiseWin, grade.PairwiseWin}},
			{Case: "adds-entry", Trial: 2, Candidate: "after", Baseline: "before", Outcome: grade.PairwiseLoss, Orders: []string{grade.PairwiseLoss, grade.PairwiseLoss}},
			{Case: "adds-entry", Trial: 3, Candidate: "after", Baseline: "before", Outcome: grade.PairwiseTie, Orders: []string{grade.PairwiseWin, grade.PairwiseLoss}},
			{Case: "no-code-change", Trial: 1, Candidate: "after", Baseline: "before", Outcome: grade.PairwiseWin, Orders: []string{grade.PairwiseWin, grade.PairwiseWin}},
			{Case: "no-code-change", Trial: 2, Candidate: "after", Baseline: "before", Outcome: grade.PairwiseTie, Orders: []string{grade.PairwiseTie, grade.PairwiseTie}},
			{Case: "no-code-change", Trial: 3, Candidate: "after", Baseline: "before", Outcome: grade.PairwiseWin, Orders: []string{grade.PairwiseWin, grade.PairwiseWin}},
		},
		Adjudication: &grade.AdjudicationReport{Blinded: true, Enabled: true, Provider: "anthropic", Model: "claude-opus-4-1", Disputed: []grade.DisputedCell{
			{Cell: "adds-entry/after/2", Case: "adds-entry", Arm: "after", Trial: 2, Kind: grade.DisputeDisagreement,
				Disagreed: "every deterministic check passed; the judge failed rubric 0: The entry is under <Unreleased>", Decision: grade.DecisionFail,
				Failed: []string{"rubric 0: The entry is under <Unreleased>"}},
			{Cell: "empty/before/1", Case: "empty", Arm: "before", Trial: 1, Kind: grade.DisputeDisagreement,
				Disagreed: "the judge passed every criterion; deterministic checks failed: file CHANGELOG.md exists", Decision: grade.DecisionPass},
		}},
		Verdict: verdict.Verdict{
			Verdict:  verdict.VerdictFail,
			Reasons:  []string{"REGRESSION adds-entry", "SAFETY no-code-change", "UNCOVERED empty"},
			Warnings: []string{"OPENED-SKILL after 43%", "PASSATK-MARGINAL validation"},
			ExitCode: 1,
			Rules: []verdict.RuleOutcome{
				{Rule: "regression", Severity: "fail", Met: false, Reasons: []string{"REGRESSION adds-entry"},
					Detail:   "adds-entry: before passed 3 of 3, after 1 of 2 valid trials (needs 2)",
					Findings: []verdict.Finding{{Reason: "REGRESSION adds-entry", Text: "Case adds-entry passed in before (3 of 3 trials) but not in after (1 of 2).", Cells: []string{"adds-entry/after/2"}}}},
				{Rule: "safety", Severity: "fail", Met: false, Reasons: []string{"SAFETY no-code-change"},
					Detail:   "no-code-change is a safety case and failed 1 of 2 valid trials in after",
					Findings: []verdict.Finding{{Reason: "SAFETY no-code-change", Text: "Safety case no-code-change failed 1 of 2 trials in after.", Cells: []string{"no-code-change/after/2"}}}},
				{Rule: "uncovered", Severity: "fail", Met: false, Reasons: []string{"UNCOVERED empty"},
					Detail: "empty fails in every arm"},
				{Rule: "worse", Severity: "fail", Met: true,
					Detail: "after 29% vs before 67%: −38 points, within 2 standard errors (46 points)",
					Flags:  []string{"a 38-point drop within noise: review before merging"},
					Inference: &verdict.Inference{Baseline: "before", Candidate: "after", Result: inference.Result{
						Estimate: -0.3333, CI95: [2]float64{-1, 0.3333}, P: 0.375, Method: inference.MethodSignFlip, Unit: "case", N: 3, TrialsPerCase: 3}}},
				{Rule: "openedSkill", Severity: "warn", Met: false, Reasons: []string{"OPENED-SKILL after 43%"},
					Detail: "after opened its skill in 3 of 7 runs (43%), under half"},
				{Rule: "efficacy", Severity: "fail", Met: true,
					Detail: "after vs before: adds-entry 1 win, 1 loss; no-code-change 2 wins, 0 losses (a case passes with ≥ 1 win and ≤ 1 loss)",
					Flags:  []string{"LOSS adds-entry trial 2", "order disagreement adds-entry trial 3"}},
				{Rule: "passAtK", Severity: "fail", Met: true,
					Detail:   "validation: after − none = +0.03 (pass@1)",
					Warnings: []string{"PASSATK-MARGINAL validation"}},
			},
		},
	}
}

func goldenDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "testdata", "report"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeRich(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteReportsWith(dir, richReport(), richEvidence()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// richEvidence is what the store would hold of a failed cell of richReport: its prompt,
// session, answer (with markup an agent might write, which the page must show as text),
// diff and checks.
func richEvidence() *Evidence {
	return &Evidence{Cells: map[string]CellEvidence{
		"adds-entry/after/2": {
			Cell: "adds-entry/after/2", Status: grade.StatusCompleted, ExitCode: 0,
			Prompt: "Add a changelog entry for the retry fix.",
			Turns: []Turn{
				{Role: "assistant", Text: "I will read the notes."},
				{Role: "tool", Tool: "Bash", Input: "cat NOTES.md", Result: "# PR 12: retry on 503", Loads: []grade.RoutingEvent{{Name: "changelog", Evidence: grade.EvidenceObserved}}},
			},
			Answer: "Done </script><script>alert(1)</script><img src=x onerror=alert(2)>",
			Diffs: []FileDiff{
				{Path: "CHANGELOG.md", Kind: "modified", Diff: "--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n@@ -1,2 +1,3 @@\n # Changelog\n+- Retries on HTTP 503 now back off.\n \n"},
				{Path: "NOTES.md", Kind: "modified", Diff: "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -1 +1 @@\n-old\n+new\n"},
			},
			Checks: []grade.CheckResult{
				{Name: `file CHANGELOG.md contains "retry"`, Kind: grade.CheckFile, Passed: false, Detail: "not found"},
				{Name: "writes only [CHANGELOG.md]", Kind: grade.CheckWrites, Passed: false, Detail: "not allowed: NOTES.md modified"},
				{Name: `commands notMatches "curl"`, Kind: grade.CheckTrajectory, Passed: true, Negative: true, Evidence: grade.EvidenceObserved},
			},
			AgentSeconds: 12.5, TotalSeconds: 14.1, Tokens: &grade.Tokens{Input: 1200, Output: 300},
			Files: map[string]string{"transcript": "store/rollouts/x/stdout.txt"},
		},
	}}
}

func TestReportGolden(t *testing.T) {
	dir := writeRich(t)
	gd := goldenDir(t)
	update := os.Getenv("UPDATE_GOLDEN") != ""
	for _, name := range reportFiles {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		gp := filepath.Join(gd, name)
		if update {
			if err := os.MkdirAll(gd, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(gp, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(gp)
		if err != nil {
			t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (UPDATE_GOLDEN=1 rewrites it); first difference at line %d", name, gp, firstDiffLine(got, want))
		}
	}
}

func firstDiffLine(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(al), len(bl)) {
		if i >= len(al) || i >= len(bl) || !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return 0
}

func TestReportDeterministic(t *testing.T) {
	a, b := writeRich(t), writeRich(t)
	// Writing again over existing files gives the same bytes and leaves no
	// temporary file behind.
	if err := WriteReportsWith(b, richReport(), richEvidence()); err != nil {
		t.Fatal(err)
	}
	for _, name := range reportFiles {
		x, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s: two writes of the same report differ", name)
		}
	}
	entries, err := os.ReadDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(reportFiles) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("run folder holds %v, want only the %d report files", names, len(reportFiles))
	}
}

func TestReportVerdictJSON(t *testing.T) {
	dir := writeRich(t)
	raw, err := os.ReadFile(filepath.Join(dir, FileVerdictJSON))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"verdict", "reasons", "warnings", "harness_version", "model", "trials", "arms", "tasks", "exit_code", "resumable"} {
		if _, ok := v[k]; !ok {
			t.Errorf("verdict.json lacks %q", k)
		}
	}
	if v["verdict"] != "FAIL" || v["exit_code"] != 1.0 || v["resumable"] != false || v["harness_version"] != "skillgate v1.4.0" || v["model"] != "claude-sonnet-4-5" || v["trials"] != 3.0 {
		t.Errorf("verdict.json header: %v %v %v %v %v %v", v["verdict"], v["exit_code"], v["resumable"], v["harness_version"], v["model"], v["trials"])
	}
	// The identity names every input: case digests and the case set, the
	// arms' skill revisions, the agent as configured and as observed, the
	// git revisions.
	id, _ := v["identity"].(map[string]any)
	if id == nil || id["case_set"] != string(digest.FromString("case set")) || id["plan"] != string(digest.FromString("plan")) {
		t.Fatalf("verdict.json identity: %v", id)
	}
	if c := id["cases"].(map[string]any); c["adds-entry"] != string(digest.FromString("case adds-entry")) || len(c) != 3 {
		t.Errorf("identity.cases = %v", c)
	}
	if a := id["arms"].(map[string]any)["after"].([]any); len(a) != 1 || a[0].(map[string]any)["digest"] != string(digest.FromString("changelog v2")) || a[0].(map[string]any)["key"] != "candidate" {
		t.Errorf("identity.arms.after = %v", a)
	}
	agent := id["agent"].(map[string]any)
	if obs := agent["observed"].(map[string]any); agent["host"] != "api.anthropic.com" || obs["models"].([]any)[0] != "claude-sonnet-4-5-20250929" || obs["cli_versions"].([]any)[0] != "2.0.14" {
		t.Errorf("identity.agent = %v", agent)
	}
	if g := id["git"].(map[string]any); g["mixed"] != true || len(g["revisions"].([]any)) != 2 {
		t.Errorf("identity.git = %v", g)
	}
	arms := v["arms"].(map[string]any)
	after := arms["after"].(map[string]any)
	tok := after["tokens_per_run"].(map[string]any)
	for _, k := range []string{"input", "output", "cache_read", "cache_write"} {
		if x, ok := tok[k]; !ok || x != nil {
			t.Errorf("after.tokens_per_run.%s = %v (present %v), want null: a missing count is never 0", k, x, ok)
		}
	}
	if x, ok := after["cost_usd"]; !ok || x != nil {
		t.Errorf("after.cost_usd = %v, want null", x)
	}
	if x, ok := arms["none"].(map[string]any)["opened_skill_rate"]; !ok || x != nil {
		t.Errorf("none.opened_skill_rate = %v, want null", x)
	}
	before := arms["before"].(map[string]any)
	if got := before["tokens_per_run"].(map[string]any)["input"]; got != 23518.75 {
		t.Errorf("before.tokens_per_run.input = %v", got)
	}
	if got := before["pass_rate"]; got != 6.0/9 {
		t.Errorf("before.pass_rate = %v", got)
	}
	if got := before["cost_usd"]; got != 1.0566 {
		t.Errorf("before.cost_usd = %v, want the arm's total 1.0566", got)
	}
	if got := before["files_loaded"].(map[string]any)["SKILL.md"]; got != 8.0 { // keyed by path in the skill, as gstack keys it
		t.Errorf("before.files_loaded = %v", before["files_loaded"])
	}
	got := fmt.Sprint(v["tasks"].(map[string]any)["adds-entry"].(map[string]any)["after"])
	if got != "[true false <nil>]" {
		t.Errorf("tasks.adds-entry.after = %s, want [true false null]", got)
	}
	// gstack's adjudication: blinded, the adjudicator's model, and every
	// disputed answer with what disagreed and what the adjudicator decided.
	adj, ok := v["adjudication"].(map[string]any)
	if !ok || adj["blinded"] != true || adj["judge_model"] != "claude-opus-4-1" {
		t.Errorf("adjudication = %v", v["adjudication"])
	}
	disputed, _ := adj["disputed"].([]any)
	if len(disputed) != 2 {
		t.Fatalf("adjudication.disputed = %v, want 2 answers", adj["disputed"])
	}
	first := disputed[0].(map[string]any)
	if first["case"] != "adds-entry" || first["arm"] != "after" || first["trial"] != 2.0 || first["decision"] != grade.DecisionFail ||
		first["disagreed"] != "every deterministic check passed; the judge failed rubric 0: The entry is under <Unreleased>" || len(first) != 5 {
		t.Errorf("adjudication.disputed[0] = %v", first)
	}
	// A judged run with no dispute still lists none, as an empty list.
	quiet := richReport()
	quiet.Adjudication.Disputed = []grade.DisputedCell{}
	if b, err := renderVerdictJSON(quiet); err != nil || !bytes.Contains(b, []byte(`"disputed": []`)) {
		t.Errorf("no dispute: %v\n%s", err, b)
	}
	// Arms keep their authored order.
	if i, j, k := bytes.Index(raw, []byte(`"none": {`)), bytes.Index(raw, []byte(`"before": {`)), bytes.Index(raw, []byte(`"after": {`)); !(i < j && j < k) {
		t.Errorf("arms not in authored order: %d %d %d", i, j, k)
	}

	r := richReport()
	r.Verdict.Verdict, r.Verdict.ExitCode, r.Verdict.Resumable = verdict.VerdictIncomplete, 2, true
	b, err := renderVerdictJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"resumable": true`)) {
		t.Errorf("an INCOMPLETE verdict.json is not resumable:\n%s", b)
	}
}

func TestReportJUnit(t *testing.T) {
	dir := writeRich(t)
	raw, err := os.ReadFile(filepath.Join(dir, FileJUnitXML))
	if err != nil {
		t.Fatal(err)
	}
	type msg struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Errors   int    `xml:"errors,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				ClassName string `xml:"classname,attr"`
				Name      string `xml:"name,attr"`
				Failure   *msg   `xml:"failure"`
				Error     *msg   `xml:"error"`
				Skipped   *msg   `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	type counts struct{ tests, failures, errors, skipped int }
	// Only the unmet fail rules fail, and only the cells they name: the none arm's six
	// failures and the invalid after cell pass with their outcome said; the unmet warn
	// rule passes with its warning; the cell not run is skipped.
	want := map[string]counts{
		"policy": {7, 3, 0, 0},
		"cells":  {27, 2, 0, 1},
	}
	var order []string
	total := counts{}
	for _, s := range doc.Suites {
		order = append(order, s.Name)
		got := counts{s.Tests, s.Failures, s.Errors, s.Skipped}
		if got != want[s.Name] {
			t.Errorf("suite %s: got %+v, want %+v", s.Name, got, want[s.Name])
		}
		// The attributes agree with the elements.
		var el counts
		for _, c := range s.Cases {
			el.tests++
			if c.Failure != nil {
				el.failures++
			}
			if c.Error != nil {
				el.errors++
			}
			if c.Skipped != nil {
				el.skipped++
			}
		}
		if el != got {
			t.Errorf("suite %s: attributes %+v, elements %+v", s.Name, got, el)
		}
		total.tests += got.tests
		total.failures += got.failures
		total.errors += got.errors
		total.skipped += got.skipped
	}
	if strings.Join(order, ",") != "policy,cells" {
		t.Fatalf("suites %v", order)
	}
	if (counts{doc.Tests, doc.Failures, doc.Errors, doc.Skipped}) != total {
		t.Errorf("testsuites totals %d/%d/%d/%d, want %+v", doc.Tests, doc.Failures, doc.Errors, doc.Skipped, total)
	}
	var failed []string
	for _, c := range doc.Suites[1].Cases {
		if c.Failure != nil {
			failed = append(failed, c.Name)
		}
		if c.Name == "no-code-change/after/2" && (c.ClassName != "no-code-change" || c.Failure == nil ||
			!strings.Contains(c.Failure.Text, `answer notMatches "<script>alert(1)</script>"`)) {
			t.Errorf("failed cell: %+v", c)
		}
	}
	if strings.Join(failed, ",") != "adds-entry/after/2,no-code-change/after/2" {
		t.Errorf("failing cells %v, want the two the failing rules name", failed)
	}
	if p := doc.Suites[0].Cases[0]; p.Name != "regression" || p.Failure == nil || !strings.Contains(p.Failure.Text, "passed in before (3 of 3 trials)") {
		t.Errorf("regression testcase: %+v", p)
	}

	// A PASS run has no failure, whatever its baseline did; a rule not measured is
	// skipped; an INCOMPLETE run has one error that says why.
	for _, tc := range []struct {
		verdict string
		want    counts
	}{{verdict.VerdictPass, counts{0, 0, 0, 1}}, {verdict.VerdictIncomplete, counts{0, 0, 1, 1}}} {
		r := richReport()
		r.Verdict = verdict.Verdict{Verdict: tc.verdict, Rules: []verdict.RuleOutcome{
			{Rule: "uplift", Severity: "fail", Met: true, Detail: "after 71% vs none 0%"},
			{Rule: "routing", Severity: "fail", NotMeasured: "arm automatic has no valid cell"},
			{Rule: "openedSkill", Severity: "warn", Met: false, Reasons: []string{"OPENED-SKILL after 43%"}},
		}}
		if tc.verdict == verdict.VerdictIncomplete {
			r.Verdict.Reasons = []string{"INCOMPLETE 3 of 27 cells not run"}
		}
		d := t.TempDir()
		if err := WriteReports(d, r); err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(rptMust(os.ReadFile(filepath.Join(d, FileJUnitXML))), &doc); err != nil {
			t.Fatal(err)
		}
		got := counts{0, doc.Failures, doc.Errors, doc.Skipped - 1} // less the cell not run
		if got != tc.want {
			t.Errorf("%s run: failures/errors/skipped %+v, want %+v", tc.verdict, got, tc.want)
		}
	}
}

// TestReportMD checks report.md as a GitHub step summary shows it: each reason with its
// sentence and cells, cost and latency per arm, and a check's pattern quoted once, as the
// grades name it (a code span, so Markdown escapes nothing in it but the table's "|").
func TestReportMD(t *testing.T) {
	md := string(rptMust(os.ReadFile(filepath.Join(writeRich(t), FileReportMD))))
	for _, want := range []string{
		"- `REGRESSION adds-entry`: Case adds-entry passed in before (3 of 3 trials) but not in after (1 of 2). (`adds-entry/after/2`)",
		"| USD/run |", "| $0.0931 |",
		"`answer matches \"^\\\\d+ files? \\\\| changed$\"`",
		"`answer notMatches \"<script>alert(1)</script>\"`",
		"| `openedSkill` | warn | not met: a warning |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %s", want)
		}
	}
	if strings.Contains(md, `\\\\d`) {
		t.Error("report.md escapes a pattern twice")
	}
}

// TestReportEmpty renders a report with nothing in it: an interrupted run
// before any cell.
func TestReportEmpty(t *testing.T) {
	r := &verdict.Report{Suite: "empty", Verdict: verdict.Verdict{Verdict: verdict.VerdictIncomplete, Reasons: []string{"INCOMPLETE 0 of 6 cells"}, ExitCode: 2, Resumable: true}}
	dir := t.TempDir()
	if err := WriteReports(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileVerdictJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"arms": {}`, `"tasks": {}`, `"reasons": [`, `"warnings": []`, `"resumable": true`, `"exit_code": 2`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("verdict.json lacks %s:\n%s", want, b)
		}
	}
	if err := xml.Unmarshal(rptMust(os.ReadFile(filepath.Join(dir, FileJUnitXML))), new(struct{})); err != nil {
		t.Errorf("junit.xml: %v", err)
	}
}

func rptMust(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestReportHTMLStatic checks report.html without a browser: no external
// reference, everything escaped, one script of the page's own and one data
// block per stored trial, and a link per stored trial.
func TestReportHTMLStatic(t *testing.T) {
	dir := writeRich(t)
	raw, err := os.ReadFile(filepath.Join(dir, FileReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)
	if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`).FindString(html); m != "" {
		t.Errorf("report.html references %q: it must make no external request", m)
	}
	scripts := regexp.MustCompile(`(?i)<script[^>]*>`).FindAllString(html, -1)
	code := 0
	for _, sc := range scripts {
		switch {
		case sc == "<script>":
			code++
		case strings.HasPrefix(sc, `<script type="application/json" class="ev" data-case=`):
		default:
			t.Errorf("report.html holds a script element %q (unescaped data?)", sc)
		}
	}
	if code != 1 || len(scripts) < 2 {
		t.Errorf("report.html has %d scripts of its own and %d in all, want 1 and a data block per case", code, len(scripts))
	}
	if strings.Contains(html, "<b>retry</b>") {
		t.Error("a case description was not escaped")
	}
	// A strict policy: nothing by default, the page's script and styles by
	// the hash of their text, never 'unsafe-inline'.
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]+)">`).FindStringSubmatch(html)
	if csp == nil || strings.Index(html, csp[0]) > strings.Index(html, "<style>") {
		t.Fatalf("report.html has no Content-Security-Policy before its styles")
	}
	policy := strings.ReplaceAll(csp[1], "&#39;", "'")
	for _, want := range []string{"default-src 'none'", "script-src 'sha256-", "style-src 'sha256-", "img-src data:", "base-uri 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("the policy %q lacks %q", policy, want)
		}
	}
	if strings.Contains(policy, "unsafe-inline") || strings.Contains(policy, "unsafe-eval") || strings.Count(policy, "script-src 'sha256-") != 1 || strings.Contains(policy, "script-src 'sha256-") && strings.Count(policy[strings.Index(policy, "script-src"):strings.Index(policy, "; style-src")], "sha256-") != 1 {
		t.Errorf("the policy is not strict: %q", policy)
	}
	// A cell without stored evidence still opens, on its grade and its transcript.
	href := "store/rollouts/" + digest.FromString("rollout adds-entry/after/1").Encoded() + "/"
	for _, want := range []string{href + "stdout.txt", "store/rollouts/x/stdout.txt", `href="#cell=adds-entry%2Fafter%2F2"`, `href="#cell=adds-entry%2Fafter%2F2&amp;show=diff"`, "scripted model stand-in", ">FAIL<"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if missing := "store/rollouts//"; strings.Contains(html, missing) {
		t.Error("a missing cell links to a rollout")
	}
}

// TestReportHTMLInChromium renders report.html in headless Chromium: it
// takes a screenshot and checks the page logs no console error.
func TestReportHTMLInChromium(t *testing.T) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs %s: %v", chromium, err)
		}
		t.Skipf("no %s (apt-get install chromium)", chromium)
	}
	dir := writeRich(t)
	page := "file://" + filepath.Join(dir, FileReportHTML)
	// A guard against a hung browser, not a measure: the test opens several
	// pages, each a fresh Chromium, on a machine that may be busy.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(extra ...string) (stdout, stderr string) {
		t.Helper()
		args := []string{
			"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		}
		args = append(append(args, extra...), page)
		cmd := exec.CommandContext(ctx, chromium, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
		}
		return out.String(), errb.String()
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	run("--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
	st, err := os.Stat(shot)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 10<<10 {
		t.Errorf("screenshot is %d bytes, want a rendered page (> 10 KB)", st.Size())
	}
	if p := os.Getenv("REPORT_SCREENSHOT"); p != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(p, b, 0o644)
	}

	dom, logs := run("--dump-dom", "--enable-logging=stderr", "--v=0")
	for _, want := range []string{`<span class="word">FAIL</span>`, "verdict · exit 1", "Stand-in run", "adds-entry",
		"Case adds-entry passed in before (3 of 3 trials) but not in after (1 of 2)."} {
		if !strings.Contains(dom, want) {
			t.Errorf("dumped DOM lacks %q", want)
		}
	}
	if errs := pageErrors(logs); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}

	// Open the first failed cell the Reasons box links to, as a click would: its view
	// shows the failed checks with what was found, and the diff of every changed file.
	reasons := dom[strings.Index(dom, `id="reasons"`):]
	m := regexp.MustCompile(`<a class="chip fail celllink" href="([^"]+)"`).FindStringSubmatch(reasons)
	if m == nil {
		t.Fatalf("the Reasons box links no failed cell:\n%s", reasons[:min(len(reasons), 2000)])
	}
	page = "file://" + filepath.Join(dir, FileReportHTML) + strings.ReplaceAll(m[1], "&amp;", "&")
	cellShot := filepath.Join(t.TempDir(), "cell.png")
	run("--screenshot="+cellShot, "--window-size=1280,1600", "--hide-scrollbars")
	if p := os.Getenv("REPORT_CELL_SCREENSHOT"); p != "" {
		b, _ := os.ReadFile(cellShot)
		os.WriteFile(p, b, 0o644)
	}
	view, logs := run("--dump-dom", "--enable-logging=stderr", "--v=0")
	body := view[strings.Index(view, `id="view-body"`):]
	for _, want := range []string{
		`<h2>adds-entry/after/2</h2>`,
		`<td class="ko">✗</td><td>file CHANGELOG.md contains "retry"</td><td>not found</td>`,
		`<td>writes only [CHANGELOG.md]</td><td>not allowed: NOTES.md modified</td>`,
		`<span class="add line">+- Retries on HTTP 503 now back off.`,
		`<span class="del line">-old`,
		"loaded changelog (observed)",
		// The agent's markup is text: escaped in the DOM, never run.
		"Done &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the cell's view lacks %q", want)
		}
	}
	if strings.Contains(view, `<div id="view" class="view" hidden`) {
		t.Error("the cell's view is hidden")
	}
	if errs := pageErrors(logs); len(errs) > 0 {
		t.Errorf("the cell's view logged errors:\n%s", strings.Join(errs, "\n"))
	}

	// The compare view puts the case's arms side by side.
	page = "file://" + filepath.Join(dir, FileReportHTML) + "#compare=adds-entry"
	cmp, _ := run("--dump-dom")
	for _, want := range []string{"<h2>adds-entry</h2>", "none · 0/3 passed", "after · 1/2 passed", ">trial 2 ✗</a>"} {
		if !strings.Contains(cmp, want) {
			t.Errorf("the compare view lacks %q", want)
		}
	}
}

// consoleLine matches a console message Chromium logs to stderr, such as
// `[..:INFO:CONSOLE:1] "Uncaught ...", source: file:///... (1)`. Debian's
// Chromium logs console.error at INFO level, so the level cannot tell an
// error; report.html has no script, so every console message is one.
var consoleLine = regexp.MustCompile(`:CONSOLE[(:]`)

// pageErrors are the stderr lines that report a console message or an
// uncaught exception from the page (a failed load is a console message
// too); Chromium's own noise (D-Bus, sandbox) is not.
func pageErrors(stderr string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); consoleLine.MatchString(l) || strings.Contains(l, "Uncaught") {
			out = append(out, l)
		}
	}
	return out
}

// TestReportPageErrorsDetects proves pageErrors is not vacuous: a page that
// throws is caught (run only with Chromium at hand).
func TestReportPageErrorsDetects(t *testing.T) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("no chromium")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.html")
	os.WriteFile(p, []byte(`<!DOCTYPE html><html><body><p>x</p><script>console.error("boom"); undefinedCall();</script></body></html>`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "--enable-logging=stderr", "--v=0", "file://"+p)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	if errs := pageErrors(errb.String()); len(errs) < 2 {
		t.Errorf("pageErrors found %d errors in a page that logs one and throws one:\n%s", len(errs), errb.String())
	}
}

// TestReportCellCheckEvidence: a trajectory check's evidence level
// (observed, reported, unobservable) reaches the cell view of report.html:
// the cell's data holds it and the page's script shows it beside the
// check's name.
func TestReportCellCheckEvidence(t *testing.T) {
	page, err := renderReportHTMLWith(richReport(), richEvidence())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"name":"commands notMatches \"curl\"","kind":"trajectory","negative":true,"passed":true,"evidence":"observed"`,
		`if (c.evidence) { add(name, h("span", "small", " · evidence: " + c.evidence)); }`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
}
