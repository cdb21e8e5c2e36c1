package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
)

// These tests run the real agent CLIs (their skillgate images, built from npm when
// missing) against the scripted model, offline, from a suite in testdata/agents.

// copyAgentSuite copies testdata/agents/NAME into a fresh repository, compiles it, and
// removes the cell images the test builds for it when the test ends.
func copyAgentSuite(t *testing.T, e *docker.Engine, name string) runSuite {
	t.Helper()
	return copyTestdataSuite(t, e, filepath.Join("agents", name))
}

// TestCodexEndToEnd: Codex 0.171 with the scripted model. In the forced arm the model
// reads the skill through Codex's shell tool (exec_command), so the parser infers the
// skill from the command; in the none arm it answers at once and no skill shows.
func TestCodexEndToEnd(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, "codex")
	out := t.TempDir()
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if len(s.Plan.Cells) != 4 || !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("%d cells, summary %+v\n%s", len(s.Plan.Cells), sum, log.String())
	}
	skillMD, err := os.ReadFile(filepath.Join(s.Dir, "skill", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	st := &store.Store{Dir: out}
	for _, c := range s.Plan.Cells {
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil || !ok {
			t.Fatalf("%s: rollout: %v", c.ID, err)
		}
		stdout, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStdout))
		tel := ro.Telemetry
		skills := map[string]string{}
		for _, ev := range tel.Skills {
			skills[ev.Name] = ev.Evidence
		}
		if tel.Tokens == nil || tel.Tokens.Input == 0 || tel.Turns == nil {
			t.Errorf("%s: tokens %v, turns %v", c.ID, tel.Tokens, tel.Turns)
		}
		switch c.Arm {
		case "forced":
			if skills["s"] != grade.EvidenceInferred {
				t.Errorf("%s: skills %v, want s inferred\n%s", c.ID, tel.Skills, stdout)
			}
			// The answer quotes what the command printed: the installed SKILL.md.
			if want := "ANSWER-42, as the skill says:\n" + strings.TrimSpace(string(skillMD)); ro.Answer != want {
				t.Errorf("%s: answer %q\nwant %q", c.ID, ro.Answer, want)
			}
			if ro.Gateway == nil || ro.Gateway.Requests != 2 {
				t.Errorf("%s: gateway %+v, want 2 model requests", c.ID, ro.Gateway)
			}
		case "none":
			if len(tel.Skills) != 0 || len(tel.References) != 0 {
				t.Errorf("%s: skills %v, references %v, want none", c.ID, tel.Skills, tel.References)
			}
			if ro.Answer != "ANSWER-42, without a skill." {
				t.Errorf("%s: answer %q", c.ID, ro.Answer)
			}
		}
		if len(ro.Changes) != 0 {
			t.Errorf("%s: changes %v", c.ID, ro.Changes)
		}
	}
}

// TestBigPromptReachesClaudeCode: a 200 KiB prompt, too large for a command-line argument,
// reaches the real Claude Code CLI through its standard input, whole, in every arm.
func TestBigPromptReachesClaudeCode(t *testing.T) {
	e := dockertest.Engine(t)
	s := copyAgentSuite(t, e, "bigprompt")
	out := t.TempDir()
	var log bytes.Buffer
	sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("summary %+v\n%s", sum, log.String())
	}
	for _, c := range rep.Cases[0].Trials {
		for _, tr := range c {
			if !tr.Passed {
				ro, _, _ := (&store.Store{Dir: out}).Rollout(tr.Rollout)
				t.Errorf("%s: answer %q", tr.Cell, ro.Answer)
			}
		}
	}
}
