package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestGateReadsRunFolders runs a baseline and two candidates for real and
// gates them from their run folders: a held-out case edited under its ID
// is refused, naming it; a hand-edited report.json changes nothing; the
// suite's git revision and dirty state are recorded with each rollout.
func TestGateReadsRunFolders(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "gate")
	root := filepath.Dir(s.Dir)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "HOME="+root, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@skillgate.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@skillgate.invalid")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "suite")

	base, cand, edited := t.TempDir(), t.TempDir(), t.TempDir()
	evaluate := func(s runSuite, out string) {
		t.Helper()
		if _, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4}); err != nil {
			t.Fatal(err)
		}
	}
	evaluate(s, base)
	// The candidate: another skill text, not committed.
	skill := filepath.Join(s.Dir, "skill", "SKILL.md")
	b, _ := os.ReadFile(skill)
	if err := os.WriteFile(skill, append(b, "Check twice.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c := s
	var err error
	if c.Plan, err = plan.CompileDir(s.Dir); err != nil {
		t.Fatal(err)
	}
	evaluate(c, cand)
	// And with the held-out case edited under its ID.
	file := filepath.Join(s.Dir, "suite.cue")
	src, _ := os.ReadFile(file)
	ed := strings.Replace(string(src), `unseen1: {prompt: "do the held-out task", split: "valid-unseen", fixture: "fx", assert: [{answer: matches: "^[0-9a-f]{64}"}]}`,
		`unseen1: {prompt: "an easier task", split: "valid-unseen", fixture: "fx", assert: [{answer: matches: "[0-9a-f]"}]}`, 1)
	if ed == string(src) {
		t.Fatal("suite.cue did not change")
	}
	if err := os.WriteFile(file, []byte(ed), 0o644); err != nil {
		t.Fatal(err)
	}
	d := s
	if d.Plan, err = plan.CompileDir(s.Dir); err != nil {
		t.Fatal(err)
	}
	evaluate(d, edited)

	read := func(out string) verdict.GateRun {
		t.Helper()
		p, r, err := ReadRun(out)
		if err != nil {
			t.Fatal(err)
		}
		return verdict.GateRun{Plan: p, Report: r}
	}
	opts, err := verdict.SkillOptGateOptions()
	if err != nil {
		t.Fatal(err)
	}
	opts.AllowEqual = true
	_, err = verdict.Gate(read(base), read(edited), opts)
	if err == nil || !strings.Contains(err.Error(), "\n\tcase unseen1: prompt, assert differ") {
		t.Errorf("gate of an edited held-out case: %v", err)
	}

	bs, cs := read(base), read(cand)
	for _, side := range []struct {
		name  string
		run   verdict.GateRun
		dirty bool
	}{{"baseline", bs, false}, {"candidate", cs, true}} {
		o := side.run.Report.Observed
		if o.Rollouts != 6 || len(o.Git) != 1 || len(o.Git[0].Revision) != 40 || o.Git[0].Dirty != side.dirty || o.GitMixed {
			t.Errorf("%s observed %+v, want one revision, dirty %v", side.name, o, side.dirty)
		}
	}
	want, err := verdict.Gate(bs, cs, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A forged report.json: the gate reads the store, so nothing changes,
	// and nothing is written into the run folders.
	forged := filepath.Join(cand, report.FileReportJSON)
	if err := os.WriteFile(forged, []byte(`{"suite": "runtest-gate", "arms": [{"name": "skill", "skillBytes": 1, "metrics": {"taskSuccess": {"value": 1, "samples": 6}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := verdict.Gate(read(base), read(cand), opts)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after a forged report.json: %+v, %v; before: %+v", got, err, want)
	}
	if b, _ := os.ReadFile(forged); !bytes.Contains(b, []byte(`"skillBytes": 1`)) {
		t.Error("reading the run rewrote its report.json")
	}
}
