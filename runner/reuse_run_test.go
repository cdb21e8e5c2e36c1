package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/gateway/standin"
	"github.com/skillgate/skillgate/runner/reuse"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
)

// TestReuseAcrossSkillEdit runs a suite of a skill arm and a no-skill arm,
// edits the skill, and runs the new plan into a fresh folder with --reuse
// from the first: only the skill's arm runs, the no-skill cells are taken
// (verified, listed in reused.json, the same records), from the folder
// and from a pack of it; a taken record damaged in its source is refused.
// Both folders pin the fixture from one machine cache.
func TestReuseAcrossSkillEdit(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "pinned")
	cacheDir := t.TempDir()
	first := filepath.Join(t.TempDir(), "first")
	if sum := s.run(t, first, Options{Cache: cacheDir}); sum.Ran != 6 {
		t.Fatalf("first run: %+v", sum)
	}

	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	b, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, append(b, []byte("\nOne more line.\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := plan.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, s.Dir))
	}
	s2 := runSuite{Dir: s.Dir, Plan: p2}

	if err := writePlan(first, s.Plan); err != nil {
		t.Fatal(err)
	}
	var pack bytes.Buffer
	if _, err := store.Export(first, &pack); err != nil {
		t.Fatal(err)
	}
	packFile := filepath.Join(t.TempDir(), "first.tar.gz")
	if err := os.WriteFile(packFile, pack.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := stored(t, first)
	for _, from := range []string{first, packFile} {
		out := filepath.Join(t.TempDir(), "second")
		dry := s2.run(t, out, Options{Cache: cacheDir, Reuse: from, DryRun: true})
		if dry.Taken != 3 || dry.Ran != 0 {
			t.Errorf("dry run with --reuse %s: %+v, want 3 cells it would reuse", from, dry)
		}
		sum := s2.run(t, out, Options{Cache: cacheDir, Reuse: from})
		if sum.Taken != 3 || sum.Ran != 3 || sum.Reused != 3 {
			t.Fatalf("--reuse %s: %+v, want the 3 no-skill cells taken and the 3 skill cells run", from, sum)
		}
		ledger, err := reuse.Ledger(out)
		if err != nil {
			t.Fatal(err)
		}
		for id, ro := range stored(t, out) {
			taken, ok := ledger[ro.Key]
			if ro.Arm == "none" {
				if !ok || taken.From != from || !taken.RanAt.Equal(before[id].StartedAt) || ro.Answer != before[id].Answer {
					t.Errorf("%s: ledger %+v, answer %q; want the first run's record taken from %s", id, taken, ro.Answer, from)
				}
			} else if ok {
				t.Errorf("%s of the edited skill's arm is in the ledger: %+v", id, taken)
			}
		}
		if _, _, err := Evaluate(context.Background(), s2.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Cache: cacheDir}); err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(page), `"reused":{"from":`); n != 3 {
			t.Errorf("report.html marks %d cells reused, want 3", n)
		}
	}

	// A taken record is verified: an answer edited in the source is refused.
	var none plan.Cell
	for _, c := range s2.Plan.Cells {
		if c.Arm == "none" {
			none = c
			break
		}
	}
	answer := filepath.Join(first, filepath.FromSlash(store.DirRollouts), none.Rollout.Encoded(), store.FileAnswer)
	if err := os.WriteFile(answer, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "third")
	var log bytes.Buffer
	sum, err := Run(context.Background(), s2.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Cache: cacheDir, Reuse: first, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Taken != 2 || sum.Ran != 4 || !strings.Contains(log.String(), "reuse: not taken, failed verification") {
		t.Errorf("with a damaged source record: %+v\n%s", sum, log.String())
	}
}

// TestReuseRefusedModelVersion: the provider answers the same model name
// under another version after the first run; the cells of the edited
// skill's arm, run fresh, show it, so the reuse of the no-skill cells is
// refused without a test: they are run again, the log says why, and
// reused.json no longer lists them. Its sentinels are off, so this is the
// check after the run; the log says the reuse was not checked by outcome.
func TestReuseRefusedModelVersion(t *testing.T) {
	e := dockertest.Engine(t)
	t.Setenv("SKILLGATE_TEST_KEY", "sk-ant-stand-in")
	up := standin.New(t, false)
	// The sentinels are off: the check after the run is the one tested.
	root, dir := standinReuseSuite(t, up, "runtest-reuse-drift", "hi", 1, twoCases, "policy: policies.advisory & {reuse: sentinels: 0}")
	compile := func() runSuite {
		p, err := plan.CompileDir(dir)
		if err != nil {
			t.Fatal(suite.PrintError(err, root))
		}
		return runSuite{Dir: dir, Plan: p}
	}
	s := compile()
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+s.Plan.Suite.Name) })
	cacheDir := t.TempDir()
	first := filepath.Join(t.TempDir(), "first")
	if sum := s.run(t, first, Options{Cache: cacheDir}); sum.Ran != 4 {
		t.Fatalf("first run: %+v", sum)
	}
	if err := os.WriteFile(filepath.Join(dir, "skill", "SKILL.md"), []byte("---\nname: s\ndescription: A test skill, edited.\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := compile()
	up.AnswerAs("stand-in-model-2")
	out := filepath.Join(t.TempDir(), "second")
	var log bytes.Buffer
	sum, _, err := Evaluate(context.Background(), s2.Plan, Options{Out: out, SuiteDir: dir, Jobs: 4, Cache: cacheDir, Reuse: first, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if sum.Taken != 0 || sum.Ran != 4 || len(sum.ReuseRefused) != 1 || !strings.Contains(sum.ReuseRefused[0], "stand-in-model-2") {
		t.Errorf("summary %+v, want the 2 reused cells refused and all 4 run\n%s", sum, log.String())
	}
	if !strings.Contains(log.String(), "reuse refused for model m: the provider answered m as stand-in-model-2 in this run, as stand-in-model in the reused rollouts") ||
		!strings.Contains(log.String(), "reuse sentinels for model m (agent command): off (policy.reuse.sentinels: 0): the 2 reused cells are not checked for drift by outcome") {
		t.Errorf("the log does not say why the reuse was refused:\n%s", log.String())
	}
	for id, ro := range stored(t, out) {
		if ro.Status == store.StatusInvalid || ro.Gateway == nil || ro.Gateway.ModelAnswered != "stand-in-model-2" {
			t.Errorf("%s: status %s, answered by %+v; want a fresh rollout", id, ro.Status, ro.Gateway)
		}
	}
	if ledger, _ := reuse.Ledger(out); len(ledger) != 0 {
		t.Errorf("reused.json still lists %d refused rollouts", len(ledger))
	}
}
