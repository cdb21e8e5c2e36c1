package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"
)

// TestTrajectoryClaudeCode: the real Claude Code CLI on the scripted model
// (testdata/agents/trajectory).
func TestTrajectoryClaudeCode(t *testing.T) {
	trajectoryRun(t, "trajectory", "Bash")
}

// TestTrajectoryCodex: the real Codex CLI on the scripted model
// (testdata/agents/trajectory-codex), whose rules do not read the prompt.
func TestTrajectoryCodex(t *testing.T) {
	trajectoryRun(t, "trajectory-codex", "shell")
}

// trajectoryRun runs a suite whose chrisbanes-shaped case forbids running
// the Gradle wrapper (forbidden_command_patterns, their own pattern) and
// whose own case checks a tool call and a sequence. Where the skill is
// listed (forced, automatic) the agent reads it and runs the wrapper: the
// chrisbanes case fails on its forbidden command alone, the tool and
// sequence checks pass; without it (none) the agent runs `ls`: the
// chrisbanes case passes and the tool check fails. Every trajectory check
// is observed; their safety checks pass everywhere. Changing a tool check
// regrades the stored rollouts and starts no agent.
func trajectoryRun(t *testing.T, name, shellTool string) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, name)
	out := t.TempDir()
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 3, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if len(s.Plan.Cells) != 6 || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("%d cells, summary %+v\n%s", len(s.Plan.Cells), sum, log.String())
	}
	st := &store.Store{Dir: out}
	for _, c := range s.Plan.Cells {
		r, ok, err := st.Grade(c.Grade)
		if err != nil || !ok {
			t.Fatalf("%s: grade: %v", c.ID, err)
		}
		stdout, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStdout))
		skilled := c.Arm != "none"
		failed := map[string]bool{}
		for _, ch := range r.Checks {
			if ch.Kind == grade.CheckTrajectory && ch.Evidence != grade.EvidenceObserved {
				t.Errorf("%s: check %q evidence %q, want observed", c.ID, ch.Name, ch.Evidence)
			}
			if !ch.Passed {
				failed[ch.Name] = true
			}
		}
		var want []string
		switch {
		case c.Case == "gradle-reuse-negative" && skilled:
			want = []string{`forbidden command evidence: (?:^|\s)(?:[^\s]+/)?gradlew(?=$|\s)`}
		case c.Case == "tool-calls" && !skilled:
			want = []string{`tool ` + shellTool + ` args matches "gradlew"`, `sequence command "SKILL\\.md", then command "gradlew"`}
		}
		if len(failed) != len(want) || r.Passed != (len(want) == 0) {
			t.Errorf("%s: passed %v, failed checks %v, want failed %q\n%+v\n%s", c.ID, r.Passed, failed, want, r.Checks, stdout)
		}
		for _, n := range want {
			if !failed[n] {
				t.Errorf("%s: %q did not fail: %v", c.ID, n, failed)
			}
		}
	}

	// Their results.json words the failure as their grader does.
	native, err := os.ReadFile(filepath.Join(out, report.DirChrisbanes, report.FileChrisbanesResults))
	if err != nil || !strings.Contains(string(native), `forbidden command evidence found: (?:^|\\s)(?:[^\\s]+/)?gradlew(?=$|\\s)`) {
		t.Errorf("results.json lacks the forbidden command failure (%v):\n%s", err, native)
	}

	// A tool check changed: a regrade, not a rerun.
	cue := filepath.Join(s.Dir, "suite.cue")
	src, _ := os.ReadFile(cue)
	if err := os.WriteFile(cue, bytes.Replace(src, []byte(`args: matches: "gradlew"`), []byte(`args: matches: "gradlew test"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, s.Dir))
	}
	for i, c := range p2.Cells {
		if c.Rollout != s.Plan.Cells[i].Rollout || (c.Case == "tool-calls") == (c.Grade == s.Plan.Cells[i].Grade) {
			t.Errorf("%s: rollout or grade key moved wrongly after a tool check changed", c.ID)
		}
	}
	g, err := RegradeRun(context.Background(), out, p2, Options{SuiteDir: s.Dir, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.NeedRollout) != 0 {
		t.Errorf("need rollout: %v", g.NeedRollout)
	}
	found := false
	for _, ce := range g.After.Cells {
		for _, ch := range ce.Checks {
			found = found || strings.Contains(ch.Name, `"gradlew test"`)
		}
	}
	if !found {
		t.Errorf("the regraded cells do not carry the changed tool check")
	}
}
