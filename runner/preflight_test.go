package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/readback"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// evaluatePreflight runs a testdata/preflight suite through Evaluate.
func evaluatePreflight(t *testing.T, e *docker.Engine, name, out string) (*Summary, *verdict.Report, string, error) {
	t.Helper()
	s := copyTestdataSuite(t, e, filepath.Join("preflight", name))
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	t.Logf("evaluate %s:\n%s", name, log.String())
	return sum, r, log.String(), err
}

// noRollouts fails the test when any cell's rollout is stored in out.
func noRollouts(t *testing.T, out string) {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(out, "store"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "rollout.json" {
			n++
		}
		return nil
	})
	if n > 0 {
		t.Errorf("%d rollouts stored: a cell ran", n)
	}
}

// A check whose tool the environment lacks stops the run before any cell,
// naming the check, the case and where it ran.
func TestPreflightMissingTool(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	out := t.TempDir()
	_, _, _, err := evaluatePreflight(t, e, "tool", out)
	if !errors.Is(err, ErrPreflight) {
		t.Fatalf("evaluate: %v, want ErrPreflight", err)
	}
	for _, want := range []string{`check "kotlin" cannot run`, "case a (the agent's image)", "kotlinc: not found", "no cell was started"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `"wrote"`) {
		t.Errorf("error %q names a check that ran", err)
	}
	noRollouts(t, out)
}

// A task case whose checks all pass on the untouched fixture is reported, in
// the log and the reports; a no-change case, or one with a check that fails
// untouched, is not. A second run reuses every stored outcome.
func TestPreflightUndiscriminating(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	out := t.TempDir()
	_, r, log, err := evaluatePreflight(t, e, "nodiff", out)
	if err != nil {
		t.Fatal(err)
	}
	want := "UNDISCRIMINATING a: its 2 run: checks all pass on the untouched workspace: they cannot tell work from no work"
	if !strings.Contains(log, "warning: "+want) {
		t.Errorf("log lacks the warning %q", want)
	}
	if len(r.Verdict.Warnings) != 1 || r.Verdict.Warnings[0] != want {
		t.Errorf("verdict warnings %q, want [%q]", r.Verdict.Warnings, want)
	}
	for _, f := range []string{"verdict.json", "report.md", "report.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("cannot tell work from no work")) {
			t.Errorf("%s lacks the warning", f)
		}
	}
	rec, err := readback.ReadPreflight(out)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Ran != 5 || rec.Reused != 0 {
		t.Errorf("first preflight ran %d, reused %d; want 5, 0", rec.Ran, rec.Reused)
	}
	if _, _, log, err = evaluatePreflight(t, e, "nodiff", out); err != nil {
		t.Fatal(err)
	}
	if rec, err = readback.ReadPreflight(out); err != nil {
		t.Fatal(err)
	}
	if rec.Ran != 0 || rec.Reused != 5 {
		t.Errorf("second preflight ran %d, reused %d; want 0, 5", rec.Ran, rec.Reused)
	}
	if !strings.Contains(log, "warning: "+want) {
		t.Errorf("second log lacks the warning %q", want)
	}
}

// A check failing on its case's reference solution stops the run before any
// cell, naming it; a check passing on it does not.
func TestPreflightReference(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	out := t.TempDir()
	_, _, _, err := evaluatePreflight(t, e, "reference", out)
	if !errors.Is(err, ErrPreflight) {
		t.Fatalf("evaluate: %v, want ErrPreflight", err)
	}
	if want := `check "tested" fails on the reference solution of case b (the agent's image): exit 1`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
	for _, pass := range []string{`"wrote"`, `"patched"`} {
		if strings.Contains(err.Error(), pass) {
			t.Errorf("error %q names a check that passes on the reference", err)
		}
	}
	noRollouts(t, out)
	rec, rerr := readback.ReadPreflight(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var patched []string
	for _, ch := range rec.Checks {
		if ch.Check == "patched" {
			patched = append(patched, fmt.Sprintf("%s passed=%v", ch.On, ch.Passed))
		}
	}
	if got := strings.Join(patched, ", "); got != "untouched passed=false, reference passed=true" {
		t.Errorf("check patched: %s; want it failing untouched and passing on the patched reference", got)
	}
}

// A check that runs untouched but, after the agent's work, calls a tool the
// environment lacks makes its cell invalid, with the reason, never failed.
func TestPreflightCheck127MidRun(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	out := t.TempDir()
	s := copyTestdataSuite(t, e, filepath.Join("preflight", "midrun"))
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	t.Logf("evaluate:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 1 {
		t.Errorf("ran %d cells, want 1", sum.Ran)
	}
	results, err := store.Results(s.Plan, &store.Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	res := results[0]
	if res.Status != grade.StatusInvalid || res.Passed {
		t.Errorf("cell %s: status %s, passed %v; want invalid", res.Cell, res.Status, res.Passed)
	}
	if want := `check "build" cannot run in the agent's image: exit 127: gradle: not found`; !strings.Contains(res.Error, want) {
		t.Errorf("cell error %q lacks %q", res.Error, want)
	}
	if r.Verdict.Verdict != verdict.VerdictIncomplete {
		t.Errorf("verdict %s, want INCOMPLETE", r.Verdict.Verdict)
	}
}

// Exit 126 and 127 mean the check could not run only for a tool or an
// interpreter; a workspace file the agent was to make is the agent's failure.
func TestPreflightCannotRun(t *testing.T) {
	for _, tc := range []struct {
		exit   int
		output string
		want   string
	}{
		{127, "sh: kotlinc: not found\n", "exit 127: kotlinc: not found"},
		{127, "sh: 1: kotlinc: not found\n", "exit 127: kotlinc: not found"},
		{127, "bash: line 1: java: command not found\n", "exit 127: java: command not found"},
		{127, "./gradlew: 3: exec: java: not found\n", "exit 127: java: not found"},
		{127, "/usr/bin/env: 'python3': No such file or directory\n", "exit 127: python3: No such file or directory"},
		{127, "env: can't execute 'python3': No such file or directory\n", "exit 127: python3: No such file or directory"},
		{127, `OCI runtime exec failed: exec failed: unable to start container process: exec: "bash": executable file not found in $PATH: unknown`, "exit 127: bash: executable file not found in $PATH"},
		{126, "sh: 1: /opt/tool/bin/ktlint: Permission denied\n", "exit 126: /opt/tool/bin/ktlint: Permission denied"},
		{127, "", "exit 127"},
		{127, "sh: 1: ./build.sh: not found\n", ""},
		{126, "sh: ./build.sh: Permission denied\n", ""},
		{127, "sh: /workspace/run.sh: not found\n", ""},
		{127, "bash: check.sh: No such file or directory\n", ""},
		{1, "sh: kotlinc: not found\n", ""},
	} {
		if got := cannotRun(&docker.ExecOutcome{ExitCode: tc.exit, Output: []byte(tc.output)}); got != tc.want {
			t.Errorf("cannotRun(exit %d, %q) = %q, want %q", tc.exit, tc.output, got, tc.want)
		}
	}
}
