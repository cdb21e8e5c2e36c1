package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestCalibrateSeveralAgents (real Docker, two command agents): each
// agent's share calibrates in turn into one run folder; calibration.json
// and report.json's calibration list every agent's three checks, by agent
// in the plan's order, and a second run replaces each agent's checks, never
// adding them twice.
func TestCalibrateSeveralAgents(t *testing.T) {
	t.Parallel()
	e := dockertest.Engine(t)
	s := calibrationSuite(t, e, "agents")
	if len(s.Plan.Agents) != 2 {
		t.Fatalf("%d agents, want 2", len(s.Plan.Agents))
	}
	out := t.TempDir()
	want := []string{"first none:none", "first none:shell", "first forced:skill", "second none:none", "second none:shell", "second forced:skill"}
	listed := func(cal *verdict.Calibration) []string {
		var got []string
		for _, c := range cal.Checks {
			got = append(got, c.Agent+" "+c.Arm+":"+c.Check)
		}
		return got
	}
	for run := 1; run <= 2; run++ {
		var log bytes.Buffer
		sum, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log})
		if err != nil || sum == nil || rep == nil {
			t.Fatalf("run %d: %v\n%s", run, err, log.String())
		}
		rec, ok, err := store.ReadCalibration(out, s.Plan)
		if err != nil || !ok {
			t.Fatalf("run %d: calibration.json: %v, %v", run, ok, err)
		}
		if got := listed(rec); !reflect.DeepEqual(got, want) {
			t.Errorf("run %d: calibration.json lists %q, want %q", run, got, want)
		}
		if !rec.Passed() || !isTrue(rec.Skill) || !isTrue(rec.None) || !isTrue(rec.Shell) {
			t.Errorf("run %d: calibration %+v", run, rec)
		}
		b, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r verdict.Report
		if err := json.Unmarshal(b, &r); err != nil || r.Calibration == nil {
			t.Fatalf("run %d: report.json: %v, calibration %v", run, err, r.Calibration)
		}
		if got := listed(r.Calibration); !reflect.DeepEqual(got, want) {
			t.Errorf("run %d: report.json's calibration lists %q, want %q", run, got, want)
		}
	}
}
