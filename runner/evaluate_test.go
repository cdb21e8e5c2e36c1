package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline"
)

// TestDemoEndToEnd runs the demo suite for real, checks its verdict and
// reports, and rebuilds the reports from the store byte for byte.
func TestDemoEndToEnd(t *testing.T) {
	testEngine(t)
	p, err := pipeline.CompileDir("../suites/demo")
	if err != nil {
		t.Fatal(pipeline.PrintError(err, ".."))
	}
	suiteDir, _ := filepath.Abs("../suites/demo")
	out := t.TempDir()
	var log bytes.Buffer
	sum, r, err := Evaluate(context.Background(), p, Options{Out: out, SuiteDir: suiteDir, Jobs: 8, Log: &log})
	if err != nil {
		t.Fatalf("evaluate: %v\n%s", err, log.String())
	}
	if !sum.Complete() || sum.Statuses[StatusCompleted] != len(p.Cells) {
		t.Fatalf("summary %+v", sum)
	}
	// The stand-in misses the skill on the release-notes prompt in the
	// automatic arm and writes a second file there: a forbidden write.
	if r.Verdict.Verdict != pipeline.VerdictFail || strings.Join(r.Verdict.Reasons, ",") != "FORBIDDEN automatic" {
		t.Errorf("verdict %s %v", r.Verdict.Verdict, r.Verdict.Reasons)
	}
	if r.StandIn == "" {
		t.Error("the stand-in agent is not labelled in the report")
	}
	rate := map[string]float64{}
	for _, a := range r.Arms {
		rate[a.Name] = a.Metrics[pipeline.MetricTaskSuccess].Value
	}
	if !(rate["none"] < rate["automatic"] && rate["automatic"] < rate["forced"]) {
		t.Errorf("pass rates %v: want none < automatic < forced", rate)
	}
	files := []string{"verdict.json", "report.json", "report.md", "report.html", "junit.xml"}
	before := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("report %s: %v", f, err)
		}
		before[f] = b
		os.Remove(filepath.Join(out, f))
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock") // a rebuild needs no engine
	if _, err := Report(out); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !bytes.Equal(b, before[f]) {
			t.Errorf("%s differs after a rebuild from the store", f)
		}
	}
}

// TestRegradeWithoutAgent changes only an assertion: the next run regrades
// the stored rollouts and starts no agent (no engine is even reachable).
func TestRegradeWithoutAgent(t *testing.T) {
	e := testEngine(t)
	s := copySuite(t, e, "basic")
	out := t.TempDir()
	if _, _, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(s.Dir, "suite.cue")
	src, _ := os.ReadFile(file)
	edited := strings.Replace(string(src), `a: {prompt: "do a", fixture: "fx"}`, `a: {prompt: "do a", fixture: "fx", assert: [{answer: {contains: "nothing like this"}}]}`, 1)
	if edited == string(src) {
		t.Fatal("suite.cue did not change")
	}
	os.WriteFile(file, []byte(edited), 0o644)
	p2, err := pipeline.CompileDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	sum, r, err := Evaluate(context.Background(), p2, Options{Out: out, SuiteDir: s.Dir, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 0 || sum.Reused != len(p2.Cells) {
		t.Errorf("summary %+v: want every rollout reused", sum)
	}
	for _, c := range r.Cases {
		for arm, trials := range c.Trials {
			for _, tr := range trials {
				if want := c.ID != "a"; tr.Passed != want {
					t.Errorf("%s/%s/%d passed=%v, want %v after the regrade", c.ID, arm, tr.Trial, tr.Passed, want)
				}
			}
		}
	}
}
