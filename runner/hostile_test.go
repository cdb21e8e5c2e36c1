package runner

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/runner/docker/dockertest"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// TestHostileAgent runs an agent that attacks its own grading from inside real cells
// (testdata/run/hostile): each attack is contained and recorded, every cell is graded on
// the final state it left (none is invalid), and the verdict is written.
func TestHostileAgent(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "hostile")
	out := t.TempDir()
	sum, rep := evaluate(t, s.Plan, s.Dir, out)
	if sum.Statuses[store.StatusInvalid] != 0 || rep == nil {
		t.Fatalf("summary %+v, report %v", sum, rep != nil)
	}
	for _, f := range []string{"verdict.json", "report.json", "report.md", "report.html", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	results, err := store.Results(s.Plan, &store.Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]grade.CellResult{}
	for _, r := range results {
		by[r.Cell] = r
		if r.Status != store.StatusCompleted {
			t.Errorf("%s: status %s (%s), want completed: every shape of workspace is gradeable", r.Cell, r.Status, r.Error)
		}
	}
	checks := func(id string) map[string]grade.CheckResult {
		m := map[string]grade.CheckResult{}
		for _, ch := range by[id].Checks {
			m[ch.Name] = ch
		}
		return m
	}
	passed := func(id string, want map[string]bool) {
		t.Helper()
		got := checks(id)
		for name, ok := range want {
			ch, found := got[name]
			if !found {
				t.Errorf("%s: no check %q in %+v", id, name, by[id].Checks)
				continue
			}
			if ch.Passed != ok {
				t.Errorf("%s: check %q passed %v (%s), want %v", id, name, ch.Passed, ch.Detail, ok)
			}
		}
	}

	// Forged markers in the output of one check are that check's output, nothing more.
	passed("forge/none/1", map[string]bool{"prints its output": true, "always fails": false})

	// A deleted folder, a file turned into a folder: typed and run: checks agree.
	passed("rmdir/none/1", map[string]bool{"file src/retry.go exists: false": true, "file README.md unchanged": true, "no src": true})
	passed("file2dir/none/1", map[string]bool{"file notes.txt exists: false": true, `file notes.txt/inner/x.txt contains "x"`: true, "a folder now": true})

	// Names that are not UTF-8, hold a newline, or sit 150 folders deep are graded.
	passed("names/none/1", map[string]bool{"workspace unchanged": false, "odd names are there": true, "the deep file is there": true})
	if d := checks("names/none/1")["workspace unchanged"].Detail; !strings.Contains(d, `"bad\xffname" added`) || !strings.Contains(d, `"new\nline" added`) {
		t.Errorf("writes detail %q does not name the odd files exactly", d)
	}

	// Links: followed inside the workspace by both kinds of check; one leaving it is no file.
	passed("links/none/1", map[string]bool{`file alias.md contains "# fixture"`: true, `file code.go contains "func Retry"`: true, "file notes.txt exists: false": true, "links resolve": true})

	// Writes to the skills folder are changes like any other; a skill itself cannot be
	// changed, added to or moved: every attempt fails in the cell, and nothing changed.
	if d := checks("skills/none/1")["writes only [out.txt]"]; d.Passed || !strings.Contains(d.Detail, ".agents/skills/x/payload.sh added") {
		t.Errorf("none arm's skill folder write: %+v", d)
	}
	passed("skills/forced/1", map[string]bool{"file .agents/skills/hostile/SKILL.md unchanged": true, "file .agents/skills/hostile/payload.sh exists: false": true,
		"the skill is where it was": true, "writes only [out.txt]": true})
	passed("skills/none/1", map[string]bool{"file .agents/skills/hostile/SKILL.md unchanged": true, "file .agents/skills/hostile/payload.sh exists: false": true})

	// A file past limits.collect.fileBytes is recorded, cut, and checks that need its
	// content fail saying so; the rest is collected.
	passed("big/none/1", map[string]bool{"file big.bin exists: true": true, `file big.bin notContains "secret"`: false, `file small.txt contains "small"`: true})
	if d := checks("big/none/1")[`file big.bin notContains "secret"`].Detail; !strings.Contains(d, "not collected") || !strings.Contains(d, "limits.collect.fileBytes") {
		t.Errorf("cut file detail %q", d)
	}
	ro := stored(t, out)["big/none/1"]
	cut := false
	for _, ch := range ro.Changes {
		if ch.Path == "big.bin" && ch.Cut != "" && ch.Size == 3<<20 && ch.Digest == "" {
			cut = true
		}
	}
	if !cut {
		t.Errorf("big.bin not recorded as cut: %+v", ro.Changes)
	}

	// $OUTPUT is the agent's answer byte for byte, and a prompt of 200 KiB reaches the
	// agent through its file.
	passed("answer/none/1", map[string]bool{"the answer's own bytes": true})
	for _, arm := range []string{"none", "forced"} {
		if r := by["prompt/"+arm+"/1"]; !r.Passed {
			t.Errorf("prompt/%s/1: %+v", arm, r.Checks)
		}
	}
}

// TestKillDuringGradingLeavesNothing kills skillgate with SIGKILL at random points while it
// grades (ten times, the grades removed each time so that grading starts over): no check
// container outlives the run that follows, and that run grades every cell and writes the
// verdict.
func TestKillDuringGradingLeavesNothing(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "checks")
	bin := buildCLI(t)
	s.useCLIPlan(t, bin)
	out := t.TempDir()
	if sum := s.run(t, out, Options{}); !sum.Complete() {
		t.Fatalf("rollouts: %+v", sum)
	}
	grades := filepath.Join(out, filepath.FromSlash(store.DirGrades))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := 0; i < 10; i++ {
		os.RemoveAll(grades)
		var stderr bytes.Buffer
		cmd, done := startCLI(t, bin, &stderr, "run", s.Dir, "--out", out, "--jobs", "3")
		delay := time.Duration(300+rng.IntN(2200)) * time.Millisecond
		select {
		case <-done:
			t.Logf("kill %d: skillgate ended before %s", i, delay)
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
		t.Logf("kill %d after %s: %d containers of the run folder alive", i, delay, len(runContainers(t, out)))
	}
	time.Sleep(time.Second) // a container the last dead process asked for may still be coming
	// Exit 1 is the policy's FAIL (both arms pass alike): a verdict all the same.
	if code, stderr := cli(t, bin, "run", s.Dir, "--out", out); code > 1 {
		t.Fatalf("final run: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "verdict.json")); err != nil {
		t.Errorf("no verdict: %v", err)
	}
	if left := runContainers(t, out); len(left) > 0 {
		t.Errorf("containers left: %q", left)
	}
	results, err := store.Results(s.Plan, &store.Store{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Passed || len(r.Checks) != 3 {
			t.Errorf("%s: passed %v, checks %+v", r.Cell, r.Passed, r.Checks)
		}
	}
}

// TestRerunRed: under gstack's rerunRed a red panel (case t regresses in after) runs again
// on the same inputs, in cells of its own; both outcomes are stored and reported, the
// rerun fails too and the failure stands; a second run reruns nothing.
func TestRerunRed(t *testing.T) {
	e := dockertest.Engine(t)
	s := copySuite(t, e, "rerun")
	out := t.TempDir()
	_, rep := evaluate(t, s.Plan, s.Dir, out)
	if rep.Verdict.Verdict != verdict.VerdictFail || !slices.Contains(rep.Verdict.Reasons, "REGRESSION t") {
		t.Fatalf("verdict %s %v", rep.Verdict.Verdict, rep.Verdict.Reasons)
	}
	if d := rule(t, rep, "regression").Detail; !strings.Contains(d, "after 0/3, and 1 same-tree rerun(s) failed too") {
		t.Errorf("regression detail %q", d)
	}
	if len(rep.Reruns) != 1 || rep.Reruns[0].Panel != (plan.Panel{Case: "t", Arm: "after"}) || len(rep.Reruns[0].Trials) != 3 || rep.Reruns[0].Flaky {
		t.Fatalf("reruns %+v", rep.Reruns)
	}
	st := &store.Store{Dir: out}
	for _, c := range plan.PanelCells(s.Plan, plan.Panel{Case: "t", Arm: "after"}, 1) {
		ro, ok, err := st.Rollout(c.Rollout)
		if err != nil || !ok || ro.Status != store.StatusCompleted || ro.Cell != c.ID {
			t.Errorf("rerun %s: %+v %v %v", c.ID, ro, ok, err)
		}
	}
	if n := len(stored(t, out)); n != len(s.Plan.Cells)+3 {
		t.Errorf("%d rollouts stored, want the plan's %d and 3 reruns", n, len(s.Plan.Cells))
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || !bytes.Contains(b, []byte(`"reruns": [`)) {
		t.Errorf("report.json lists no rerun: %v", err)
	}
	sum, rep2 := evaluate(t, s.Plan, s.Dir, out)
	if sum.Ran != 0 || len(rep2.Reruns) != 1 || len(stored(t, out)) != len(s.Plan.Cells)+3 {
		t.Errorf("second run: %+v, %d reruns, %d stored", sum, len(rep2.Reruns), len(stored(t, out)))
	}
}
