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
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// skillCreatorRun is a run of two evals and a trigger query, two trials
// per arm; one without_skill cell of eval-2 is invalid.
func skillCreatorRun() (*verdict.Report, *Evidence) {
	c := func(id, desc, with, without string) verdict.CaseReport {
		return verdict.CaseReport{ID: id, Description: desc, Trials: map[string][]verdict.TrialOutcome{
			"with_skill":    rptTrials(id, "with_skill", with),
			"without_skill": rptTrials(id, "without_skill", without),
		}}
	}
	r := &verdict.Report{Suite: "pdf", Trials: 2,
		Agent: verdict.AgentIdentity{Model: "claude-sonnet-4-5"},
		Judge: &verdict.JudgeIdentity{Model: "claude-opus-4-1"},
		Arms:  []verdict.ArmReport{{Name: "with_skill", Skills: []string{"pdf"}}, {Name: "without_skill", Skills: []string{}}},
		Cases: []verdict.CaseReport{
			c("eval-1", "A filled form", "PP", "FP"),
			c("eval-2", "", "PF", "IF"),
			c("trigger-1", "should open the skill", "PP", "PP"),
		}}
	ev := &Evidence{Cells: map[string]CellEvidence{}}
	criteria := map[string][]string{"eval-1": {"The output includes the name John Smith", "The form keeps its field names"}, "eval-2": {"The answer names a tool"}}
	for _, cr := range r.Cases {
		for arm, ts := range cr.Trials {
			for i, t := range ts {
				ce := CellEvidence{Cell: t.Cell, Case: cr.ID, Arm: arm, Trial: t.Trial, TotalSeconds: 10 + float64(i) + 0.25,
					Tokens: &grade.Tokens{Input: 1000, Output: 200 + int64(100*i)},
					Turns:  []Turn{{Role: "assistant", Tool: "Read"}, {Role: "tool", Result: "ok"}, {Role: "assistant", Text: "done"}}}
				for j, text := range criteria[cr.ID] {
					pass := t.Passed || j > 0
					ce.Checks = append(ce.Checks, grade.CheckResult{Name: "rubric " + string(rune('0'+j)) + ": " + text, Kind: grade.CheckJudge, Passed: pass, Detail: "seen in the answer"})
				}
				ev.Cells[t.Cell] = ce
			}
		}
	}
	return r, ev
}

// TestSkillCreatorBenchmarkGolden checks benchmark.json against its golden
// file and the golden against the JSON Schema.
func TestSkillCreatorBenchmarkGolden(t *testing.T) {
	r, ev := skillCreatorRun()
	dir := t.TempDir()
	if err := writeSkillCreator(dir, r, ev); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, FileSkillCreatorBenchmark))
	if err != nil {
		t.Fatal(err)
	}
	gp := filepath.Join("testdata", "skillcreator", FileSkillCreatorBenchmark)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(gp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(gp, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(gp)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (UPDATE_GOLDEN=1 rewrites it)\ngot:\n%s", FileSkillCreatorBenchmark, gp, got)
	}
	var doc struct {
		Runs []struct {
			EvalID        int    `json:"eval_id"`
			Configuration string `json:"configuration"`
		} `json:"runs"`
		RunSummary struct {
			Delta map[string]string `json:"delta"`
		} `json:"run_summary"`
	}
	if err := json.Unmarshal(want, &doc); err != nil {
		t.Fatal(err)
	}
	// Seven valid eval cells (the invalid one and the trigger query's are
	// left out), with_skill first.
	if len(doc.Runs) != 7 || doc.Runs[0].Configuration != "with_skill" || doc.Runs[6].Configuration != "without_skill" {
		t.Errorf("runs: %+v", doc.Runs)
	}
	if doc.RunSummary.Delta["pass_rate"] != "+0.25" {
		t.Errorf("delta: %v", doc.RunSummary.Delta)
	}
	sch := outputSchema(t, filepath.Join("..", "..", "schema", "outputs", "skillcreator", "benchmark.schema.json"))
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s does not satisfy benchmark.schema.json: %v", gp, err)
	}
	bad, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(string(want), `"configuration": "with_skill"`, `"configuration": "with"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if sch.Validate(bad) == nil {
		t.Error("the schema accepts an unknown configuration")
	}
}

// TestSkillCreatorBenchmarkNeedsEvals: no eval cell, no file.
func TestSkillCreatorBenchmarkNeedsEvals(t *testing.T) {
	r, ev := skillCreatorRun()
	r.Cases = r.Cases[2:]
	dir := t.TempDir()
	if err := writeSkillCreator(dir, r, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileSkillCreatorBenchmark)); !os.IsNotExist(err) {
		t.Errorf("benchmark.json written for a run without evals: %v", err)
	}
}
