package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// runBenchReport is a run of two definitions' scenarios: survey-context
// with two train and three validation scenarios (one of them with no
// valid run without the skill), and lint-fix with one.
func runBenchReport() *verdict.Report {
	c := func(id, split string, weight float64, with, without string) verdict.CaseReport {
		return verdict.CaseReport{ID: id, Split: split, Weight: weight, Trials: map[string][]verdict.TrialOutcome{
			"with_skill":    rptTrials(id, "with_skill", with),
			"without_skill": rptTrials(id, "without_skill", without),
		}}
	}
	return &verdict.Report{Suite: "bench", Trials: 3, Cases: []verdict.CaseReport{
		c("survey-context.s01", "train", 1, "PPP", "PPF"),
		c("survey-context.s02", "train", 1, "PPF", "PFF"),
		c("survey-context.s03", "validation", 2, "PPP", "PFF"),
		c("survey-context.s04", "validation", 1, "PPF", "PPF"),
		c("survey-context.s05", "validation", 1, "PPP", "III"),
		c("lint-fix.l01", "validation", 1, "PFF", "PPP"),
		c("handwritten", "validation", 1, "PPP", "FFF"),
	}}
}

// runBenchPlan is the plan of runBenchReport's run, gated by rule.
func runBenchPlan(r *verdict.Report, rule *suite.PassAtK) *plan.Plan {
	rule.With, rule.Without, rule.Split, rule.Decimals, rule.K = "with_skill", "without_skill", "validation", 2, 1
	rule.Enabled, rule.Severity = true, verdict.SeverityFail
	p := &plan.Plan{Arms: []plan.PlanArm{{Name: "with_skill"}, {Name: "without_skill"}}}
	p.Policy.PassAtK = rule
	for _, cr := range r.Cases {
		p.Cases = append(p.Cases, plan.PlanCase{Case: suite.Case{ID: cr.ID, Split: cr.Split, Weight: cr.Weight}})
		for _, arm := range []string{"with_skill", "without_skill"} {
			for _, t := range cr.Trials[arm] {
				p.Cells = append(p.Cells, plan.Cell{ID: t.Cell, Case: cr.ID, Arm: arm, Trial: t.Trial})
			}
		}
	}
	return p
}

// runBenchGate is a skill's Δ line and exit code as its verdict decides
// them under rule.
func runBenchGate(b RunBenchmark, rule *suite.PassAtK) (line string, code int) {
	r := runBenchReport()
	p := runBenchPlan(r, rule)
	var cases []string
	for _, cr := range r.Cases {
		if strings.HasPrefix(cr.ID, b.Skill+".") {
			cases = append(cases, cr.ID)
		}
	}
	v := verdict.SkillVerdict(p, r, cases, "")
	return RunBenchmarkGateLine(b, v), v.ExitCode
}

func runBenchOptions() RunBenchmarkOptions {
	return RunBenchmarkOptions{
		With: "with_skill", Without: "without_skill", K: 1, Decimals: 2, Date: "2026-06-22",
		Skill: func(id string) (string, string, bool) {
			skill, scenario, ok := strings.Cut(id, ".")
			return skill, scenario, ok
		},
	}
}

func TestRunBenchmarkScores(t *testing.T) {
	bs := RunBenchmarks(runBenchReport(), runBenchOptions())
	if len(bs) != 2 || bs[0].Skill != "survey-context" || bs[1].Skill != "lint-fix" {
		t.Fatalf("benchmarks: %+v", bs)
	}
	sc := bs[0]
	// train: with (1 + 2/3)/2 = 0.83, without (2/3 + 1/3)/2 = 0.5.
	if sc.Train.With != 0.83 || sc.Train.Without != 0.5 || sc.Train.Delta != 0.33 {
		t.Errorf("train: %+v", sc.Train)
	}
	// validation: s05 has no valid run without the skill and counts in
	// neither mode: with (2×1 + 2/3)/3 = 0.89, without (2×1/3 + 2/3)/3 = 0.44.
	if sc.Validation.With != 0.89 || sc.Validation.Without != 0.44 || sc.Validation.Delta != 0.45 {
		t.Errorf("validation: %+v", sc.Validation)
	}
	if got := strings.Join(sc.Validation.Scenarios, ","); got != "s03,s04,s05" {
		t.Errorf("validation scenarios: %s", got)
	}
	if !sc.Scenarios[4].Pending || sc.Scenarios[0].Pending {
		t.Errorf("pending rows: %+v", sc.Scenarios)
	}
	if line, code := runBenchGate(bs[1], &suite.PassAtK{FailBelow: 0, WarnBelow: 0.05}); code != 1 || line != "REGRESSION: validation Δ -0.67 — do NOT ship" {
		t.Errorf("gate of lint-fix: %q exit %d", line, code)
	}
	// survey-context's Δ passes; its pending s05 keeps it incomplete.
	if line, code := runBenchGate(sc, &suite.PassAtK{FailBelow: 0, WarnBelow: 0.05}); code != 2 || line != "OK: validation Δ 0.45" {
		t.Errorf("gate of survey-context: %q exit %d", line, code)
	}
	for _, tc := range []struct {
		base   float64
		within float64
		want   string
	}{
		{0.17, 0, "IMPROVED: Δ 0.17 → 0.45"},
		{0.5, 0, "REGRESSION: Δ 0.50 → 0.45 — do NOT ship"},
		{0.45, 0, "STABLE: Δ 0.45 → 0.45"},
		{0.5, 0.05, "STABLE: Δ 0.50 → 0.45"},
	} {
		if _, line := CompareRunBenchmark(sc, tc.base, tc.within); line != tc.want {
			t.Errorf("compare with %v: %q, want %q", tc.base, line, tc.want)
		}
	}
}

// TestRunBenchmarkGolden checks both files of each definition against
// their golden files, and every JSON golden against the JSON Schema.
func TestRunBenchmarkGolden(t *testing.T) {
	gd := filepath.Join("testdata", "runbenchmark")
	update := os.Getenv("UPDATE_GOLDEN") != ""
	sch := runBenchSchema(t)
	for _, b := range RunBenchmarks(runBenchReport(), runBenchOptions()) {
		js, err := RenderRunBenchmarkJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{
			"benchmark-" + b.Skill + ".json":                js,
			"BENCHMARK-" + b.Skill + "-" + b.Date + ".yaml": RenderRunBenchmarkYAML(b),
		}
		for name, got := range files {
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
				t.Errorf("%s differs from %s (UPDATE_GOLDEN=1 rewrites it)\ngot:\n%s", name, gp, got)
			}
			if strings.HasSuffix(name, ".json") {
				doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(want))
				if err != nil {
					t.Fatal(err)
				}
				if err := sch.Validate(doc); err != nil {
					t.Errorf("%s does not satisfy benchmark.schema.json: %v", gp, err)
				}
			}
		}
	}
}

// TestRunBenchmarkSchemaRefuses checks that the JSON Schema can fail: a
// score out of range and a field the source does not write are refused.
func TestRunBenchmarkSchemaRefuses(t *testing.T) {
	sch := runBenchSchema(t)
	for _, bad := range []string{
		`{"skill":"x","run_date":"2026-06-22","runs_per_scenario":3,"train":{"with_skill":1.2,"without_skill":0,"delta":0,"scenarios":[]},"validation":{"with_skill":0,"without_skill":0,"delta":0,"scenarios":[]}}`,
		`{"skill":"x","run_date":"2026-06-22","runs_per_scenario":3,"train":{"with_skill":1,"without_skill":0,"delta":0,"scenarios":[]},"validation":{"with_skill":0,"without_skill":0,"delta":0,"scenarios":[]},"extra":1}`,
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(doc) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}

func runBenchSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return outputSchema(t, filepath.Join("..", "..", "schema", "outputs", "runbenchmark", "benchmark.schema.json"))
}

// outputSchema compiles the JSON Schema of an output file.
func outputSchema(t *testing.T, path string) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestRunBenchmarkGateIsTheVerdicts: on each threshold, and within the
// rules' tolerance of it, the native Δ line and exit code are what the
// skill's verdict decides, and the verdict's Δ is the one the line shows.
func TestRunBenchmarkGateIsTheVerdicts(t *testing.T) {
	b := RunBenchmarks(runBenchReport(), runBenchOptions())[1] // lint-fix, Δ -0.67
	d := b.Validation.Delta
	for _, r := range []*suite.PassAtK{
		{FailBelow: d, WarnBelow: d + 0.1},
		{FailBelow: d + 5e-10, WarnBelow: d + 0.1},
		{FailBelow: d + 1e-6, WarnBelow: d + 0.1},
		{FailBelow: d - 1, WarnBelow: d + 5e-10},
		{FailBelow: d - 1, WarnBelow: d + 1e-6},
	} {
		fail, warn := verdict.PassAtKDelta(r, d)
		line, code := runBenchGate(b, r)
		blocked := code == 1
		want := "OK: "
		switch {
		case fail:
			want = "REGRESSION: "
		case warn:
			want = "WARN: "
		}
		if blocked != fail || !strings.HasPrefix(line, want) {
			t.Errorf("fail below %v, warn below %v: line %q (blocked %v), the verdict's rule fails %v, warns %v", r.FailBelow, r.WarnBelow, line, blocked, fail, warn)
		}
	}
	if _, code := runBenchGate(b, &suite.PassAtK{FailBelow: d + 5e-10}); code != 0 {
		t.Error("a Δ equal to failBelow within the tolerance blocks")
	}
}
