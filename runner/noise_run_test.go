package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/pipeline/report"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
)

// A real run of a command agent with a replicate arm reports its noise
// floor: a case the agent answers the same way every time never flips, a
// case it answers by a coin from /dev/urandom flips (all 12 trial pairs of
// the two noisy cases agreeing has chance 2⁻¹²), and verdict.json,
// report.md and report.html carry the figures.
func TestRunNoiseFloor(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "noise")
	out := t.TempDir()
	var log bytes.Buffer
	_, rep, err := Evaluate(context.Background(), s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 4, Log: &log})
	t.Logf("run:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteReports(out, rep); err != nil {
		t.Fatal(err)
	}
	nf := rep.Verdict.NoiseFloor
	if nf == nil || len(nf.Replicates) != 1 {
		t.Fatalf("noise floor %+v", nf)
	}
	rn := nf.Replicates[0]
	if rn.Arm != "skill-2" || rn.Of != "skill" || rn.Pairs != 18 || len(rn.Cases) != 3 {
		t.Fatalf("replicate %+v", rn)
	}
	noisy := 0
	for _, c := range rn.Cases {
		switch {
		case c.Case == "steady" && c.Flips != 0:
			t.Errorf("steady case flipped: %+v", c)
		case strings.HasPrefix(c.Case, "noisy"):
			noisy += c.Flips
		}
	}
	if noisy == 0 || rn.FlipRate <= 0 {
		t.Errorf("the noisy cases never flipped: %+v", rn)
	}
	if vf := nf.VerdictFlip; vf.Draws != 500 || vf.Method == "" {
		t.Errorf("verdict flip %+v", vf)
	}
	i := len(rep.Verdict.Rules) - 1
	if i < 0 || rep.Verdict.Rules[i].Rule != "noiseFloor" || !strings.Contains(rep.Verdict.Rules[i].Detail, "skill-2 against skill: flip rate ") {
		t.Errorf("rules %+v", rep.Verdict.Rules)
	}
	t.Logf("noise floor: %+v; verdict flip %.3f ± %.3f %v", rn, nf.VerdictFlip.Probability, nf.VerdictFlip.StdErr, nf.VerdictFlip.Verdicts)
	for name, want := range map[string]string{"verdict.json": `"noise_floor": {`, "report.md": "### Noise floor", "report.html": "<h2>Noise floor</h2>"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q", name, want)
		}
	}
}
