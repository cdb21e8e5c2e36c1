package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/docker"
	"github.com/skillgate/skillgate/runner/docker/dockertest"
	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/inference"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// sequentialSuite writes a suite of eight cases and two arms whose command
// agent passes or fails by its case's prompt and its arm's skill: in a
// "win" case only the skill's arm passes, in a "lose" case only the arm
// without it. lose cases are the last `lose` of the eight.
func sequentialSuite(t *testing.T, e *docker.Engine, name string, lose int, trials int, sequential, pause string) runSuite {
	t.Helper()
	var cases strings.Builder
	for i := 1; i <= 8; i++ {
		prompt := "win"
		if i > 8-lose {
			prompt = "lose"
		}
		// Each case its own prompt, so no two share a rollout key.
		fmt.Fprintf(&cases, "\t\tc%d: {prompt: \"%s %d\", assert: [{answer: {contains: \"PASS\"}}]}\n", i, prompt, i)
	}
	script := pause + `if [ -f .agents/skills/s/SKILL.md ]; then skill=1; else skill=0; fi
case "$1" in *win*) want=1;; *) want=0;; esac
if [ "$skill" = "$want" ]; then echo PASS; else echo no; fi`
	root := writeRepo(t, map[string]string{
		"s/skill/SKILL.md": "---\nname: s\ndescription: The skill.\n---\nBody.\n",
		"s/suite.cue": fmt.Sprintf(`package s

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
)

schema.#Suite & {
	name: %q
	skills: s: path: "skill"
	agent: agents.command & {command: ["sh", "-c", %q, "sh", "{{prompt}}"]}
	trials: %d
	arms: {
		none: {}
		forced: {skills: ["s"], activation: "forced"}
	}
	cases: {
%s	}
	policy: {uplift: {}, sequential: {%s}}
}
`, name, script, trials, cases.String(), sequential),
	})
	dir := filepath.Join(root, "s")
	p, err := plan.CompileDir(dir)
	if err != nil {
		t.Fatal(suite.PrintError(err, root))
	}
	t.Cleanup(func() { e.RemoveImages(context.Background(), docker.LabelSuite+"="+p.Suite.Name) })
	return runSuite{Dir: dir, Plan: p}
}

// evaluate runs the suite in-process as `skillgate run` does.
func (s runSuite) evaluate(t *testing.T, ctx context.Context, out string) (*Summary, *verdict.Report) {
	t.Helper()
	var log bytes.Buffer
	sum, r, err := Evaluate(ctx, s.Plan, Options{Out: out, SuiteDir: s.Dir, Jobs: 2, Log: &log})
	t.Logf("run %s:\n%s", s.Plan.Suite.Name, log.String())
	if err != nil {
		t.Fatalf("run %s: %v", s.Plan.Suite.Name, err)
	}
	return sum, r
}

// readSequential reads the run folder's sequential record.
func readSequential(t *testing.T, out string) (*verdict.Sequential, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, FileSequential))
	if err != nil {
		t.Fatal(err)
	}
	var s verdict.Sequential
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s, b
}

// A clear win stops after round 1: 16 of the 64 planned cells run, the
// other 48 are recorded as not needed (never missing), the verdict is
// PASS and says why; a second run starts nothing and rebuilds the same
// bytes.
func TestSequentialClearWinStopsEarly(t *testing.T) {
	e := dockertest.Engine(t)
	s := sequentialSuite(t, e, "seq-win", 0, 4, "", "")
	out := t.TempDir()
	sum, r := s.evaluate(t, context.Background(), out)
	if sum.Ran != 16 || sum.NotNeeded != 48 || sum.Selected != 16 || !sum.Complete() {
		t.Fatalf("summary %+v, want 16 ran, 48 not needed", sum)
	}
	if r.Verdict.Verdict != verdict.VerdictPass {
		t.Fatalf("verdict %s %v, want PASS", r.Verdict.Verdict, r.Verdict.Reasons)
	}
	if n := len(stored(t, out)); n != 16 {
		t.Errorf("%d rollouts stored, want 16", n)
	}
	seq, first := readSequential(t, out)
	c := seq.Comparisons[0]
	if c.Decision != inference.SequentialEffect || c.Round != 1 || c.Wins != 8 || c.Losses != 0 || seq.Saved != 48 || len(seq.NotNeeded) != 48 {
		t.Errorf("sequential %+v, comparison %+v", seq, c)
	}
	if !strings.Contains(DescribeSummary(sum, out, false), "48 selected cells not needed") {
		t.Errorf("summary does not say what was saved: %s", DescribeSummary(sum, out, false))
	}
	v, _ := os.ReadFile(filepath.Join(out, "verdict.json"))
	if strings.Contains(string(v), "INCOMPLETE") || !strings.Contains(string(v), `"decision": "effect"`) {
		t.Errorf("verdict.json:\n%s", v)
	}
	rep, _ := os.ReadFile(filepath.Join(out, "report.json"))
	sum2, _ := s.evaluate(t, context.Background(), out)
	if sum2.Ran != 0 || sum2.Reused != 16 || sum2.NotNeeded != 48 {
		t.Errorf("second run %+v, want nothing run", sum2)
	}
	_, again := readSequential(t, out)
	rep2, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if !bytes.Equal(first, again) || !bytes.Equal(rep, rep2) {
		t.Errorf("the same evidence gave other bytes")
	}
}

// A tie (four cases won by each arm every round) never reaches 1/α: it
// stops for futility at Wald's boundary (futility 0.3: after round 2),
// and the rule's own verdict stands (no uplift: FAIL).
func TestSequentialTieRunsToFutility(t *testing.T) {
	e := dockertest.Engine(t)
	s := sequentialSuite(t, e, "seq-tie", 4, 4, "futility: 0.3", "")
	out := t.TempDir()
	sum, r := s.evaluate(t, context.Background(), out)
	seq, _ := readSequential(t, out)
	c := seq.Comparisons[0]
	if c.Decision != inference.SequentialFutility || c.Round != 2 || c.Wins != 8 || c.Losses != 8 {
		t.Fatalf("comparison %+v, want futility after round 2", c)
	}
	if sum.Ran != 32 || sum.NotNeeded != 32 || !sum.Complete() {
		t.Errorf("summary %+v, want 32 ran, 32 not needed", sum)
	}
	if r.Verdict.Verdict != verdict.VerdictFail {
		t.Errorf("verdict %s %v, want FAIL (no uplift)", r.Verdict.Verdict, r.Verdict.Reasons)
	}
}

// A run interrupted inside round 1 resumes in round 1: the second run
// finishes the round, decides, and starts no cell the decision does not
// need.
func TestSequentialResumesAnInterruptedRound(t *testing.T) {
	e := dockertest.Engine(t)
	s := sequentialSuite(t, e, "seq-resume", 0, 4, "", "sleep 1; ")
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			m, _ := filepath.Glob(filepath.Join(out, filepath.FromSlash(store.DirRollouts), "*", store.FileRollout))
			if len(m) >= 4 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	sum1, r1 := s.evaluate(t, ctx, out)
	cancel()
	<-done
	if !sum1.Interrupted || sum1.Ran >= 16 || r1.Verdict.Verdict != verdict.VerdictIncomplete {
		t.Fatalf("interrupted run: %+v, verdict %s", sum1, r1.Verdict.Verdict)
	}
	if seq, _ := readSequential(t, out); seq.Comparisons[0].Decision != verdict.SequentialPending || len(seq.NotNeeded) != 0 {
		t.Errorf("after the interrupt: %+v", seq.Comparisons[0])
	}
	kept := len(stored(t, out))
	sum2, r2 := s.evaluate(t, context.Background(), out)
	if sum2.Ran != 16-kept || sum2.Reused != kept || sum2.NotNeeded != 48 || r2.Verdict.Verdict != verdict.VerdictPass {
		t.Errorf("resumed: %+v, verdict %s %v; want %d ran, %d reused", sum2, r2.Verdict.Verdict, r2.Verdict.Reasons, 16-kept, kept)
	}
	if n := len(stored(t, out)); n != 16 {
		t.Errorf("%d rollouts stored, want round 1's 16", n)
	}
}
