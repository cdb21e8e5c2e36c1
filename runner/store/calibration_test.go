package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

// TestCalibrationSealed: calibration.json is sealed like every stored record:
// read back as written, refused once a failed check is edited into a pass, and
// refused as a link.
func TestCalibrationSealed(t *testing.T) {
	out := t.TempDir()
	p := &plan.Plan{Digest: digest.FromString("plan")}
	cal := &verdict.Calibration{Checks: []verdict.CalibrationCheck{{Arm: "none", Check: verdict.CalibrationShell}}}
	if err := WriteCalibration(out, p, cal); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadCalibration(out, p)
	if err != nil || !ok || len(got.Checks) != 1 || got.Checks[0].Passed {
		t.Fatalf("read back: %+v %v %v", got, ok, err)
	}
	if _, ok, err := ReadCalibration(out, &plan.Plan{Digest: digest.FromString("other")}); ok || err != nil {
		t.Errorf("another plan's: %v %v", ok, err)
	}
	file := filepath.Join(out, FileCalibration)
	b, _ := os.ReadFile(file)
	os.WriteFile(file, bytes.Replace(b, []byte(`"passed": false`), []byte(`"passed": true`), 1), 0o644)
	if _, _, err := ReadCalibration(out, p); err == nil || !strings.Contains(err.Error(), "is not what its seal") {
		t.Errorf("an edited calibration: %v", err)
	}
	os.Remove(file)
	elsewhere := filepath.Join(t.TempDir(), "calibration.json")
	os.WriteFile(elsewhere, b, 0o644)
	os.Symlink(elsewhere, file)
	if _, _, err := ReadCalibration(out, p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a linked calibration: %v", err)
	}
}

// TestCalibrationAgents: in a plan on several agents each agent's checks
// are kept beside the others', in the plan's agent order, and replaced by
// that agent's next calibration; a record of one agent (its checks name
// none, as every record before agents were named) reads as it was written
// and is replaced whole.
func TestCalibrationAgents(t *testing.T) {
	out := t.TempDir()
	p := &plan.Plan{Digest: digest.FromString("plan"), Agents: []plan.PlanAgent{{Name: "first"}, {Name: "second"}}}
	write := func(checks ...verdict.CalibrationCheck) {
		t.Helper()
		if err := WriteCalibration(out, p, &verdict.Calibration{Checks: checks}); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() string {
		t.Helper()
		cal, ok, err := ReadCalibration(out, p)
		if err != nil || !ok {
			t.Fatalf("read: %v %v", ok, err)
		}
		var s []string
		for _, ch := range cal.Checks {
			s = append(s, fmt.Sprintf("%s/%s/%s/%v", ch.Agent, ch.Arm, ch.Check, ch.Passed))
		}
		shell := "nil"
		if cal.Shell != nil {
			shell = fmt.Sprint(*cal.Shell)
		}
		return strings.Join(s, " ") + " shell=" + shell
	}
	write(verdict.CalibrationCheck{Arm: "none", Check: verdict.CalibrationShell, Passed: true})
	if got, want := listed(), "/none/shell/true shell=nil"; got != want {
		t.Errorf("a record of one agent: %s, want %s", got, want)
	}
	write(verdict.CalibrationCheck{Agent: "second", Arm: "none", Check: verdict.CalibrationShell})
	write(verdict.CalibrationCheck{Agent: "first", Arm: "none", Check: verdict.CalibrationShell, Passed: true})
	if got, want := listed(), "first/none/shell/true second/none/shell/false shell=false"; got != want {
		t.Errorf("two agents: %s, want %s", got, want)
	}
	write(verdict.CalibrationCheck{Agent: "second", Arm: "none", Check: verdict.CalibrationShell, Passed: true})
	if got, want := listed(), "first/none/shell/true second/none/shell/true shell=true"; got != want {
		t.Errorf("second calibrated again: %s, want %s", got, want)
	}
	cal, _, _ := ReadCalibration(out, p)
	cal.Checks[1].Passed = false
	if got := cal.Reasons(); len(got) != 1 || got[0] != "CALIBRATION shell none (agent second)" {
		t.Errorf("reasons %q", got)
	}
}
