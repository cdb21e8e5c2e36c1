package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// chrisbanesRun is the example suite's plan with evidence for every cell:
// the skill helps the positive cases, the baseline rewrites the negative
// control, one automatic trial's judge reply is unreadable, a review writes
// a file, and an answer holds non-ASCII text. The verdict is the one of
// results that say what the evidence says, so the scorecard's gates are
// decided as in a run.
func chrisbanesRun(t *testing.T) (*plan.Plan, *verdict.Report, *Evidence) {
	t.Helper()
	p, err := plan.CompileDir(filepath.Join("..", "..", "suites", "chrisbanes-example"))
	if err != nil {
		t.Fatal(err)
	}
	ev := &Evidence{Plan: p, Cells: map[string]CellEvidence{}}
	cases := p.CasesByID()
	var results []grade.CellResult
	for _, c := range p.Cells {
		skilled := c.Arm != "none"
		ce := CellEvidence{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Status: grade.StatusCompleted,
			Answer: "Résumé of " + c.Case, AgentSeconds: 12.25, Tokens: &grade.Tokens{Input: 1000, Output: 100},
			Turns: []Turn{{Role: "tool", Tool: "Bash", Input: "cat results.csv"}}}
		if skilled {
			ce.Skills = []grade.RoutingEvent{{Name: "benchmark-comparison", Evidence: grade.EvidenceObserved}}
		}
		ce.Checks = []grade.CheckResult{{Name: "file comparison.md exists", Kind: grade.CheckFile, Passed: true}}
		switch {
		case c.Case == "benchmark-comparison-novel" && c.Arm == "none":
			ce.Checks = append(ce.Checks, grade.CheckResult{Name: "workspace unchanged", Kind: grade.CheckWrites, Detail: "comparison.md modified"})
			ce.Diffs = []FileDiff{{Path: "comparison.md", Kind: "modified", Diff: "--- a/comparison.md\n+++ b/comparison.md\n"}}
		case !skilled:
			ce.Checks = append(ce.Checks, grade.CheckResult{Name: `file comparison.md matches "(?ms)spread"`, Kind: grade.CheckFile, Detail: "no match"})
		}
		passed := true
		for _, ch := range ce.Checks {
			passed = passed && ch.Passed
		}
		ce.Judge = &JudgeEvidence{Valid: true, Criteria: []grade.CriterionResult{{Criterion: 0, Pass: skilled, Evidence: "as seen"}}}
		if c.Case == "benchmark-comparison-direct" && c.Arm == "automatic" {
			ce.Judge = &JudgeEvidence{Valid: false, Reason: "no criteria"}
		}
		ce.Passed = passed && ce.Judge.Valid && skilled
		ev.Cells[c.ID] = ce
		results = append(results, grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Status: ce.Status,
			Passed: ce.Passed, Checks: ce.Checks, Routing: grade.TallyRouting(p, cases[c.Case], ce.Skills, nil)})
	}
	r := verdict.BuildReport(p, results)
	r.Observed.CLIVersions = []string{"2.1.332"}
	r.Observed.Git = []plan.GitRevision{{Revision: "0123456789abcdef0123456789abcdef01234567"}}
	return p, r, ev
}

func TestChrisbanesOutputsGolden(t *testing.T) {
	p, r, ev := chrisbanesRun(t)
	dir := t.TempDir()
	if err := writeChrisbanes(dir, r, ev); err != nil {
		t.Fatal(err)
	}
	gd := filepath.Join("testdata", "chrisbanes")
	for _, name := range []string{FileChrisbanesResults, FileChrisbanesScorecard, FileChrisbanesAuditQueue} {
		got, err := os.ReadFile(filepath.Join(dir, DirChrisbanes, name))
		if err != nil {
			t.Fatal(err)
		}
		gp := filepath.Join(gd, name)
		if os.Getenv("UPDATE_GOLDEN") != "" {
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
	score := ChrisbanesScorecard(p, ChrisbanesRecords(p, r, ev), r.Verdict.Rules)
	for _, want := range []string{
		"| `benchmark-comparison` | 2 | 0.0% | 100.0% | 50.0% | 100.0% | 100.0% | 100.0% |",
		"- forced_uplift: PASS", "- automatic_retention: NOT MET", "- forbidden_actions: NOT MET",
	} {
		if !strings.Contains(score, want) {
			t.Errorf("scorecard lacks %q:\n%s", want, score)
		}
	}
}

// TestChrisbanesOutputSchemas validates the JSON goldens against their
// schemas, and that the schemas refuse a record missing a field.
func TestChrisbanesOutputSchemas(t *testing.T) {
	for name, schema := range map[string]string{
		FileChrisbanesResults:    "results.schema.json",
		FileChrisbanesAuditQueue: "audit-queue.schema.json",
	} {
		c := jsonschema.NewCompiler()
		sch, err := c.Compile(filepath.Join("..", "..", "schema", "outputs", "chrisbanes", schema))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join("testdata", "chrisbanes", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		items := doc.([]any)
		if len(items) == 0 {
			t.Fatalf("%s: empty golden", name)
		}
		bad := map[string]any{}
		for k, v := range items[0].(map[string]any) {
			if k != "id" {
				bad[k] = v
			}
		}
		if err := sch.Validate([]any{bad}); err == nil {
			t.Errorf("%s: a record without id validates", name)
		}
	}
}

func TestChrisbanesJSON(t *testing.T) {
	got := ChrisbanesJSON(map[string]any{"b": []any{1.0, 0.5, 1e-05, 1e16, 123456789.125, -2.5}, "a": "é\x01😀</>", "c": map[string]any{}, "d": []any{}, "e": nil})
	want := "{\n  \"a\": \"\\u00e9\\u0001\\ud83d\\ude00</>\",\n  \"b\": [\n    1.0,\n    0.5,\n    1e-05,\n    1e+16,\n    123456789.125,\n    -2.5\n  ],\n  \"c\": {},\n  \"d\": [],\n  \"e\": null\n}"
	if got != want {
		t.Errorf("ChrisbanesJSON =\n%s\nwant\n%s", got, want)
	}
	var back any
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Errorf("not JSON: %v", err)
	}
}
