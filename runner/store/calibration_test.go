package store

import (
	"bytes"
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
