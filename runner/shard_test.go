package runner

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skillgate/skillgate/runner/store"

	"github.com/skillgate/skillgate/pipeline/grade"
	"github.com/skillgate/skillgate/pipeline/plan"
	"github.com/skillgate/skillgate/pipeline/suite"
	"github.com/skillgate/skillgate/pipeline/verdict"

	"github.com/opencontainers/go-digest"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"1/1": {1, 1}, "2/3": {2, 3}, " 3/3 ": {3, 3}, "7/100": {7, 100}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"0/3":   "I counts the shards from 1 to 3",
		"4/3":   "I counts the shards from 1 to 3",
		"-1/3":  "I counts the shards from 1 to 3",
		"1/0":   "N is the number of shards, at least 1",
		"1/-2":  "N is the number of shards, at least 1",
		"3":     "want I/N",
		"":      "want I/N",
		"a/b":   "want I/N",
		"1/3/4": "want I/N",
		"1.5/3": "want I/N",
	} {
		if _, err := ParseShard(in); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "parse --shard ") {
			t.Errorf("ParseShard(%q): %v, want %q", in, err, want)
		}
	}
	if !(Shard{}).Whole() || !(Shard{1, 1}).Whole() || (Shard{1, 2}).Whole() {
		t.Error("Whole: the zero shard and 1/1 are the whole plan, 1/2 is not")
	}
}

// shardTestPlan is a plan of cases × arms × trials whose keys are digests
// of the cells' IDs, two of its cells sharing one rollout key.
func shardTestPlan(cases, arms, trials int) *plan.Plan {
	p := &plan.Plan{}
	p.Suite.Trials = trials
	for c := range cases {
		for a := range arms {
			for tr := 1; tr <= trials; tr++ {
				id := plan.CellID("case"+string(rune('a'+c)), "arm"+string(rune('a'+a)), tr)
				p.Cells = append(p.Cells, plan.Cell{ID: id, Case: "case" + string(rune('a'+c)), Arm: "arm" + string(rune('a'+a)), Trial: tr,
					Rollout: digest.FromString("rollout " + id), Grade: digest.FromString("grade " + id)})
			}
		}
	}
	// Two cases asking the same of the agent share their rollouts.
	p.Cells[len(p.Cells)-1].Rollout = p.Cells[0].Rollout
	return p
}

// TestShardsOf: every cell in exactly one shard, the shares balanced to a
// unit, the same shares whatever the order of the plan's cells, cells of
// one rollout key together, and, when the policy reruns red panels or the
// judge pairs arms, cells of a case (or a case's trial) together.
func TestShardsOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*plan.Plan)
		// together says which cells must share a shard.
		together func(a, b plan.Cell) bool
	}{
		{"by rollout key", func(*plan.Plan) {}, func(a, b plan.Cell) bool { return false }},
		{"rerunRed", func(p *plan.Plan) { p.Policy = suite.Policy{RerunRed: 1} }, func(a, b plan.Cell) bool { return a.Case == b.Case }},
		{"pairwise", func(p *plan.Plan) { p.Judge = &plan.PlanJudge{Judge: suite.Judge{Mode: "pairwise"}} },
			func(a, b plan.Cell) bool { return a.Case == b.Case && a.Trial == b.Trial }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := shardTestPlan(10, 3, 3)
			tc.setup(p)
			for _, n := range []int{1, 2, 3, 7, 89, 90, 200} {
				of := ShardsOf(p, n)
				if len(of) != len(p.Cells) {
					t.Fatalf("n=%d: %d cells placed, want %d", n, len(of), len(p.Cells))
				}
				keys := make([]map[digest.Digest]bool, n+1)
				for i := range keys {
					keys[i] = map[digest.Digest]bool{}
				}
				for _, c := range p.Cells {
					s := of[c.ID]
					if s < 1 || s > n {
						t.Fatalf("n=%d: cell %s in shard %d", n, c.ID, s)
					}
					keys[s][c.Rollout] = true
				}
				for _, a := range p.Cells {
					for _, b := range p.Cells {
						if (a.Rollout == b.Rollout || tc.together(a, b)) && of[a.ID] != of[b.ID] {
							t.Fatalf("n=%d: %s in shard %d, %s in shard %d: they must run together", n, a.ID, of[a.ID], b.ID, of[b.ID])
						}
					}
				}
				// Balanced: shares differ by at most the largest unit: with
				// rerunRed, casea and casej joined by their shared rollout
				// (17 keys); pairwise, their trials 1 and 3 (5 keys).
				unit := map[string]int{"by rollout key": 1, "rerunRed": 17, "pairwise": 5}[tc.name]
				lo, hi := len(p.Cells), 0
				for s := 1; s <= n; s++ {
					lo, hi = min(lo, len(keys[s])), max(hi, len(keys[s]))
				}
				if hi-lo > unit {
					t.Errorf("n=%d: shares of %d to %d rollout keys, more than a unit (%d) apart", n, lo, hi, unit)
				}
				// Any order of the plan's cells gives the same shares.
				q := *p
				q.Cells = slices.Clone(p.Cells)
				rand.New(rand.NewPCG(uint64(n), 7)).Shuffle(len(q.Cells), func(i, j int) { q.Cells[i], q.Cells[j] = q.Cells[j], q.Cells[i] })
				again := ShardsOf(&q, n)
				for id, s := range of {
					if again[id] != s {
						t.Fatalf("n=%d: cell %s in shard %d, in shard %d once the cells are shuffled", n, id, s, again[id])
					}
				}
			}
			// With the rollout key as the unit, a case's cells spread.
			if tc.name == "by rollout key" {
				of := ShardsOf(p, 3)
				spread := false
				for _, c := range p.Cells {
					if c.Case == "casea" && of[c.ID] != of[p.Cells[1].ID] {
						spread = true
					}
				}
				if !spread {
					t.Error("every cell of casea in one shard: the unit is the rollout key, not the case")
				}
			}
		})
	}
	// More shards than units: the shards past them hold nothing.
	p := shardTestPlan(2, 1, 1)
	p.Cells[1].Rollout = digest.FromString("rollout " + p.Cells[1].ID)
	p.Policy.RerunRed = 1
	of := ShardsOf(p, 5)
	held := map[int]int{}
	for _, s := range of {
		held[s]++
	}
	if len(held) != 2 || held[1] == 0 || held[2] == 0 {
		t.Errorf("2 cases in 5 shards: %v, want shards 1 and 2 to hold one case each", held)
	}
}

// TestSelectShard: a shard's cells are those of the filters in its share,
// and the shares of one filter make its cells.
func TestSelectShard(t *testing.T) {
	p := shardTestPlan(4, 2, 3)
	p.Cases = []plan.PlanCase{}
	for _, id := range []string{"casea", "caseb", "casec", "cased"} {
		p.Cases = append(p.Cases, plan.PlanCase{Case: suite.Case{ID: id, Split: "train"}})
	}
	p.Arms = []plan.PlanArm{{Name: "arma"}, {Name: "armb"}}
	all, err := Select(p, nil, []string{"armb"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var union []string
	for i := 1; i <= 3; i++ {
		cells, err := selectCells(p, Options{Arms: []string{"armb"}, Shard: Shard{i, 3}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			if c.Arm != "armb" || ShardsOf(p, 3)[c.ID] != i {
				t.Errorf("shard %d/3 of arm armb selects %s", i, c.ID)
			}
			union = append(union, c.ID)
		}
		if sp := shardPlan(p, Shard{i, 3}); sp.Digest != p.Digest || len(sp.Cells) == 0 {
			t.Errorf("shard plan %d/3: digest %s, %d cells", i, sp.Digest, len(sp.Cells))
		}
	}
	slices.Sort(union)
	var want []string
	for _, c := range all {
		want = append(want, c.ID)
	}
	slices.Sort(want)
	if !slices.Equal(union, want) {
		t.Errorf("the three shards select %v, the filter %v", union, want)
	}
}

// TestShardRecordAndReport: a sharded run records its shard, a second
// shard into the folder joins it, an unsharded run removes it; a folder
// with a record reports INCOMPLETE with the shard as its first reason even
// when every cell passed, and a failed calibration keeps its verdict.
func TestShardRecordAndReport(t *testing.T) {
	p, err := plan.CompileDir("../suites/demo")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := writePlan(out, p); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenStore(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Cells {
		r := grade.CellResult{Cell: c.ID, Case: c.Case, Arm: c.Arm, Trial: c.Trial, Rollout: c.Rollout, Grade: c.Grade, Status: store.StatusCompleted,
			Passed: true, Score: 1, Checks: []grade.CheckResult{}, Judge: &grade.CellJudgement{}}
		if err := st.PutGrade(r); err != nil {
			t.Fatal(err)
		}
	}
	whole, err := Report(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(strings.Join(whole.Verdict.Reasons, " "), "SHARD") {
		t.Fatalf("an unsharded folder's reasons: %v", whole.Verdict.Reasons)
	}

	for _, s := range []Shard{{2, 3}, {3, 3}, {3, 3}} {
		if err := recordShard(out, p, s); err != nil {
			t.Fatal(err)
		}
	}
	rec, ok, err := store.ReadShard(out, p)
	if err != nil || !ok || rec.Count != 3 || !slices.Equal(rec.Shards, []int{2, 3}) {
		t.Fatalf("shard record after shards 2, 3, 3 of 3: %+v %v %v", rec, ok, err)
	}
	r, err := Report(out)
	if err != nil {
		t.Fatal(err)
	}
	of := ShardsOf(p, 3)
	held := 0
	for _, c := range p.Cells {
		if of[c.ID] != 1 {
			held++
		}
	}
	wantReason := "SHARDS 2, 3 of 3: " + strconv.Itoa(held) + " of the plan's 90 cells; merge the 3 shards' run folders for the verdict"
	if r.Verdict.Verdict != verdict.VerdictIncomplete || r.Verdict.ExitCode != 2 || r.Verdict.Resumable || r.Verdict.Reasons[0] != wantReason {
		t.Errorf("shard report: %s (exit %d, resumable %v), reasons %q; want INCOMPLETE, first %q", r.Verdict.Verdict, r.Verdict.ExitCode, r.Verdict.Resumable, r.Verdict.Reasons, wantReason)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "- `"+wantReason+"`: This run folder holds shares of the plan's cells") {
		t.Errorf("report.md does not say the shard:\n%s", md)
	}
	// A count of another N starts the record again.
	if err := recordShard(out, p, Shard{1, 2}); err != nil {
		t.Fatal(err)
	}
	if rec, _, _ := store.ReadShard(out, p); rec.Count != 2 || !slices.Equal(rec.Shards, []int{1}) {
		t.Errorf("record after 1/2: %+v", rec)
	}

	// A failed calibration stops every shard alike: its verdict stands.
	if err := store.WriteCalibration(out, p, &verdict.Calibration{Shell: new(bool), Checks: []verdict.CalibrationCheck{{Arm: "none", Check: verdict.CalibrationShell}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := Report(out); err != nil || r.Verdict.Verdict != verdict.VerdictCalibration || !strings.HasPrefix(r.Verdict.Reasons[0], "SHARD 1 of 2") {
		t.Errorf("shard with a failed calibration: %v %v (%v)", r.Verdict.Verdict, r.Verdict.Reasons, err)
	}
	os.Remove(filepath.Join(out, store.FileCalibration))

	// An unsharded run into the folder makes it the plan's again.
	if err := recordShard(out, p, Shard{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := store.ReadShard(out, p); ok {
		t.Error("an unsharded run left the shard record")
	}
	if r, _ := Report(out); r.Verdict.Verdict != whole.Verdict.Verdict {
		t.Errorf("verdict once unsharded: %s, want %s", r.Verdict.Verdict, whole.Verdict.Verdict)
	}
}
