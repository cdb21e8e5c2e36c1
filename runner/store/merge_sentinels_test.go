package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/verdict"
)

// sentinelGroup is a kept group of model over cells, each sentinel passed
// as its stored cell did.
func sentinelGroup(p *plan.Plan, model string, cells ...plan.Cell) verdict.SentinelGroup {
	g := verdict.SentinelGroup{Agent: p.Agent.Kind, Model: model, Reused: 2 * len(cells), Planned: 6, Cells: []verdict.SentinelPair{},
		Method: "exact McNemar mid-p on discordant cases", P: 1, Alpha: 0.05, SmallestP: 0.5, Decision: verdict.SentinelsKept, Reason: "not checked by outcome"}
	yes := true
	for _, c := range cells {
		g.Cells = append(g.Cells, verdict.SentinelPair{Cell: c.ID, Sentinel: plan.SentinelCell(c).ID, Stored: &yes, Fresh: &yes})
		g.Paired++
		g.StoredPassed++
		g.FreshPassed++
	}
	return g
}

func writeSentinels(t *testing.T, dir string, groups ...verdict.SentinelGroup) {
	t.Helper()
	b, _ := json.MarshalIndent(verdict.ReuseSentinels{Groups: groups}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, FileReuseSentinels), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readSentinels(t *testing.T, dir string) *verdict.ReuseSentinels {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileReuseSentinels))
	if err != nil {
		t.Fatalf("merged folder: %v", err)
	}
	var r verdict.ReuseSentinels
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestMergeReuseSentinels: merge carries reuse-sentinels.json, one group
// per agent and model: a group one folder holds as it is; a group two
// folders ran, the one whose sentinels started first, with its sentinels'
// rollouts (even one another folder ran earlier), the other set aside and
// named in merge.json; the merged folder's lines are the folders' own.
func TestMergeReuseSentinels(t *testing.T) {
	p := mergePlan(t)
	base := t.TempDir()
	at := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	c0, c1, c2 := p.Cells[0], p.Cells[1], p.Cells[2]
	s0, s2 := plan.SentinelCell(c0), plan.SentinelCell(c2)
	// a and b are two shares that took their cells and ran their
	// sentinels, a first; b also ran model m2's. c holds a's sentinel of c0
	// run earlier, and no sentinel record.
	a, b, c := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	fakeRun(t, p, a, []plan.Cell{c0, c1, s0}, "a", at)
	ga := sentinelGroup(p, "m", c0)
	writeSentinels(t, a, ga)
	fakeRun(t, p, b, []plan.Cell{c2, s2}, "b", at.Add(time.Hour))
	gb, gb2 := sentinelGroup(p, "m", c2), sentinelGroup(p, "m2", c2)
	gb2.Decision, gb2.Reason, gb2.Again = verdict.SentinelsRefused, "the provider answered m2 as m3 in the sentinels", 2
	writeSentinels(t, b, gb, gb2)
	fakeRun(t, p, c, []plan.Cell{s0}, "c", at.Add(-time.Hour))

	out := filepath.Join(base, "m")
	rec := mustMerge(t, out, a, b, c)
	got := readSentinels(t, out)
	want := &verdict.ReuseSentinels{Groups: []verdict.SentinelGroup{ga, gb2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged reuse-sentinels.json %+v, want a's group of m and b's of m2", got)
	}
	if lines := got.Lines(); len(lines) != 2 || lines[0] != ga.Line() || lines[1] != gb2.Line() || !strings.Contains(lines[1], "reuse refused, 2 reused cells run again") {
		t.Errorf("merged lines %q", lines)
	}
	if rec.Records[KindReuseSentinels] != 2 {
		t.Errorf("records %v, want 2 sentinel groups", rec.Records)
	}
	var seen []string
	for _, d := range rec.Duplicates {
		switch {
		case d.Kind == KindReuseSentinels:
			seen = append(seen, d.Kind+" "+d.Key+": "+d.Rule)
			if len(d.SetAside) != 1 || d.SetAside[0].Inputs[0] != 1 {
				t.Errorf("set aside %+v, want b's", d.SetAside)
			} else if aside := readSentinels(t, filepath.Join(out, filepath.Dir(filepath.Dir(d.SetAside[0].Path)), filepath.Base(filepath.Dir(d.SetAside[0].Path)))); !reflect.DeepEqual(aside.Groups, []verdict.SentinelGroup{gb}) {
				t.Errorf("set-aside group %+v", aside)
			}
		case d.Key == s0.Rollout.Encoded():
			seen = append(seen, d.Kind+" "+d.Rule)
		}
	}
	if w := []string{"rollout " + RuleSentinels, "reuse-sentinels agent " + p.Agent.Kind + ", model m: " + ruleSentinelsFirst}; !reflect.DeepEqual(seen, w) {
		t.Errorf("duplicates %q, want %q", seen, w)
	}
	ro, ok, err := (&Store{Dir: out}).Rollout(s0.Rollout)
	if err != nil || !ok || !strings.Contains(ro.Answer, "(a)") {
		t.Errorf("merged sentinel rollout %+v, %v, %v: want a's, which its group graded", ro, ok, err)
	}
}

// TestMergeReuseSentinelsRefused: a group that does not match the plan or
// its folder, or listed twice, stops the merge, naming the folder and the group, before the
// merged folder exists.
func TestMergeReuseSentinelsRefused(t *testing.T) {
	p := mergePlan(t)
	base := t.TempDir()
	at := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	c0, c1 := p.Cells[0], p.Cells[1]
	for _, tc := range []struct {
		name string
		edit func(g *verdict.SentinelGroup)
		want string
	}{
		{"agent", func(g *verdict.SentinelGroup) { g.Agent = "other" }, `agent "other" is not the plan's`},
		{"cell", func(g *verdict.SentinelGroup) { g.Cells[0].Cell = "nope/none/1" }, "cell nope/none/1 is no cell of the plan"},
		{"sentinel", func(g *verdict.SentinelGroup) { g.Cells[0].Sentinel = c1.ID + "/sentinel" }, "sentinel " + c1.ID + "/sentinel is not cell " + c0.ID + "'s"},
		{"not held", func(g *verdict.SentinelGroup) { g.Cells = append(g.Cells, sentinelGroup(p, "m", c1).Cells...) },
			"sentinel " + c1.ID + "/sentinel is graded, and the folder holds no rollout of it"},
		{"counts", func(g *verdict.SentinelGroup) { g.FreshPassed = 0 }, "it counts 1 paired, 1 and 0 passed; its sentinels give 1, 1 and 1"},
		{"decision", func(g *verdict.SentinelGroup) { g.Decision = "maybe" }, `decision "maybe"`},
	} {
		d := filepath.Join(base, tc.name)
		fakeRun(t, p, d, []plan.Cell{c0, plan.SentinelCell(c0)}, "x", at)
		g := sentinelGroup(p, "m", c0)
		tc.edit(&g)
		writeSentinels(t, d, g)
		out := filepath.Join(base, tc.name+"-merged")
		_, err := Merge(out, []string{d})
		if err == nil || !strings.Contains(err.Error(), "verify "+d+": reuse-sentinels.json group 1 (") || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), ": altered or damaged") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a refused merge wrote its folder", tc.name)
		}
	}
	d := filepath.Join(base, "twice")
	fakeRun(t, p, d, []plan.Cell{c0, plan.SentinelCell(c0)}, "x", at)
	writeSentinels(t, d, sentinelGroup(p, "m", c0), sentinelGroup(p, "m", c0))
	if _, err := Merge(filepath.Join(base, "twice-merged"), []string{d}); err == nil || !strings.Contains(err.Error(), "reuse-sentinels.json group 2 (agent "+p.Agent.Kind+", model m): listed twice: altered or damaged") {
		t.Errorf("a group listed twice: %v", err)
	}
}
