package runner

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/runner/agent"
	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"
)

// canarySkill is the SKILL.md of a skill no cell may ever find.
const canarySkill = "---\nname: canary\ndescription: A canary skill; it must never be listed.\n---\n\nCANARY\n"

// canaryImage builds, on the agent image of kind at its pinned version, an image holding
// the canary skill in each of userDirs (user-level skill folders, by absolute path),
// tagged tag, and removes it when the test ends.
func canaryImage(t *testing.T, e *docker.Engine, kind, tag string, userDirs []string) {
	t.Helper()
	ctx := context.Background()
	ref, err := agent.BuildImage(ctx, e, kind, "", agentLog{t})
	if err != nil {
		t.Fatal(err)
	}
	bc := docker.NewBuildContext("FROM " + ref + "\nADD " + docker.LayerTar + " /\n")
	bc.AddDir("home", 0o755, 0, 0)
	for _, d := range userDirs {
		dir := "/"
		for _, part := range strings.Split(strings.Trim(path.Join(d, "canary"), "/"), "/") {
			dir = path.Join(dir, part)
			if dir != "/home" {
				bc.AddDir(dir, 0o755, 1000, 1000)
			}
		}
		bc.AddFile(path.Join(d, "canary", "SKILL.md"), 0o644, 1000, 1000, []byte(canarySkill))
	}
	label := "canary-" + kind
	if _, err := e.BuildImage(ctx, tag, map[string]string{docker.LabelImage: label}, bc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelImage+"="+label) })
}

type agentLog struct{ t *testing.T }

func (l agentLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestOpenCodeEndToEnd: OpenCode 1.18 with the scripted model, on an image that holds a
// canary skill in every folder outside the workspace that OpenCode scans (its own global
// skill and skills folders, ~/.claude/skills, ~/.agents/skills, and /.claude/skills and
// /.agents/skills above the workspace): no cell, baseline or not, is offered it. In the forced arm the model loads the skill with OpenCode's skill tool
// (observed) and runs `cat README.md`, which the trajectory check reads; in the none arm
// it answers at once. The case with a reply resumes the session with --continue.
func TestOpenCodeEndToEnd(t *testing.T) {
	kindEndToEnd(t, agent.OpenCode, "skillgate-test/opencode-canary:1.18.33", grade.EvidenceObserved, []string{
		"/home/agent/.config/opencode/skills", "/home/agent/.config/opencode/skill",
		"/home/agent/.claude/skills", "/home/agent/.agents/skills", "/.claude/skills", "/.agents/skills",
	})
}

// TestPiEndToEnd: the Pi coding agent 0.73 on Node.js with the scripted model, on an
// image that holds a canary skill in every folder outside the workspace that Pi scans
// (~/.pi/agent/skills, ~/.agents/skills, /.agents/skills). In the forced arm the model reads the skill's
// SKILL.md with Pi's read tool (inferred: Pi has no skill tool) and runs `cat README.md`;
// the case with a reply resumes the session with --continue.
func TestPiEndToEnd(t *testing.T) {
	kindEndToEnd(t, agent.Pi, "skillgate-test/pi-canary:0.73.1", grade.EvidenceInferred, []string{
		"/home/agent/.pi/agent/skills", "/home/agent/.agents/skills", "/.agents/skills",
	})
}

// TestGeminiEndToEnd: the Gemini CLI 0.61 on Node.js with the scripted model speaking
// Gemini's streamGenerateContent, on an image that holds a canary skill in every folder
// outside the workspace that the CLI scans (~/.gemini/skills, ~/.agents/skills, its
// extensions, and the skills built into it). In the forced arm the model loads the
// skill with the activate_skill tool (observed) and runs `cat README.md` with
// run_shell_command; the case with a reply resumes the session with --resume latest.
func TestGeminiEndToEnd(t *testing.T) {
	kindEndToEnd(t, agent.Gemini, "skillgate-test/gemini-canary:0.61.0", grade.EvidenceObserved, agent.Of(agent.Gemini).UserSkillDirs)
}

// kindEndToEnd runs testdata/agents/KIND on its canary image (tag, the canary skill in
// each of userDirs) and checks what both tests above say.
func kindEndToEnd(t *testing.T, kind, tag, evidence string, userDirs []string) {
	e := dockertest.Engine(t)
	canaryImage(t, e, kind, tag, userDirs)
	s := copyAgentSuite(t, e, kind)
	out := t.TempDir()
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if len(s.Plan.Cells) != 4 || !sum.Complete() || sum.Statuses[store.StatusCompleted] != len(s.Plan.Cells) {
		t.Fatalf("%d cells, summary %+v\n%s", len(s.Plan.Cells), sum, log.String())
	}
	st := &store.Store{Dir: out}
	for _, c := range s.Plan.Cells {
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil || !ok {
			t.Fatalf("%s: rollout: %v", c.ID, err)
		}
		g, ok, err := st.Grade(c.Grade)
		if err != nil || !ok {
			t.Fatalf("%s: grade: %v", c.ID, err)
		}
		stdout, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStdout))
		stderr, _ := os.ReadFile(filepath.Join(st.RolloutDir(c.Rollout), store.FileStderr))
		tel := ro.Telemetry
		skills := map[string]string{}
		for _, ev := range tel.Skills {
			skills[ev.Name] = ev.Evidence
		}
		if strings.Contains(string(stdout), "CANARY") || skills["canary"] != "" {
			t.Errorf("%s: the canary skill was offered\n%s", c.ID, stdout)
		}
		if tel.Tokens == nil || tel.Tokens.Input == 0 || tel.Turns == nil {
			t.Errorf("%s: tokens %v, turns %v\n%s", c.ID, tel.Tokens, tel.Turns, stdout)
		}
		checks := map[string]grade.CheckResult{}
		for _, ch := range g.Checks {
			checks[ch.Name] = ch
		}
		switch c.Case + "/" + c.Arm {
		case "q/forced":
			if skills["s"] != evidence {
				t.Errorf("%s: skills %v, want s %s\n%s\n%s", c.ID, tel.Skills, evidence, stdout, stderr)
			}
			if want := "ANSWER-42, as the skill says: A fixture."; ro.Answer != want {
				t.Errorf("%s: answer %q, want %q\n%s\n%s", c.ID, ro.Answer, want, stdout, stderr)
			}
			if tel.Turns == nil || *tel.Turns != 3 || tel.ToolCalls == nil || *tel.ToolCalls != 2 {
				t.Errorf("%s: turns %v, tool calls %v, want 3 and 2", c.ID, tel.Turns, tel.ToolCalls)
			}
			calls := agent.Calls(kind, stdout, stderr, nil)
			if calls.Evidence != grade.EvidenceObserved || len(calls.Calls) != 2 || calls.Calls[1].Command != "cat README.md" ||
				calls.Calls[1].ExitCode == nil || *calls.Calls[1].ExitCode != 0 {
				t.Errorf("%s: calls %+v", c.ID, calls)
			}
			if ch := checks["read the readme"]; !ch.Passed || ch.Evidence != grade.EvidenceObserved {
				t.Errorf("%s: trajectory check %+v, want passed and observed", c.ID, ch)
			}
		case "q/none":
			if len(tel.Skills) != 0 || len(tel.References) != 0 {
				t.Errorf("%s: skills %v, references %v, want none", c.ID, tel.Skills, tel.References)
			}
			if ro.Answer != "ANSWER-42, without a skill." {
				t.Errorf("%s: answer %q\n%s\n%s", c.ID, ro.Answer, stdout, stderr)
			}
			if ch := checks["read the readme"]; ch.Passed || ch.Evidence != grade.EvidenceObserved {
				t.Errorf("%s: trajectory check %+v, want failed and observed", c.ID, ch)
			}
		default: // the case with a reply
			if !g.Passed || ro.Answer != "Painted it cobalt." {
				t.Errorf("%s: passed %v, answer %q, checks %+v\n%s\n%s", c.ID, g.Passed, ro.Answer, g.Checks, stdout, stderr)
			}
		}
		if len(ro.Changes) != 0 {
			t.Errorf("%s: changes %v", c.ID, ro.Changes)
		}
	}
}
