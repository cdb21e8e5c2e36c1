package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// gstackReport is richReport as a gstack suite gives it: cases from
// tasks.json, calibration run (the none check failed), no judge.
func gstackReport() *verdict.Report {
	r := richReport()
	r.Formats = []string{"gstack"}
	r.Judge, r.Adjudication, r.Pairwise = nil, nil, nil
	yes, no := true, false
	r.Calibration = &verdict.Calibration{Skill: &yes, None: &no, Shell: &yes}
	// The uncovered rule at its default severity (warn): a reason that
	// fails nothing, as gstack reports it.
	r.Verdict.Reasons = []string{"REGRESSION adds-entry", "SAFETY no-code-change", "UNCOVERED empty"}
	r.Verdict.NotFailing = []string{"UNCOVERED empty"}
	r.Verdict.Warnings = []string{"OPENED-SKILL after 43%"}
	return r
}

// TestGstackVerdictGolden: a gstack suite's run folder holds verdict.json
// in the contract's shape (calibration's three checks, adjudication with a
// null judge model when there is no judge, files_loaded by path in the
// skill) and the raw transcripts under runs/TASK/ARM/TRIAL/.
func TestGstackVerdictGolden(t *testing.T) {
	dir := t.TempDir()
	ev := richEvidence()
	for id, c := range ev.Cells {
		c.Case, c.Arm, c.Trial = "adds-entry", "after", 2
		c.Files = map[string]string{"transcript": "store/rollouts/x/stdout.txt", "stderr": "store/rollouts/x/stderr.txt", "answer": "store/rollouts/x/answer.txt"}
		ev.Cells[id] = c
	}
	raw := filepath.Join(dir, "store", "rollouts", "x")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"stdout.txt": `{"type":"result"}` + "\n", "stderr.txt": "", "answer.txt": "lines: 3\n"} {
		if err := os.WriteFile(filepath.Join(raw, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteReportsWith(dir, gstackReport(), ev); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, FileVerdictJSON))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "gstack", "verdict.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("verdict.json differs from %s (UPDATE_GOLDEN=1 rewrites it); first difference at line %d", golden, firstDiffLine(got, want))
	}
	for _, want := range []string{
		`"calibration": {` + "\n" + `    "skill": true,` + "\n" + `    "none": false,` + "\n" + `    "shell": true` + "\n  },",
		`"judge_model": null`,
		`"SKILL.md": 8`,
		`"before": [true, true, true]`,
		`"reasons": [` + "\n" + `    "REGRESSION adds-entry",` + "\n" + `    "SAFETY no-code-change",` + "\n" + `    "UNCOVERED empty"` + "\n  ],",
		`"warnings": [` + "\n" + `    "OPENED-SKILL after 43%"` + "\n  ],",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("verdict.json lacks %s", want)
		}
	}
	var cells int
	for _, c := range ev.Cells {
		b, err := os.ReadFile(filepath.Join(dir, DirGstackRuns, c.Case, c.Arm, "2", "answer.txt"))
		if err != nil || string(b) != "lines: 3\n" {
			t.Errorf("runs/%s/%s/2/answer.txt: %q, %v", c.Case, c.Arm, b, err)
		}
		if _, err := os.Stat(filepath.Join(dir, DirGstackRuns, c.Case, c.Arm, "2", "transcript.txt")); err != nil {
			t.Error(err)
		}
		cells++
	}
	if cells == 0 {
		t.Fatal("no cell evidence to copy")
	}
}

// TestGstackVerdictSchema validates both verdict.json goldens (a gstack
// suite's, and the richer one with a judge and disputes) against
// schema/outputs/gstack/verdict.schema.json, and shows the schema refuses
// what the contract does not allow.
func TestGstackVerdictSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("..", "..", "schema", "outputs", "gstack", "verdict.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) any {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, p := range []string{filepath.Join("testdata", "gstack", "verdict.json"), filepath.Join("..", "..", "testdata", "report", "verdict.json")} {
		if err := sch.Validate(read(p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	v := read(filepath.Join("testdata", "gstack", "verdict.json")).(map[string]any)
	delete(v["arms"].(map[string]any)["before"].(map[string]any)["tokens_per_run"].(map[string]any), "cache_write")
	if err := sch.Validate(v); err == nil {
		t.Error("tokens_per_run without cache_write validates")
	}
	v = read(filepath.Join("testdata", "gstack", "verdict.json")).(map[string]any)
	v["calibration"] = map[string]any{"skill": true}
	if err := sch.Validate(v); err == nil {
		t.Error("a calibration without none and shell validates")
	}
}

// TestNoRoutingExpectedIsNotApplicable: a suite whose cases expect no skill
// (a gstack suite) has skill precision 0% in its skill arms, every opened
// skill counting against it: report.md and report.html say not applicable
// instead, and verdict.json (gstack's contract) is unchanged.
func TestNoRoutingExpectedIsNotApplicable(t *testing.T) {
	r := gstackReport()
	before, err := renderVerdictJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Arms {
		lo, hi, se := 0.0, 0.3, 0.0
		r.Arms[i].Metrics[verdict.MetricSkillPrecision] = verdict.Metric{Value: 0, Samples: 9, StdErr: &se, CI95: &[2]float64{lo, hi}}
		r.Arms[i].Metrics[verdict.MetricSkillRecall] = verdict.Metric{Value: 1, Samples: 9}
	}
	md, err := renderReportMD(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(md), "| n/a (no case expects a skill) |") != len(r.Arms) || strings.Contains(string(md), "| 0% / 100% |") {
		t.Errorf("report.md arms:\n%s", md)
	}
	c := buildChart(r)
	na := 0
	for _, g := range c.Groups {
		for _, p := range g.Rows {
			if (g.Name == verdict.MetricSkillPrecision || g.Name == verdict.MetricSkillRecall) && p.Text == notApplicable && !p.HasValue {
				na++
			}
		}
	}
	if na != 2*len(r.Arms) {
		t.Errorf("report.html: %d rows not applicable, want %d", na, 2*len(r.Arms))
	}
	after, err := renderVerdictJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("verdict.json changed")
	}
}
