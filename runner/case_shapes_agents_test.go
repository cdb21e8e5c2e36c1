package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/cell"
	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestClaudeCodeRepliesAndReport runs the real Claude Code CLI on the scripted model
// through a case with a scripted user reply (testdata/agents/turns). The second turn
// resumes the first one's session by its ID: the model answers "Painted it cobalt."
// only when its request holds the user's reply and the first turn's question, which
// only the resumed session can hold. Each turn's final answer is the structured report
// the suite asks for (--json-schema); the last one's skills_used is reported routing,
// "fences:s" canonicalized to s; the router is declared, counted in routerDeclared and
// in neither precision nor recall; a routing rule that asks for inferred evidence no
// longer counts the reported skill. The forced arm installs the case's target beside
// the router and names only the target.
func TestClaudeCodeRepliesAndReport(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, "turns")
	out := t.TempDir()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("summary %+v\n%s", sum, log.String())
	}
	st := &store.Store{Dir: out}
	results := map[string]*grade.CellResult{}
	for _, c := range s.Plan.Cells {
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil || !ok {
			t.Fatalf("%s: rollout: %v", c.ID, err)
		}
		stdout, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStdout))
		r, ok, err := st.Grade(c.Grade)
		if err != nil || !ok {
			t.Fatalf("%s: grade: %v", c.ID, err)
		}
		results[c.Arm] = r
		// Both invocations ran in one session, the one the cell named.
		if n := strings.Count(string(stdout), `"session_id":"`+cell.SessionID(c.Rollout)+`"`); n < 4 || strings.Count(string(stdout), `"type":"result"`) != 2 {
			t.Errorf("%s: %d events of session %s, want both turns' in it\n%s", c.ID, n, cell.SessionID(c.Rollout), stdout)
		}
		if ro.Answer != "Painted it cobalt." || !r.Passed {
			t.Errorf("%s: answer %q, passed %v, checks %+v\n%s", c.ID, ro.Answer, r.Passed, r.Checks, stdout)
		}
		if want := []string{"Which colour do you want? (asked-7f3)", "Painted it cobalt."}; !reflect.DeepEqual(ro.Messages, want) {
			t.Errorf("%s: messages %q, want %q", c.ID, ro.Messages, want)
		}
		if ro.Gateway == nil || ro.Gateway.Requests != 2 {
			t.Errorf("%s: gateway %+v, want one model request a turn", c.ID, ro.Gateway)
		}
	}

	// The report's view of a cell shows the reply between the turns.
	var graded []grade.CellResult
	for _, r := range results {
		graded = append(graded, *r)
	}
	ev, err := readback.CellEvidence(s.Plan, st, graded)
	if err != nil {
		t.Fatal(err)
	}
	for id, ce := range ev.Cells {
		var users []string
		for _, tr := range ce.Turns {
			if tr.Role == "user" {
				users = append(users, tr.Text)
			}
		}
		if !reflect.DeepEqual(users, []string{"Make it cobalt-9."}) || ce.Turns[len(ce.Turns)-1].Role == "user" {
			t.Errorf("%s: the view's user turns %q, want the reply between the turns", id, users)
		}
	}

	forced := results["forced"]
	if want := []grade.RoutingEvent{{Name: "r", Evidence: grade.EvidenceReported}, {Name: "s", Evidence: grade.EvidenceReported}}; !reflect.DeepEqual(forced.Telemetry.Skills, want) {
		t.Errorf("forced: skills %v, want %v", forced.Telemetry.Skills, want)
	}
	if sk := forced.Routing.Skills; sk.TP != 1 || sk.FP != 0 || sk.FN != 0 || !sk.Router || sk.Evidence != grade.EvidenceReported {
		t.Errorf("forced: routing %+v, want s a reported TP and the router seen", sk)
	}
	if none := results["none"]; len(none.Telemetry.Skills) != 0 || none.Routing.Skills.FN != 1 {
		t.Errorf("none: skills %v, routing %+v", none.Telemetry.Skills, none.Routing.Skills)
	}
	arms := map[string]verdict.ArmReport{}
	for _, a := range rep.Arms {
		arms[a.Name] = a
	}
	if m, ok := arms["forced"].Metrics[verdict.MetricRouterDeclared]; !ok || m.Value != 1 || m.Samples != 1 {
		t.Errorf("forced: routerDeclared %+v (present %v), want 1 of 1", m, ok)
	}
	for _, f := range []string{"report.md", "report.html"} {
		if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || !strings.Contains(string(b), "router declared") {
			t.Errorf("%s does not show the router-declared rate: %v", f, err)
		}
	}
	if _, ok := arms["none"].Metrics[verdict.MetricRouterDeclared]; ok {
		t.Errorf("none: routerDeclared given for an arm without the router")
	}
	if got := arms["forced"].Installed; len(got) != 2 {
		t.Errorf("forced: installed %v, want the router and the target", got)
	}
	pc, arm := s.Plan.Cases[0], plan.CaseArm(s.Plan, s.Plan.Cases[0], s.Plan.Arms[1])
	if got := plan.Prompt(s.Plan, pc, arm); !strings.HasPrefix(got, "Use the s skill ") || !reflect.DeepEqual(arm.Skills, []string{"r", "s"}) {
		t.Errorf("forced: prompt %q, skills %v, want s named and r, s installed", got, arm.Skills)
	}

	// The same cells under a routing rule on the forced arm: reported evidence counts
	// by default; asking for inferred evidence, the reported skill is not seen.
	var cells []grade.CellResult
	for _, c := range s.Plan.Cells {
		r, _, _ := st.Grade(c.Grade)
		cells = append(cells, *r)
	}
	for _, tc := range []struct {
		evidence string
		passed   bool
	}{{grade.EvidenceReported, true}, {grade.EvidenceInferred, false}, {grade.EvidenceObserved, false}} {
		p := *s.Plan
		pol := p.Policy
		rule := *pol.Routing
		rule.Arm, rule.MinEvidence = "forced", tc.evidence
		pol.Routing = &rule
		p.Policy = pol
		var o *verdict.RuleOutcome
		for i, r := range verdict.BuildReport(&p, cells).Verdict.Rules {
			if r.Rule == "routing" {
				o = &verdict.BuildReport(&p, cells).Verdict.Rules[i]
			}
		}
		if o == nil || o.Met != tc.passed {
			t.Errorf("routing at %s evidence: %+v, want met %v", tc.evidence, o, tc.passed)
		}
	}
}

// TestCodexRepliesAndReport: the real Codex CLI on the scripted model resumes its
// session with `codex exec resume --last` for the user's reply, and each turn's final
// answer is the --output-schema report; the last one's skills_used is reported routing,
// canonicalized.
func TestCodexRepliesAndReport(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, "codexturns")
	out := t.TempDir()
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 1, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != 1 {
		t.Fatalf("summary %+v\n%s", sum, log.String())
	}
	st := &store.Store{Dir: out}
	c := s.Plan.Cells[0]
	ro, _, err := st.Rollout(c.Rollout)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := st.Grade(c.Grade)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStdout))
	if ro.Answer != "Painted it cobalt." || !r.Passed || !reflect.DeepEqual(ro.Messages, []string{"Which colour do you want? (asked-7f3)", "Painted it cobalt."}) {
		t.Errorf("answer %q, messages %q, passed %v, checks %+v\n%s", ro.Answer, ro.Messages, r.Passed, r.Checks, stdout)
	}
	if want := []grade.RoutingEvent{{Name: "s", Evidence: grade.EvidenceReported}}; !reflect.DeepEqual(r.Telemetry.Skills, want) || r.Routing.Skills.TP != 1 {
		t.Errorf("skills %v, routing %+v, want s reported", r.Telemetry.Skills, r.Routing.Skills)
	}
	if ro.Gateway == nil || ro.Gateway.Requests != 2 {
		t.Errorf("gateway %+v, want one model request a turn", ro.Gateway)
	}
}

// TestCaseTargetsOverlayCalibration runs testdata/run/shapes in real cells: the forced
// arm, installing each case's targets, holds only that case's skill, the one its prompt
// names; the none arm holds none; case a's overlay replaces the fixture's README.md and
// adds a file, which the checks (typed and run:) read as its initial workspace, not as
// the agent's changes, while case b sees the fixture alone. The calibration-only case is
// out of the default plan and runs when selected. A command agent's session of two
// turns (case ask) runs its resume command for the reply in the same cell.
func TestCaseTargetsOverlayCalibration(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "shapes")
	for _, c := range s.Plan.Cells {
		if c.Case == "cal" {
			t.Fatalf("the default plan holds calibration-only cell %s", c.ID)
		}
	}
	out := t.TempDir()
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if len(s.Plan.Cells) != 6 || !sum.Complete() || sum.Statuses[store.StatusCompleted] != 6 {
		t.Fatalf("%d cells, summary %+v\n%s", len(s.Plan.Cells), sum, log.String())
	}
	st := &store.Store{Dir: out}
	for _, tc := range []struct {
		cell, skills, readme, prompt string
		extra                        bool
	}{
		{"a/forced/1", "/workspace/.agents/skills/a/SKILL.md\n", "# overlaid for a\n", "Use the a skill for this task.", true},
		{"b/forced/1", "/workspace/.agents/skills/b/SKILL.md\n", "# fixture\n", "Use the b skill for this task.", false},
		{"a/none/1", "", "# overlaid for a\n", "Do a.", true},
		{"b/none/1", "", "# fixture\n", "Do b.", false},
	} {
		c := s.cell(t, tc.cell)
		got := sections(readStored(t, out, c, store.FileStdout))
		if len(got) != 4 {
			t.Fatalf("%s: stdout %q", tc.cell, got)
		}
		if got[0] != tc.skills {
			t.Errorf("%s: skill files %q, want %q", tc.cell, got[0], tc.skills)
		}
		if got[1] != tc.readme {
			t.Errorf("%s: README.md %q, want %q", tc.cell, got[1], tc.readme)
		}
		if has := strings.Contains(got[2], "./src/Extra.kt\n"); has != tc.extra || !strings.Contains(got[2], "./keep.txt\n") || !strings.Contains(got[2], "./src/Main.kt\n") {
			t.Errorf("%s: files %q, want the fixture's (and the overlay's: %v)", tc.cell, got[2], tc.extra)
		}
		if !strings.HasPrefix(got[3], tc.prompt) {
			t.Errorf("%s: prompt %q, want it to start %q", tc.cell, got[3], tc.prompt)
		}
		ro := stored(t, out)[tc.cell]
		if len(ro.Changes) != 0 {
			t.Errorf("%s: changes %+v: the overlay is the initial workspace", tc.cell, ro.Changes)
		}
		if ro.Inputs.Overlay != s.Plan.Cases[0].OverlayDigest && tc.extra {
			t.Errorf("%s: rollout inputs name overlay %s, want %s", tc.cell, ro.Inputs.Overlay, s.Plan.Cases[0].OverlayDigest)
		}
		r, ok, err := st.Grade(c.Grade)
		if err != nil || !ok || !r.Passed {
			t.Errorf("%s: grade %+v, %v", tc.cell, r, err)
		}
	}

	// Case ask's session: the reply's turn ran in the same cell, after the first.
	for _, id := range []string{"ask/none/1", "ask/forced/1"} {
		c := s.cell(t, id)
		ro := stored(t, out)[id]
		r, _, err := st.Grade(c.Grade)
		if err != nil || r == nil || !r.Passed || len(ro.Messages) != 2 || ro.Answer != ro.Messages[1] {
			t.Errorf("%s: grade %+v, messages %q, answer %q", id, r, ro.Messages, ro.Answer)
		}
	}

	// Selected, the calibration-only case is planned, with the targets it names.
	p, err := plan.CompileDirCases(s.Dir, []string{"cal"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.CalibrationCases(); !reflect.DeepEqual(got, []string{"cal"}) || len(p.Cells) != 8 {
		t.Fatalf("selected plan: calibration cases %v, %d cells", got, len(p.Cells))
	}
	sel, err := Select(p, []string{"cal"}, []string{"forced"}, "")
	if err != nil || len(sel) != 1 {
		t.Fatalf("select cal: %v, %v", sel, err)
	}
	out = t.TempDir()
	log.Reset()
	if sum, err := Run(context.Background(), p, Options{Out: out, SuiteDir: s.Dir, Cases: []string{"cal"}, Arms: []string{"forced"}, Log: &log}); err != nil || sum.Ran != 1 || !sum.Complete() {
		t.Fatalf("run cal: %+v, %v\n%s", sum, err, log.String())
	}
	got := sections(readStored(t, out, sel[0], store.FileStdout))
	if want := "/workspace/.agents/skills/a/SKILL.md\n/workspace/.agents/skills/b/SKILL.md\n"; got[0] != want || !strings.HasPrefix(got[3], "Use the a, b skill") {
		t.Errorf("cal/forced/1: skill files %q, prompt %q", got[0], got[3])
	}
}

// TestRubricPassThreshold grades real cells of testdata/run/rubric with the scripted
// judge: at rubricPass 0.8, four criteria of five met pass the cell and three do not;
// at the default (every criterion) four do not; and a judge meeting all five never
// passes a cell whose deterministic check failed, nor does its adjudication.
func TestRubricPassThreshold(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "rubric")
	out := t.TempDir()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != 4 {
		t.Fatalf("summary %+v\n%s", sum, log.String())
	}
	st := &store.Store{Dir: out}
	for _, tc := range []struct {
		cell   string
		passed bool
		score  float64
	}{
		{"four/none/1", true, 0.8},
		{"three/none/1", false, 0.6},
		{"strict/none/1", false, 0.8},
		{"broken/none/1", false, 1},
	} {
		c := s.cell(t, tc.cell)
		r, ok, err := st.Grade(c.Grade)
		if err != nil || !ok {
			t.Fatalf("%s: grade: %v", tc.cell, err)
		}
		if r.Status != grade.StatusCompleted || r.Passed != tc.passed || r.Judge == nil || r.Judge.Score != tc.score {
			t.Errorf("%s: status %s, passed %v, judge %+v; want passed %v at judge score %g\n%s", tc.cell, r.Status, r.Passed, r.Judge, tc.passed, tc.score, log.String())
		}
		judged := 0
		for _, ch := range r.Checks {
			if ch.Kind == grade.CheckJudge {
				judged++
			}
		}
		if judged != 5 {
			t.Errorf("%s: %d criteria among the checks, want all 5, met or not", tc.cell, judged)
		}
		if tc.cell == "broken/none/1" && (r.Judge.Dispute == nil || r.Judge.Dispute.Decision() != grade.DecisionPass) {
			t.Errorf("%s: dispute %+v, want the adjudicator's pass, which passes nothing", tc.cell, r.Judge.Dispute)
		}
	}
	if m := rep.Arms[0].Metrics[verdict.MetricTaskSuccess]; m.Value != 0.25 || m.Samples != 4 {
		t.Errorf("task success %+v, want 1 of 4", m)
	}
}
