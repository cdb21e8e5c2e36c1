package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/checks"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// calibrationSuite copies testdata/calibrate/NAME into a fresh repository
// and compiles it; the cell images it builds are removed when the test ends.
func calibrationSuite(t *testing.T, e *docker.Engine, name string) runSuite {
	t.Helper()
	return copyTestdataSuite(t, e, filepath.Join("calibrate", name))
}

func calibrate(t *testing.T, s runSuite, out string) *verdict.Calibration {
	t.Helper()
	var log bytes.Buffer
	cal, err := Calibrate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log})
	t.Logf("calibrate %s:\n%s", s.Plan.Suite.Name, log.String())
	if err != nil {
		t.Fatalf("calibrate %s: %v", s.Plan.Suite.Name, err)
	}
	t.Logf("%s", DescribeCalibration(cal))
	return cal
}

func checkOf(t *testing.T, cal *verdict.Calibration, arm, check string) verdict.CalibrationCheck {
	t.Helper()
	for _, c := range cal.Checks {
		if c.Arm == arm && c.Check == check {
			return c
		}
	}
	t.Fatalf("no %s check in arm %s: %+v", check, arm, cal.Checks)
	return verdict.CalibrationCheck{}
}

func isTrue(b *bool) bool { return b != nil && *b }

// An agent that genuinely does what it is asked passes every check; a
// second calibration reuses the stored rollouts, and none of them is a
// plan cell's.
func TestCalibratePasses(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	s := calibrationSuite(t, e, "ok")
	out := t.TempDir()
	cal := calibrate(t, s, out)
	if !cal.Passed() || !isTrue(cal.Skill) || !isTrue(cal.None) || !isTrue(cal.Shell) {
		t.Fatalf("calibration failed: %+v", cal.Checks)
	}
	var got []string
	for _, c := range cal.Checks {
		got = append(got, c.Arm+":"+c.Check)
	}
	if want := []string{"none:none", "none:shell", "forced:skill"}; !reflect.DeepEqual(got, want) {
		t.Errorf("checks %v, want %v", got, want)
	}
	if a := checkOf(t, cal, "forced", "skill").Answer; !strings.Contains(a, "Always write the changelog entry before the code change.") {
		t.Errorf("skill answer %q", a)
	}
	if cal.Ran != 3 || cal.Reused != 0 {
		t.Errorf("first calibration ran %d, reused %d; want 3, 0", cal.Ran, cal.Reused)
	}

	// Stored under their own keys: no plan cell has a rollout.
	results, err := store.Results(s.Plan, &store.Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Status != grade.StatusMissing {
			t.Errorf("plan cell %s is %s after calibration alone", r.Cell, r.Status)
		}
	}
	if n := len(stored(t, out)); n != 3 {
		t.Errorf("store holds %d rollouts, want the 3 calibration cells", n)
	}

	again := calibrate(t, s, out)
	if again.Ran != 0 || again.Reused != 3 {
		t.Errorf("second calibration ran %d, reused %d; want 0, 3", again.Ran, again.Reused)
	}
	if !reflect.DeepEqual(again.Checks, cal.Checks) {
		t.Errorf("second calibration differs:\n%+v\n%+v", again.Checks, cal.Checks)
	}
	rec, ok, err := store.ReadCalibration(out, s.Plan)
	if err != nil || !ok || !reflect.DeepEqual(rec.Checks, cal.Checks) || !isTrue(rec.Skill) {
		t.Errorf("recorded calibration %+v, %v, %v", rec, ok, err)
	}
}

// Two arms install different copies of skill s; an agent that always reads
// the before copy passes in before and fails the skill check in after,
// saying which copy it read.
func TestCalibrateStaleCopyFails(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	s := calibrationSuite(t, e, "stale")
	cal := calibrate(t, s, t.TempDir())
	if cal.Passed() || cal.Skill == nil || *cal.Skill || !isTrue(cal.None) || !isTrue(cal.Shell) {
		t.Fatalf("calibration %+v", cal)
	}
	if c := checkOf(t, cal, "before", "skill"); !c.Passed {
		t.Errorf("before's skill check failed: %s", c.Detail)
	}
	after := checkOf(t, cal, "after", "skill")
	if after.Passed {
		t.Fatalf("after's skill check passed: %s", after.Detail)
	}
	for _, want := range []string{
		`"Always write the changelog entry after the code change."`,
		"skill before (arm before's copy)",
		`"Always write the changelog entry before the code change." from this arm's copy (skill after)`,
		"the agent read another copy of s",
	} {
		if !strings.Contains(after.Detail, want) {
			t.Errorf("after's detail lacks %q:\n%s", want, after.Detail)
		}
	}
	if got := cal.Reasons(); !reflect.DeepEqual(got, []string{"CALIBRATION skill after"}) {
		t.Errorf("reasons %v", got)
	}
	if v := verdict.CalibrationVerdict(cal); v.Verdict != verdict.VerdictCalibration || v.ExitCode != 3 {
		t.Errorf("verdict %+v", v)
	}
}

// The quoted line is one only the arm's copy holds, asked for by words
// that start no other line; without a differing copy, a body line of
// several words.
func TestCalibrateQuotableLine(t *testing.T) {
	s := calibrationSuite(t, nil, "stale")
	cells, err := checks.CalibrationCells(s.Plan, s.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	prompts := map[string]string{}
	for _, c := range cells {
		prompts[c.Arm.Name+":"+c.Check] = c.Case.Prompt
	}
	for arm, want := range map[string]string{
		"before:skill": `starts with "Always write the changelog"`,
		"after:skill":  `starts with "Always write the changelog"`,
		"none:none":    `Is a skill named "s" available`,
		"none:shell":   "`echo skillgate-calibration-",
	} {
		if !strings.Contains(prompts[arm], want) {
			t.Errorf("%s prompt lacks %q:\n%s", arm, want, prompts[arm])
		}
	}
	if len(cells) != 4 {
		t.Errorf("%d calibration cells, want 4", len(cells))
	}
	// Selecting arms calibrates only those; the line still tells the
	// copies apart.
	after, err := checks.CalibrationCells(s.Plan, s.Dir, []string{"after"})
	if err != nil || len(after) != 2 || after[0].Check != "skill" || after[1].Check != "shell" || after[0].Case.Prompt != prompts["after:skill"] {
		t.Errorf("arm after alone: %+v, %v", after, err)
	}
	if _, err := checks.CalibrationCells(s.Plan, s.Dir, []string{"nope"}); err == nil {
		t.Error("an unknown arm is calibrated")
	}
	keys := map[string]bool{}
	for _, c := range cells {
		keys[c.Cell.Rollout.String()] = true
	}
	for _, c := range s.Plan.Cells {
		if keys[c.Rollout.String()] {
			t.Errorf("calibration shares plan cell %s's key", c.ID)
		}
	}
}

// An agent that echoes its prompt fails the skill and none checks: the
// none prompt names both markers, the skill prompt only the line's first
// words. (It passes the shell check, whose prompt holds the command's
// output: that check catches an agent that cannot run commands, not one
// that parrots.)
func TestCalibrateEchoAgent(t *testing.T) {
	s := calibrationSuite(t, nil, "stale")
	cells, err := checks.CalibrationCells(s.Plan, s.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if passed, why := c.Grade(c.Case.Prompt); c.Check != verdict.CalibrationShell && passed {
			t.Errorf("%s check in %s passes an echo of its prompt: %s", c.Check, c.Arm.Name, why)
		}
	}
}
