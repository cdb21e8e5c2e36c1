package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/report"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/agent"

	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestDemoEndToEnd runs the demo suite for real (the real Claude Code CLI,
// its model the suite's scripted stand-in), checks its verdict, routing
// telemetry and reports, and rebuilds the reports from the store byte for
// byte.
func TestDemoEndToEnd(t *testing.T) {
	dockertest.Engine(t)
	p, err := plan.CompileDir("../suites/demo")
	if err != nil {
		t.Fatal(suite.PrintError(err, ".."))
	}
	suiteDir, _ := filepath.Abs("../suites/demo")
	out := t.TempDir()
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: suiteDir, Jobs: 8, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(p.Cells) {
		t.Fatalf("summary %+v", sum)
	}
	// The stand-in model misses the skill on the release-notes prompt in
	// the automatic arm and writes a second file there: a forbidden write.
	if r.Verdict.Verdict != verdict.VerdictFail || strings.Join(r.Verdict.Reasons, ",") != "FORBIDDEN automatic" {
		t.Errorf("verdict %s %v", r.Verdict.Verdict, r.Verdict.Reasons)
	}
	if r.StandIn == "" {
		t.Error("the stand-in agent is not labelled in the report")
	}
	// The report names who answered: the scripted model, the Claude Code
	// version of the image's label and of the transcripts, one for all.
	version := strings.TrimPrefix(p.Agent.Image, agent.ImageRepo(agent.ClaudeCode)+":")
	if o := r.Observed; o.Rollouts != len(p.Cells) || len(o.Models) != 1 || len(o.AgentImages) != 1 ||
		strings.Join(o.AgentVersions, ",") != version || strings.Join(o.CLIVersions, ",") != version || len(o.Harness) != 1 {
		t.Errorf("observed identity %+v, want one model and Claude Code %s", o, version)
	}
	rate := map[string]float64{}
	for _, a := range r.Arms {
		rate[a.Name] = a.Metrics[verdict.MetricTaskSuccess].Value
	}
	if !(rate["none"] < rate["automatic"] && rate["automatic"] < rate["forced"]) {
		t.Errorf("pass rates %v: want none < automatic < forced", rate)
	}
	for _, a := range r.Arms {
		if a.Name != "forced" {
			continue
		}
		for _, m := range []string{"turns", "tokensInput", "tokensOutput"} {
			if v, ok := a.Cost[m]; !ok || v.Samples != len(r.Cases)*p.Suite.Trials || v.Value <= 0 {
				t.Errorf("forced arm: cost metric %s = %+v (present %v), want one per cell", m, v, ok)
			}
		}
	}
	// Every rollout, from the store: the forced arm activated the skill
	// through the Skill tool (observed), the none arm never saw it, and
	// Claude Code refused no tool call.
	st := &store.Store{Dir: out}
	for _, c := range r.Cases {
		for arm, trials := range c.Trials {
			for _, tr := range trials {
				ro, ok, err := st.Rollout(tr.Rollout)
				if err != nil || !ok {
					t.Fatalf("%s: rollout %s: %v", tr.Cell, tr.Rollout, err)
				}
				tel := ro.Telemetry
				skills := map[string]string{}
				for _, e := range tel.Skills {
					skills[e.Name] = e.Evidence
				}
				switch arm {
				case "forced":
					if skills["changelog"] != grade.EvidenceObserved || tel.Tokens == nil || tel.Turns == nil {
						t.Errorf("%s: skills %v, tokens %v, turns %v: want changelog observed, tokens and turns", tr.Cell, tel.Skills, tel.Tokens, tel.Turns)
					}
				case "none":
					for _, e := range append(append([]grade.RoutingEvent{}, tel.Skills...), tel.References...) {
						if strings.HasPrefix(e.Name, "changelog") {
							t.Errorf("%s: a none-arm cell lists %s (%s)", tr.Cell, e.Name, e.Evidence)
						}
					}
				}
				stdout, err := os.ReadFile(filepath.Join(st.RolloutDir(tr.Rollout), store.FileStdout))
				if err != nil {
					t.Fatal(err)
				}
				if d := agent.ClaudePermissionDenials(stdout); len(d) > 0 {
					t.Errorf("%s: permission denials %v", tr.Cell, d)
				}
				if strings.Contains(ro.Answer, "<system-reminder>") {
					t.Errorf("%s: the answer carries Claude Code's system reminder:\n%s", tr.Cell, ro.Answer)
				}
			}
		}
	}
	// The scripted judge grades the rubric cases and agrees with the
	// deterministic checks on the forced arm: each forced cell of a case
	// with a rubric carries one passed judge check per criterion.
	results, err := store.Results(p, st)
	if err != nil {
		t.Fatal(err)
	}
	rubric := map[string]int{}
	for _, pc := range p.Cases {
		rubric[pc.ID] = len(pc.Rubric)
	}
	judgedForced := 0
	for _, res := range results {
		if res.Arm != "forced" || rubric[res.Case] == 0 {
			continue
		}
		judgedForced++
		var judged []grade.CheckResult
		for _, ch := range res.Checks {
			if ch.Kind == grade.CheckJudge {
				judged = append(judged, ch)
			}
		}
		if res.Judge == nil || !res.Judge.Valid || len(judged) != rubric[res.Case] {
			t.Errorf("%s: judge %+v, %d judge checks; want a valid judgement with %d", res.Cell, res.Judge, len(judged), rubric[res.Case])
		}
		for _, ch := range judged {
			if !ch.Passed {
				t.Errorf("%s: judge check %q failed: %s", res.Cell, ch.Name, ch.Detail)
			}
		}
	}
	if judgedForced == 0 {
		t.Error("no forced cell of a rubric case")
	}
	if rate["forced"] != 1 {
		t.Errorf("forced pass rate %v, want 100%% with the judge", rate["forced"])
	}
	checkDemoEvidence(t, out)
	files := []string{"verdict.json", "report.json", "report.md", "report.html", "junit.xml"}
	before := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("report %s: %v", f, err)
		}
		before[f] = b
		os.Remove(filepath.Join(out, f))
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock") // a rebuild needs no engine
	if _, err := Report(out); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !bytes.Equal(b, before[f]) {
			t.Errorf("%s differs after a rebuild from the store", f)
		}
	}
}

// TestRegradeWithoutAgent changes only an assertion: the next run regrades
// the stored rollouts and starts no agent (no engine is even reachable).
func TestRegradeWithoutAgent(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "basic")
	out := t.TempDir()
	if _, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(s.Dir, "suite.cue")
	src, _ := os.ReadFile(file)
	edited := strings.Replace(string(src), `a: {prompt: "do a", fixture: "fx"}`, `a: {prompt: "do a", fixture: "fx", assert: [{answer: {contains: "nothing like this"}}]}`, 1)
	if edited == string(src) {
		t.Fatal("suite.cue did not change")
	}
	os.WriteFile(file, []byte(edited), 0o644)
	p2, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	sum, r, err := Evaluate(context.Background(), p2, Options{Out: out, SuiteDir: s.Dir, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 0 || sum.Reused != len(p2.Cells) {
		t.Errorf("summary %+v: want every rollout reused", sum)
	}
	for _, c := range r.Cases {
		for arm, trials := range c.Trials {
			for _, tr := range trials {
				if want := c.ID != "a"; tr.Passed != want {
					t.Errorf("%s/%s/%d passed=%v, want %v after the regrade", c.ID, arm, tr.Trial, tr.Passed, want)
				}
			}
		}
	}
}

// TestDemoCalibration: the demo's stand-in passes the three calibration
// checks through the real Claude Code CLI, and nothing else runs.
func TestDemoCalibration(t *testing.T) {
	dockertest.Engine(t)
	p, err := plan.CompileDir("../suites/demo")
	if err != nil {
		t.Fatal(suite.PrintError(err, ".."))
	}
	suiteDir, _ := filepath.Abs("../suites/demo")
	out := t.TempDir()
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: suiteDir, Jobs: 4, Log: &log, Calibrate: true})
	if err != nil || sum != nil || r != nil {
		t.Fatalf("calibrate: %v %v %v\n%s", err, sum, r, log.String())
	}
	cal, ok, err := store.ReadCalibration(out, p)
	if err != nil || !ok || !cal.Passed() || len(cal.Checks) != 4 {
		t.Fatalf("calibration %+v %v %v\n%s", cal, ok, err, log.String())
	}
	if rs, _ := store.Results(p, &store.Store{Dir: out}); rs[0].Status != grade.StatusMissing {
		t.Errorf("a plan cell ran during calibration: %+v", rs[0])
	}
}

// TestRelativeRunFolder runs with a relative --out, as the README's first
// command does: run: checks bind-mount folders of the store, which Docker
// accepts only as absolute paths.
func TestRelativeRunFolder(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "basic")
	file := filepath.Join(s.Dir, "suite.cue")
	src, _ := os.ReadFile(file)
	edited := strings.Replace(string(src), `a: {prompt: "do a", fixture: "fx"}`, `a: {prompt: "do a", fixture: "fx", assert: [{run: "grep -q 'do a' \"$OUTPUT\""}]}`, 1)
	if edited == string(src) {
		t.Fatal("suite.cue did not change")
	}
	os.WriteFile(file, []byte(edited), 0o644)
	p, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	_, r, err := Evaluate(context.Background(), p, Options{Out: "out", SuiteDir: s.Dir, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Cases {
		for arm, trials := range c.Trials {
			for _, tr := range trials {
				if !tr.Passed {
					t.Errorf("%s/%s/%d failed: %v", c.ID, arm, tr.Trial, tr.Failed)
				}
			}
		}
	}
}

// TestSkillChangeRerunsOnlyItsArms: after an edit to the skill alone, a run
// starts only the cells of the arms that install it; the baseline's stored
// rollouts are reused.
func TestSkillChangeRerunsOnlyItsArms(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "basic")
	out := t.TempDir()
	first := s.run(t, out, Options{})
	if first.Ran != len(s.Plan.Cells) {
		t.Fatalf("first run: %+v", first)
	}
	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	b, _ := os.ReadFile(skill)
	os.WriteFile(skill, append(b, []byte("\nOne more rule.\n")...), 0o644)
	p, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Plan = p
	second := s.run(t, out, Options{})
	var skillCells, baseCells int
	for _, c := range p.Cells {
		if c.Arm == "none" {
			baseCells++
		} else {
			skillCells++
		}
	}
	if second.Ran != skillCells || second.Reused != baseCells {
		t.Errorf("second run ran %d and reused %d; want %d skill-arm cells run and %d baseline cells reused", second.Ran, second.Reused, skillCells, baseCells)
	}
}

// checkDemoEvidence reads the evidence report.html embeds for the demo's forbidden
// write, the cell the Reasons box links first: what the agent was asked, its session
// as the real Claude Code CLI told it (the Bash call and its result), its answer, the
// diff of the file it should not have written, and each failed check with what it found.
func checkDemoEvidence(t *testing.T, out string) {
	t.Helper()
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	const cell = "deprecation-release-notes/automatic/1"
	if !bytes.Contains(html, []byte(`href="#cell=deprecation-release-notes%2Fautomatic%2F1"`)) {
		t.Fatalf("the Reasons box does not link %s", cell)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" class="ev" data-case="deprecation-release-notes">(.*?)</script>`).FindSubmatch(html)
	if m == nil {
		t.Fatal("report.html holds no evidence block for deprecation-release-notes")
	}
	var cells []report.CellEvidence
	if err := json.Unmarshal(m[1], &cells); err != nil {
		t.Fatalf("evidence block: %v", err)
	}
	var ce *report.CellEvidence
	for i := range cells {
		if cells[i].Cell == cell {
			ce = &cells[i]
		}
	}
	if ce == nil {
		t.Fatalf("no evidence of %s among %d cells", cell, len(cells))
	}
	if !strings.Contains(ce.Prompt, "release notes") || ce.Answer == "" || ce.Passed {
		t.Errorf("prompt %q, answer %q, passed %v", ce.Prompt, ce.Answer, ce.Passed)
	}
	bash := false
	for _, tr := range ce.Turns {
		bash = bash || (tr.Role == "tool" && tr.Tool == "Bash" && tr.Input != "" && tr.Result != "")
	}
	if !bash {
		t.Errorf("no Bash call with its result in the session: %+v", ce.Turns)
	}
	if len(ce.Diffs) != 1 || ce.Diffs[0].Path != "RELEASE_NOTES.md" || !strings.Contains(ce.Diffs[0].Diff, "+++ b/RELEASE_NOTES.md") {
		t.Errorf("diffs %+v, want the added RELEASE_NOTES.md", ce.Diffs)
	}
	failed := 0
	for _, ch := range ce.Checks {
		if !ch.Passed {
			failed++
			if ch.Detail == "" {
				t.Errorf("failed check %q says nothing of what it found", ch.Name)
			}
		}
	}
	if failed == 0 || ce.Files["transcript"] == "" || ce.Model == "" {
		t.Errorf("%d failed checks, files %v, model %q", failed, ce.Files, ce.Model)
	}
}
